package workload

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/. Run one fuzzer with e.g.
// go test -run '^$' -fuzz '^FuzzReadSWF$' -fuzztime 30s ./sidecar/workload/

// checkRead holds every reader to the same contract: a lenient read either
// fails outright (nil workload) or returns valid jobs and, for bad lines,
// an *Errors; a strict read fails exactly when the lenient one skipped lines.
func checkRead(t *testing.T, read func(io.Reader, bool) (*Workload, error), data []byte) {
	w, err := read(bytes.NewReader(data), false)
	var es *Errors
	skipped := errors.As(err, &es)
	if err != nil && !skipped {
		if w != nil {
			t.Fatalf("failed read returned a workload: %v", err)
		}
		return
	}
	if w == nil {
		t.Fatalf("no workload and no error")
	}
	for _, j := range w.Jobs {
		if j.Nodes < 1 || j.Nodes > w.Nodes || j.Run < 0 || j.Submit < 0 || j.Submit > MaxSpan ||
			j.Run > MaxSpan || j.Limit < 0 || j.Line < 1 {
			t.Fatalf("invalid job %+v on a %d-node machine", j, w.Nodes)
		}
	}
	if skipped {
		if es.Total < len(es.Lines) || len(es.Lines) == 0 || len(es.Lines) > MaxErrors {
			t.Fatalf("bad *Errors: %d lines, total %d", len(es.Lines), es.Total)
		}
		for _, le := range es.Lines {
			if le.Line < 1 || le.File != "fuzz" || le.Err == nil {
				t.Fatalf("bad LineError %+v", le)
			}
		}
	}
	sw, serr := read(bytes.NewReader(data), true)
	switch {
	case skipped && (serr == nil || sw != nil):
		t.Fatalf("strict read accepted what the lenient one skipped (%v)", err)
	case !skipped && (serr != nil || len(sw.Jobs) != len(w.Jobs)):
		t.Fatalf("strict read differs: %v", serr)
	}
}

func FuzzReadSWF(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, ppn uint8) {
		checkRead(t, func(r io.Reader, strict bool) (*Workload, error) {
			return ReadSWF(r, "fuzz", SWFOptions{Options: Options{Strict: strict}, ProcsPerNode: int(ppn)})
		}, data)
	})
}

func FuzzReadThesis(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, func(r io.Reader, strict bool) (*Workload, error) {
			return ReadThesis(r, "fuzz", Options{Strict: strict})
		}, data)
	})
}

func FuzzReadSacct(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, func(r io.Reader, strict bool) (*Workload, error) {
			return ReadSacct(r, "fuzz", SacctOptions{Options: Options{Strict: strict}})
		}, data)
	})
}

func FuzzParseSlurmDuration(f *testing.F) {
	for _, s := range []string{"1:57:57", "3:20:2", "UNLIMITED", "2-12:30", "90", "1:2:3:4", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseSlurmDuration(s)
		if err == nil && (d < 0 || d > MaxSpan && d != Unlimited) {
			t.Fatalf("%q: %v", s, d)
		}
	})
}
