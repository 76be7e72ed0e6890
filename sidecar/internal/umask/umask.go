// Package umask changes the process's umask for the length of a call, one
// call at a time. The umask is the process's, not a goroutine's: two
// changes that interleave (set A, set B, restore A's old, restore B's old)
// leave the process with a mask nobody meant to keep, so every temporary
// change in glean goes through Hold.
package umask

import (
	"sync"
	"syscall"
)

var mu sync.Mutex

// Hold sets the process's umask to mask and keeps every other change
// through this package waiting until restore, which puts the old mask
// back. Files other goroutines create meanwhile get mask too: hold it
// briefly, and set explicitly the modes that matter.
func Hold(mask int) (restore func()) {
	mu.Lock()
	old := syscall.Umask(mask)
	return func() {
		syscall.Umask(old)
		mu.Unlock()
	}
}

// Current returns the process's umask (reading it means setting it: the
// old value is put back at once, under the same lock).
func Current() int {
	mu.Lock()
	defer mu.Unlock()
	m := syscall.Umask(0o022)
	syscall.Umask(m)
	return m
}
