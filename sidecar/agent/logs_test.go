package agent

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// After a move the pilot's log is in the next job's work directory, and
// each part names the other; stderr gets everything.
func TestLogsFollowTheJob(t *testing.T) {
	work := func(name string) *spool.Work {
		w := &spool.Work{Dir: filepath.Join(t.TempDir(), name)}
		if err := os.MkdirAll(filepath.Join(w.Dir, spool.LogsDir), 0o755); err != nil {
			t.Fatal(err)
		}
		return w
	}
	a, b := work("a"), work("b")
	var stderr lockedBuffer
	l := NewLogs(&stderr, "pilot", "77")
	if err := l.Follow(a, "1000.a"); err != nil {
		t.Fatal(err)
	}
	held := l.Log // as a failpoint holds it from the start
	held.Info("task of a")
	if err := l.Follow(b, "1000.b"); err != nil {
		t.Fatal(err)
	}
	held.Info("task of b")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(w *spool.Work) string {
		data, err := os.ReadFile(filepath.Join(w.Dir, spool.LogsDir, "pilot-77.log"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	inA, inB := read(a), read(b)
	for _, c := range []struct {
		log, name, want string
		in              bool
	}{
		{inA, "a's log", "task of a", true},
		{inA, "a's log", "task of b", false},
		{inA, "a's log", "log=" + filepath.Join(b.Dir, spool.LogsDir, "pilot-77.log"), true},
		{inB, "b's log", "task of b", true},
		{inB, "b's log", "task of a", false},
		{inB, "b's log", "log=" + filepath.Join(a.Dir, spool.LogsDir, "pilot-77.log"), true},
		{stderr.String(), "stderr", "task of a", true},
		{stderr.String(), "stderr", "task of b", true},
	} {
		if strings.Contains(c.log, c.want) != c.in {
			t.Errorf("%s has %q: %v, want %v\n%s", c.name, c.want, !c.in, c.in, c.log)
		}
	}

	// A log file that cannot be opened (a slash in SLURM_JOB_ID) leaves
	// stderr, with the error.
	bad := NewLogs(&stderr, "pilot", "../x")
	if err := bad.Follow(a, "1000.a"); err == nil || !strings.Contains(err.Error(), "SLURM_JOB_ID") {
		t.Errorf("a pilot id with a slash: %v, want an error naming SLURM_JOB_ID", err)
	}
	bad.Log.Info("still logged")
	if !strings.Contains(stderr.String(), "still logged") {
		t.Error("without a log file nothing reached stderr")
	}
}

// lockedBuffer is a log's destination that tasks' goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
