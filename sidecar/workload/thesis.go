package workload

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ThesisNodes is the size of the seed thesis's cluster, the machine of its
// submit lists.
const ThesisNodes = 24

// ReadThesis reads a submit list of the seed thesis, one job a line:
//
//	NodeNum=4 Type=Normal TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405
//
// Type is Normal or Calibration, TimeLimit a Slurm time or UNLIMITED,
// RealTime seconds, SubmitTimeStamp milliseconds after the start. Lines
// starting with '#' and blank lines are ignored. Job IDs count job lines
// from 1, bad ones included, so that fixing a line does not renumber the
// rest. NodeNum is not bounded by the thesis's 24 nodes: a list may be
// written for a larger machine. Workload.Nodes is ThesisNodes, or the
// largest job if that is larger; the caller replaces it with the machine's
// size and rejects a job larger than that. At most one Options is used.
func ReadThesis(r io.Reader, name string, opts ...Options) (*Workload, error) {
	w := &Workload{Name: name, Format: "thesis", Nodes: ThesisNodes}
	l := newLines(r, name, firstOpts(opts))
	id := 0
	for {
		text, ok := l.next()
		if !ok {
			break
		}
		text = strings.TrimSpace(text)
		if text == "" || text[0] == '#' {
			continue
		}
		id++
		j, err := parseThesisLine(text)
		if err != nil {
			if err := l.bad(err); err != nil {
				return nil, err
			}
			continue
		}
		j.ID, j.Line = id, l.n
		w.Jobs = append(w.Jobs, j)
		w.Nodes = max(w.Nodes, j.Nodes)
	}
	return l.finish(w)
}

var thesisKeys = [...]string{"NodeNum", "Type", "TimeLimit", "RealTime", "SubmitTimeStamp"}

func parseThesisLine(text string) (Job, error) {
	var j Job
	var seen [len(thesisKeys)]bool
	for _, f := range strings.Fields(text) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return j, fmt.Errorf("%q is not key=value", f)
		}
		i := 0
		for i < len(thesisKeys) && thesisKeys[i] != k {
			i++
		}
		if i == len(thesisKeys) {
			return j, fmt.Errorf("unknown key %q", k)
		}
		if seen[i] {
			return j, fmt.Errorf("%s given twice", k)
		}
		seen[i] = true
		var err error
		switch k {
		case "NodeNum":
			var n int64
			n, err = parseInt(v, 1, procLimit)
			j.Nodes = int(n)
		case "Type":
			switch v {
			case "Normal":
				j.Kind = Regular
			case "Calibration":
				j.Kind = Calibration
			default:
				err = fmt.Errorf("%q is neither Normal nor Calibration", v)
			}
		case "TimeLimit":
			j.Limit, err = parseSlurmDuration(v)
		case "RealTime":
			var s int64
			s, err = parseInt(v, 0, maxSpanSec)
			j.Run = seconds(s)
		case "SubmitTimeStamp":
			var ms int64
			ms, err = parseInt(v, 0, maxSpanSec*1000)
			j.Submit = time.Duration(ms) * time.Millisecond
		}
		if err != nil {
			return j, fmt.Errorf("%s: %w", k, err)
		}
	}
	var missing []string
	for i, k := range thesisKeys {
		if !seen[i] {
			missing = append(missing, k)
		}
	}
	if missing != nil {
		return j, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return j, nil
}
