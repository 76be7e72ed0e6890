package agent

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Logs is a pilot's or shadow element's log: stderr (Slurm's output file)
// and a file in the logs directory of the job it serves now,
// <mode>-<SLURM_JOB_ID>.log. After a move the file follows the pilot to
// the next job's work directory, where its owner looks for that job's
// logs, and each part names the other.
type Logs struct {
	stderr      io.Writer
	mode, pilot string
	file        *os.File // nil: stderr only
	Log         *slog.Logger
}

// NewLogs logs to stderr until Follow opens a file.
func NewLogs(stderr io.Writer, mode, pilot string) *Logs {
	if pilot == "" {
		pilot = fmt.Sprintf("pid%d", os.Getpid())
	}
	return &Logs{stderr: stderr, mode: mode, pilot: pilot, Log: slog.New(slog.NewTextHandler(stderr, nil))}
}

// Follow moves the log to w's logs directory (job is the job w is of, for
// the note left in the file before). When the file cannot be opened the
// log goes to stderr alone, and the error says why.
func (l *Logs) Follow(w *spool.Work, job string) error {
	prev, prevLog := l.file, l.Log
	var err error
	l.file, err = l.open(w)
	if err != nil {
		l.Log = slog.New(slog.NewTextHandler(l.stderr, nil))
	} else {
		l.Log = slog.New(slog.NewTextHandler(io.MultiWriter(l.stderr, l.file), nil))
	}
	if prev != nil {
		if l.file != nil {
			prevLog.Info("this log continues in the next job's work directory", "job", job, "log", l.file.Name())
			l.Log.Info("continued from the log of this pilot's previous job", "log", prev.Name())
		} else {
			prevLog.Warn("moved to the next job, whose log file cannot be opened: logging to stderr alone", "job", job, "err", err)
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

// Close closes the file.
func (l *Logs) Close() error {
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}
