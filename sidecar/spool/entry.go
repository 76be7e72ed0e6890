package spool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// EntryVersion is the version of Entry this code writes and reads.
const EntryVersion = 1

// Names of the files of one incoming entry. The count is fixed: it does not
// grow with the array.
const (
	EntryFile  = "entry.json" // the record (mode 0640)
	ScriptFile = "script"     // copy of the batch script (0640)
	EnvFile    = "env"        // captured environment, NUL-separated KEY=VALUE (0600: only the owner reads it)
	ItemsFile  = "items"      // data-folder items, one per line (0640), with --glean=dir=
)

// Entry is one elastic submission as the wrapper writes it into the
// owner's incoming directory. Identity is never taken from it: the daemon
// uses the owner of the file. Every field is checked by Validate.
type Entry struct {
	Version   int       `json:"version"`
	ID        string    `json:"id"`    // entry id (also the anchor's comment)
	Nonce     string    `json:"nonce"` // in the anchor's comment: ties the anchor to this entry
	Submitted time.Time `json:"submitted"`
	User      string    `json:"user"` // informational only

	Anchor  string `json:"anchor"`            // the anchor job's id: the id the user saw
	Shadow  string `json:"shadow,omitempty"`  // the shadow array's id (fair mode)
	Cluster string `json:"cluster,omitempty"` // from sbatch --parsable "id;cluster"

	Name string `json:"name"` // job name (-J, else the script's base name)
	Mode string `json:"mode"` // fair | scavenger | thesis

	Glean Glean `json:"glean"`

	Script     string   `json:"script"` // where the script came from: a path, "(stdin)" or "(wrap)"
	ScriptArgs []string `json:"script_args,omitempty"`
	ScriptSize int64    `json:"script_size"`
	Cwd        string   `json:"cwd"`              // working directory of every task (-D resolved)
	Export     string   `json:"export"`           // --export as given ("ALL" if absent)
	Output     string   `json:"output,omitempty"` // -o pattern ("" = Slurm's default slurm-%A_%a.out)
	Error      string   `json:"error,omitempty"`  // -e pattern
	Input      string   `json:"input,omitempty"`  // -i pattern
	OpenMode   string   `json:"open_mode,omitempty"`

	Array *Array `json:"array,omitempty"` // nil: not an array job (one task)
	Tasks int    `json:"tasks"`           // number of tasks (= indices)
	Items *Items `json:"items,omitempty"` // data-folder form

	Resources Resources `json:"resources"` // per task

	Dependency string    `json:"dependency,omitempty"` // as given; the anchor carries it
	Begin      string    `json:"begin,omitempty"`      // as given; the anchor carries it
	Deadline   time.Time `json:"deadline,omitzero"`    // resolved --glean deadline
	MailType   string    `json:"mail_type,omitempty"`  // carried by the anchor
	MailUser   string    `json:"mail_user,omitempty"`
	Wait       bool      `json:"wait,omitempty"` // the wrapper waits for the anchor to end

	// Options is every option in force, by canonical long name, with the
	// layer it came from: what plain sbatch would have applied.
	Options []Opt `json:"options"`
}

// Glean holds the --glean keys.
type Glean struct {
	Checkpoint bool    `json:"checkpoint,omitempty"`
	PTY        bool    `json:"pty,omitempty"`
	Budget     float64 `json:"budget,omitempty"` // node-hours; 0 = none
	Profile    string  `json:"profile,omitempty"`
	Raw        string  `json:"raw"` // the value as given
}

// Items is the data-folder form: Count items in Dir, Batch per task.
type Items struct {
	Dir   string `json:"dir"`
	Batch int    `json:"batch"`
	Count int    `json:"count"`
}

// Resources are one task's: what one array element would ask of Slurm.
type Resources struct {
	CPUsPerTask int    `json:"cpus_per_task"`    // -c (1 if absent)
	NTasks      int    `json:"ntasks"`           // -n (1 if absent)
	CPUs        int    `json:"cpus"`             // CPUs one task needs on its node
	MemMB       int64  `json:"mem_mb,omitempty"` // --mem (per node); 0 = not given
	MemPerCPUMB int64  `json:"mem_per_cpu_mb,omitempty"`
	TimeLimit   int    `json:"time_limit_min,omitempty"` // -t in minutes; 0 = the partition's default
	TimeMin     int    `json:"time_min_min,omitempty"`
	Gres        string `json:"gres,omitempty"`
	GPUs        string `json:"gpus,omitempty"`
	Constraint  string `json:"constraint,omitempty"`
	TmpMB       int64  `json:"tmp_mb,omitempty"`
	Exclusive   bool   `json:"exclusive,omitempty"`
}

// Opt is one option in force.
type Opt struct {
	Name  string `json:"name"`            // canonical long name
	Value string `json:"value,omitempty"` // "" for a flag
	From  string `json:"from"`            // script | environment | command line
}

// Bounds of a task's sizes and times (an exabyte, about 255 years): far
// above any node (the wrapper's own cap on sizes is the same), small
// enough that mem_per_cpu_mb x cpus fits an int64 and a time limit a
// time.Duration.
const (
	MaxMemMB   = 1 << 40
	MaxMinutes = 1 << 27
)

// Limits bounds what Validate accepts.
type Limits struct {
	MaxTasks int // tasks per job
}

