package umask

import (
	"sync"
	"syscall"
	"testing"
)

// Concurrent Holds never see each other's mask, and the process's
// umask is the original afterwards. Without the lock, interleaved restores
// leave another call's mask in place (checked by removing it: fails).
func TestWithSerializes(t *testing.T) {
	orig := syscall.Umask(0o022)
	defer syscall.Umask(orig)
	var wg sync.WaitGroup
	errs := make(chan int, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(mask int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				restore := Hold(mask)
				if got := syscall.Umask(mask); got != mask {
					select {
					case errs <- got:
					default:
					}
				}
				restore()
			}
		}(0o700 + g)
	}
	wg.Wait()
	close(errs)
	for got := range errs {
		t.Errorf("inside Hold another call's mask %#o", got)
	}
	if got := syscall.Umask(0o022); got != 0o022 {
		t.Errorf("umask after %#o, want 0o022", got)
	}
}

func TestCurrent(t *testing.T) {
	orig := syscall.Umask(0o027)
	defer syscall.Umask(orig)
	if got := Current(); got != 0o027 {
		t.Errorf("Current %#o, want 0o027", got)
	}
	if got := syscall.Umask(0o027); got != 0o027 {
		t.Errorf("umask after Current %#o, want 0o027", got)
	}
}
