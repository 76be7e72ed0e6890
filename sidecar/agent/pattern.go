package agent

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// PatternVars fill a -o/-e/-i file name pattern.
type PatternVars struct {
	ArrayJob string // %A: the anchor's id
	Task     string // %a: the array index ("summary" for the anchor's summary)
	Job      string // %j: the job id of the pilot or shadow element running the task
	Name     string // %x
	User     string // %u
	Node     string // %N: the node's short name
}

// noVal is what Slurm prints for %a outside an array (NO_VAL - 1).
const noVal = "4294967294"

// ExpandPattern expands a file name pattern as slurmd does (sbatch(1),
// "filename pattern"): %A %a %j %J %x %u %N %n %t %s %%, an optional width
// between % and the letter zero-pads numbers, a backslash anywhere turns
// expansion off (the backslashes are dropped), unknown letters stay.
func ExpandPattern(p string, v PatternVars) string {
	if strings.Contains(p, `\`) {
		return strings.ReplaceAll(p, `\`, "")
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		j := i + 1
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			j++
		}
		if j >= len(p) {
			b.WriteString(p[i:])
			break
		}
		width, _ := strconv.Atoi(p[i+1 : j])
		width = min(width, 10)
		num := func(s string) {
			if _, err := strconv.ParseUint(s, 10, 64); err == nil && width > len(s) {
				s = strings.Repeat("0", width-len(s)) + s
			}
			b.WriteString(s)
		}
		switch p[j] {
		case '%':
			b.WriteByte('%')
		case 'A':
			num(v.ArrayJob)
		case 'a':
			num(v.Task)
		case 'j', 'J':
			num(v.Job)
		case 'n', 't':
			num("0")
		case 's':
			b.WriteString("batch")
		case 'x':
			b.WriteString(v.Name)
		case 'u':
			b.WriteString(v.User)
		case 'N':
			b.WriteString(v.Node)
		default:
			b.WriteString(p[i : j+1])
		}
		i = j
	}
	return b.String()
}

// Default output patterns: plain Slurm's slurm-%A_%a.out for an array
// element, slurm-%j.out otherwise (the anchor's id: the id the user saw).
const (
	defaultArrayOutput = "slurm-%A_%a.out"
	defaultOutput      = "slurm-%A.out"
)

// OutputPaths are a task's standard file paths: Err == Out when stderr
// goes to the output file; In "" is /dev/null.
type OutputPaths struct{ Out, Err, In string }

// TaskPaths expands the entry's -o, -e and -i for one task, relative to
// the job's working directory.
func TaskPaths(j *Job, v PatternVars) OutputPaths {
	e := j.Entry
	out := e.Output
	if out == "" {
		out = defaultOutput
		if e.Array != nil {
			out = defaultArrayOutput
		}
	}
	p := OutputPaths{Out: abs(e.Cwd, ExpandPattern(out, v))}
	p.Err = p.Out
	if e.Error != "" {
		p.Err = abs(e.Cwd, ExpandPattern(e.Error, v))
	}
	if e.Input != "" {
		p.In = abs(e.Cwd, ExpandPattern(e.Input, v))
	}
	return p
}

// SummaryPath is where the anchor writes the job's summary: the -o
// pattern with %a as "summary" (default slurm-<anchor>_summary.out).
func SummaryPath(e *spool.Entry, v PatternVars) string {
	out := e.Output
	if out == "" {
		out = "slurm-%A_%a.out"
	}
	if out == "/dev/null" {
		return out
	}
	v.Task = "summary"
	return abs(e.Cwd, ExpandPattern(out, v))
}

func abs(cwd, p string) string {
	if filepath.IsAbs(p) || cwd == "" {
		return p
	}
	return filepath.Join(cwd, p)
}

// taskLabel is the task's index as %a prints it.
func taskLabel(j *Job, task int) string {
	if j.Entry.Array == nil {
		return noVal
	}
	return fmt.Sprint(task)
}
