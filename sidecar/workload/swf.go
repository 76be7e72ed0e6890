package workload

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// ProcsPerNodeFromHeader as SWFOptions.ProcsPerNode takes the processors
// per node from the header: MaxProcs / MaxNodes when both are given and
// MaxProcs is a multiple of MaxNodes, else 1.
const ProcsPerNodeFromHeader = -1

// SWFOptions tune ReadSWF.
type SWFOptions struct {
	Options
	// ProcsPerNode > 1 maps processors to nodes: Job.Nodes is
	// ceil(processors / ProcsPerNode) and the machine is MaxNodes (or
	// MaxProcs / ProcsPerNode). ProcsPerNodeFromHeader derives it from the
	// header. Otherwise Job.Nodes counts processors and the machine is
	// MaxProcs (or MaxNodes). Workload.ProcsPerNode is the one used.
	ProcsPerNode int
	// Nodes, when > 0, sets the machine size instead of the header.
	Nodes int
}

// SWF fields, numbered from 1 as in the format's definition.
const (
	swfJob       = 1
	swfSubmit    = 2
	swfRun       = 4
	swfAllocProc = 5
	swfReqProc   = 8
	swfReqTime   = 9
	swfUser      = 12
	swfFields    = 18
)

// ReadSWF reads a trace in the Standard Workload Format
// (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html), plain or
// gzip-compressed. Header lines start with ';'; MaxProcs, MaxNodes and
// UnixStartTime are used. Each record has 18 numeric fields, -1 where
// unknown. A job's processors are field 5 (allocated) if positive, else
// field 8 (requested); its run time field 4, its limit field 9 (0 when not
// given). Records with no run time, no processors or more than the machine
// are counted in Dropped (the last also in TooLarge). With no machine size
// in the header or options, the machine is the largest job.
func ReadSWF(r io.Reader, name string, opts SWFOptions) (*Workload, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	var maxProcs, maxNodes int64
	w := &Workload{Name: name, Format: "swf"}
	l := newLines(r, name, opts.Options)
	var procs []int64 // per job, before the machine size is known
	for {
		text, ok := l.next()
		if !ok {
			break
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		var err error
		if text[0] == ';' {
			err = swfHeader(text, &maxProcs, &maxNodes, &w.Start)
		} else {
			var j Job
			var p int64
			j, p, err = parseSWFLine(text)
			if err == nil {
				if j.Run <= 0 || p <= 0 {
					w.Dropped++
					continue
				}
				j.Line = l.n
				w.Jobs = append(w.Jobs, j)
				procs = append(procs, p)
			}
		}
		if err != nil {
			if err := l.bad(err); err != nil {
				return nil, err
			}
		}
	}
	ppn := max(opts.ProcsPerNode, 1)
	if opts.ProcsPerNode == ProcsPerNodeFromHeader && maxNodes > 0 && maxProcs%maxNodes == 0 {
		ppn = int(max(maxProcs/maxNodes, 1))
	}
	w.ProcsPerNode = ppn
	for i, p := range procs {
		w.Jobs[i].Nodes = int((p + int64(ppn) - 1) / int64(ppn))
	}
	switch {
	case opts.Nodes > 0:
		w.Nodes = opts.Nodes
	case ppn > 1 && maxNodes > 0:
		w.Nodes = int(maxNodes)
	case maxProcs > 0:
		w.Nodes = int(maxProcs / int64(ppn))
	case maxNodes > 0:
		w.Nodes = int(maxNodes)
	}
	if w.Nodes > 0 {
		kept := w.Jobs[:0]
		for _, j := range w.Jobs {
			if j.Nodes <= w.Nodes {
				kept = append(kept, j)
			} else {
				w.Dropped++
				w.TooLarge++
			}
		}
		w.Jobs = kept
	} else {
		for _, j := range w.Jobs {
			w.Nodes = max(w.Nodes, j.Nodes)
		}
	}
	return l.finish(w)
}

// procLimit bounds processor counts so that node arithmetic cannot overflow.
const procLimit = 1 << 31

func swfHeader(text string, maxP, maxN *int64, start *time.Time) error {
	k, v, ok := strings.Cut(strings.TrimSpace(text[1:]), ":")
	if !ok {
		return nil
	}
	v = strings.TrimSpace(v)
	var err error
	switch strings.TrimSpace(k) {
	case "MaxProcs":
		*maxP, err = parseInt(v, 1, procLimit)
	case "MaxNodes":
		*maxN, err = parseInt(v, 1, procLimit)
	case "UnixStartTime":
		var t int64
		t, err = parseInt(v, 0, 1<<40)
		*start = time.Unix(t, 0).UTC()
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("header %s: %w", strings.TrimSpace(k), err)
	}
	return nil
}

// parseSWFLine returns the job and its processor count.
func parseSWFLine(text string) (Job, int64, error) {
	var j Job
	var f [swfFields]string
	n := 0
	for tok := range strings.FieldsSeq(text) {
		if n == swfFields {
			return j, 0, fmt.Errorf("more than %d fields", swfFields)
		}
		f[n] = tok
		n++
	}
	if n != swfFields {
		return j, 0, fmt.Errorf("%d fields, want %d", n, swfFields)
	}
	var v [swfFields + 1]int64 // v[k] is field k
	for i, s := range f {
		k := i + 1
		switch k {
		case swfJob:
			id, err := parseInt(s, 0, math.MaxInt32)
			if err != nil {
				return j, 0, fmt.Errorf("field %d (job number): %w", k, err)
			}
			v[k] = id
		case swfSubmit:
			t, err := parseInt(s, 0, maxSpanSec)
			if err != nil {
				return j, 0, fmt.Errorf("field %d (submit time): %w", k, err)
			}
			v[k] = t
		case swfRun, swfReqTime:
			t, err := parseInt(s, -1, maxSpanSec)
			if err != nil {
				return j, 0, fmt.Errorf("field %d (seconds or -1): %w", k, err)
			}
			v[k] = t
		case swfAllocProc, swfReqProc:
			p, err := parseInt(s, -1, procLimit)
			if err != nil {
				return j, 0, fmt.Errorf("field %d (processors or -1): %w", k, err)
			}
			v[k] = p
		case swfUser:
			u, err := parseInt(s, -1, math.MaxInt32)
			if err != nil {
				return j, 0, fmt.Errorf("field %d (user id or -1): %w", k, err)
			}
			v[k] = u
		default:
			// Unused fields; some archives write decimals (average CPU time).
			if !isNumber(s) {
				return j, 0, fmt.Errorf("field %d: %q is not a number", k, s)
			}
		}
	}
	j.ID = int(v[swfJob])
	j.Submit = seconds(v[swfSubmit])
	if v[swfRun] > 0 {
		j.Run = seconds(v[swfRun])
	}
	if v[swfReqTime] > 0 {
		j.Limit = seconds(v[swfReqTime])
	}
	if v[swfUser] >= 0 {
		j.User = strconv.FormatInt(v[swfUser], 10)
	}
	p := v[swfAllocProc]
	if p <= 0 {
		p = v[swfReqProc]
	}
	return j, p, nil
}

// isNumber accepts an optionally signed decimal with an optional fraction.
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" || hasDot && frac == "" {
		return false
	}
	for _, c := range intPart + frac {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
