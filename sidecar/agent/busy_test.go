package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A script still open for writing somewhere (Go's fork/exec race: another
// goroutine's child holds the descriptor until its own exec) fails exec
// with ETXTBSY; the launch tries again with a fresh command (an exec.Cmd
// starts once, even after a failed Start) and the task starts.
func TestLaunchRetriesABusyScript(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\nexit 0\n", nil, nil)
	a := f.agent("9", 1, nil)
	a.script = filepath.Join(t.TempDir(), "script")
	w, err := os.OpenFile(a.script, os.O_CREATE|os.O_WRONLY, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("#!/bin/sh\nexit 0\n"); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(30*time.Millisecond, func() { w.Close() })
	p, err := a.launch(0, 1, "a1", time.Now())
	if err != nil {
		t.Fatalf("launch with the script busy for 30 ms: %v", err)
	}
	select {
	case e := <-a.done:
		if e.p != p || e.state == nil || e.state.ExitCode() != 0 {
			t.Errorf("the task ended %+v, want exit 0", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task did not end")
	}
}