// Validate checks every field of an entry read from a user's directory.
func (e *Entry) Validate(lim Limits) error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, a...)...))
	}
	if e.Version != EntryVersion {
		bad("version", "%d, this glean reads version %d", e.Version, EntryVersion)
	}
	if !ValidID(e.ID) {
		bad("id", "bad entry id %q", clip(e.ID))
	}
	if !isHex(e.Nonce, 32) {
		bad("nonce", "want 32 hex digits")
	}
	if !validJobID(e.Anchor) {
		bad("anchor", "bad job id %q", clip(e.Anchor))
	}
	if e.Shadow != "" && !validJobID(e.Shadow) {
		bad("shadow", "bad job id %q", clip(e.Shadow))
	}
	if e.Cluster != "" && !isName(e.Cluster, 64) {
		bad("cluster", "bad cluster name %q", clip(e.Cluster))
	}
	if e.Submitted.IsZero() {
		bad("submitted", "missing")
	}
	switch e.Mode {
	case "fair":
		if e.Shadow == "" {
			bad("shadow", "a fair job needs its shadow array")
		}
	case "scavenger", "thesis":
		if e.Shadow != "" {
			bad("shadow", "only a fair job has a shadow array")
		}
	default:
		bad("mode", "%q is not fair, scavenger or thesis", clip(e.Mode))
	}
	if len(e.Name) > 1024 || !printable(e.Name) {
		bad("name", "not a printable name of at most 1024 bytes")
	}
	if len(e.User) > 256 || !printable(e.User) {
		bad("user", "not printable")
	}
	if e.Cwd == "" || !filepath.IsAbs(e.Cwd) || strings.ContainsRune(e.Cwd, 0) {
		bad("cwd", "must be an absolute path")
	}
	for _, p := range []struct{ name, v string }{{"output", e.Output}, {"error", e.Error}, {"input", e.Input}, {"script", e.Script}} {
		if len(p.v) > 4096 || strings.ContainsRune(p.v, 0) {
			bad(p.name, "too long or holds a NUL")
		}
	}
	if len(e.ScriptArgs) > 10000 {
		bad("script_args", "more than 10000")
	}
	if e.ScriptSize < 0 {
		bad("script_size", "negative")
	}
	if len(e.Export) > 1<<16 {
		bad("export", "longer than 64 KiB")
	}
	switch {
	case e.Tasks < 1:
		bad("tasks", "%d: at least one", e.Tasks)
	case lim.MaxTasks > 0 && e.Tasks > lim.MaxTasks:
		bad("tasks", "%d tasks, over the site's cap of %d per job", e.Tasks, lim.MaxTasks)
	}
	if e.Array != nil {
		if err := e.Array.Validate(); err != nil {
			bad("array", "%v", err)
		} else if n := e.Array.Count(); n != e.Tasks {
			bad("tasks", "%d, but the array has %d indices", e.Tasks, n)
		}
	} else if e.Tasks != 1 {
		bad("tasks", "%d tasks without an array", e.Tasks)
	}
	if it := e.Items; it != nil {
		if it.Dir == "" || !filepath.IsAbs(it.Dir) || it.Batch < 1 || it.Count < 1 || (it.Count+it.Batch-1)/it.Batch != e.Tasks {
			bad("items", "inconsistent with %d tasks", e.Tasks)
		}
	}
	r := e.Resources
	if r.CPUsPerTask < 1 || r.NTasks < 1 || r.CPUs != r.CPUsPerTask*r.NTasks || r.CPUs > 1<<20 {
		bad("resources", "cpus %d = cpus_per_task %d x ntasks %d must hold, each at least 1", r.CPUs, r.CPUsPerTask, r.NTasks)
	}
	if r.MemMB < 0 || r.MemPerCPUMB < 0 || r.TmpMB < 0 || r.TimeLimit < 0 || r.TimeMin < 0 {
		bad("resources", "negative size or time")
	}
	// Bounded so that per-task products (mem_per_cpu_mb x cpus) cannot
	// overflow where the daemon and the agent compare them with a node.
	if r.MemMB > MaxMemMB || r.MemPerCPUMB > MaxMemMB || r.TmpMB > MaxMemMB || r.TimeLimit > MaxMinutes || r.TimeMin > MaxMinutes {
		bad("resources", "size over %d MB or time over %d minutes", MaxMemMB, MaxMinutes)
	}
	if g := e.Glean; g.Budget < 0 || len(g.Profile) > 64 || len(g.Raw) > 2048 {
		bad("glean", "bad budget or profile")
	}
	if len(e.Options) > 1000 {
		bad("options", "more than 1000")
	}
	for _, o := range e.Options {
		if o.Name == "" || len(o.Name) > 64 || len(o.Value) > 1<<16 {
			bad("options", "bad option %q", clip(o.Name))
			break
		}
	}
	return errors.Join(errs...)
}

// DecodeEntry reads one entry of at most max bytes: unknown fields,
// trailing data and a size over max are errors.
func DecodeEntry(r io.Reader, max int64) (*Entry, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, max)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e Entry
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the record", ErrBadJSON)
	}
	return &e, nil
}

// Encode writes the entry as indented JSON.
func (e *Entry) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Errors that classify a rejected entry.
var (
	ErrTooLarge = errors.New("too large")
	ErrBadJSON  = errors.New("bad JSON")
)

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func printable(s string) bool {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func isName(s string, max int) bool {
	return s != "" && len(s) <= max && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == ""
}

// validJobID accepts a positive decimal job id (no array suffix).
func validJobID(s string) bool {
	if s == "" || len(s) > 18 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
