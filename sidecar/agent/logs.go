package agent

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Logs is a pilot's or shadow element's log: stderr (Slurm's output file)
// and a file in the logs directory of the job it serves now,
// <mode>-<SLURM_JOB_ID>.log. After a move the file follows the pilot to
// the next job's work directory, where its owner looks for that job's
// logs, and each part names the other. Log is the one logger for all of
// it: whoever holds it (the agent, a failpoint) writes to the file of the
// job served at the time of the write.
type Logs struct {
	Log         *slog.Logger
	stderr      io.Writer
	mode, pilot string

	mu   sync.Mutex
	file *os.File // nil: stderr only
}

// NewLogs logs to stderr until Follow opens a file.
func NewLogs(stderr io.Writer, mode, pilot string) *Logs {
	if pilot == "" {
		pilot = fmt.Sprintf("pid%d", os.Getpid())
	}
	l := &Logs{stderr: stderr, mode: mode, pilot: pilot}
	l.Log = slog.New(slog.NewTextHandler(l, nil))
	return l
}

// Write writes p to stderr and to the file of the job served now.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.stderr.Write(p)
	if l.file != nil {
		if _, ferr := l.file.Write(p); err == nil {
			err = ferr
		}
	}
	return n, err
}

// Follow moves the log to w's logs directory (job is the job w is of, for
// the note left in the file before). When the file cannot be opened the
// log goes to stderr alone, and the error says why.
func (l *Logs) Follow(w *spool.Work, job string) error {
	f, err := l.open(w)
	l.mu.Lock()
	prev := l.file
	l.mu.Unlock()
	if prev != nil {
		if err == nil {
			l.Log.Info("this log continues in the next job's work directory", "job", job, "log", f.Name())
		} else {
			l.Log.Warn("moved to the next job, whose log file cannot be opened: logging to stderr alone", "job", job, "err", err)
		}
	}
	l.mu.Lock()
	l.file = f // nil if it could not be opened
	l.mu.Unlock()
	if prev != nil {
		if f != nil {
			l.Log.Info("continued from the log of this pilot's previous job", "log", prev.Name())
		}
		prev.Close()
	}
	return err
}

func (l *Logs) open(w *spool.Work) (*os.File, error) {
	if strings.ContainsRune(l.pilot, '/') {
		return nil, errors.New("bad SLURM_JOB_ID: no log file")
	}
	return os.OpenFile(filepath.Join(w.Dir, spool.LogsDir, l.mode+"-"+l.pilot+".log"),
		os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o640)
}

// Close closes the file; the log goes on to stderr alone.
func (l *Logs) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}
