package spool

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Helpers for the agent (sidecar/agent), running as the job's owner.

// TaskEventsFrom reads the job's task events from byte offset off of its
// journal and returns them with the offset after the last complete line,
// so an agent follows the journal without reading it again from the start.
func (w *Work) TaskEventsFrom(off int64) ([]TaskEvent, int64, error) {
	f, err := os.Open(w.journal)
	if err != nil {
		return nil, off, fmt.Errorf("spool: the job's journal: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, off, err
	}
	var out []TaskEvent
	n, err := scanEvents(f, badLineLogger(w.Log, w.journal), func(ev Event) {
		if ev.Task != nil {
			out = append(out, *ev.Task)
		}
	})
	return out, off + n, err
}

// Leases counts the job's running tasks (all agents'), for the array's
// throttle (%k).
func (w *Work) Leases() (int, error) {
	leased, _, err := w.inFlight()
	return len(leased), err
}

// ParseExport splits sbatch's --export value: ALL (or empty) exports the
// whole environment; NONE (NIL) none of it; otherwise a comma-separated
// list of variable names and NAME=value items, with ALL among them meaning
// everything besides. SLURM_* variables are exported in every case (the
// caller adds them).
func ParseExport(export string) (all bool, items []string) {
	switch strings.ToUpper(export) {
	case "ALL", "":
		return true, nil
	case "NONE", "NIL":
		return false, nil
	}
	for _, item := range strings.Split(export, ",") {
		switch {
		case strings.EqualFold(item, "ALL"):
			all = true
		case strings.EqualFold(item, "NONE") || strings.EqualFold(item, "NIL"), item == "":
		default:
			items = append(items, item)
		}
	}
	return all, items
}
