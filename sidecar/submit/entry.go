package submit

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// Refusal is an elastic submission glean will not take, with sbatch's exit
// code: 255 for a bad option value (as sbatch), 1 for valid syntax glean
// cannot honour (as a controller rejection).
type Refusal struct {
	Code int
	Msg  string
}

func (r *Refusal) Error() string { return r.Msg }

func refuse(format string, a ...any) error { return &Refusal{1, fmt.Sprintf(format, a...)} }
func badValue(format string, a ...any) error {
	return &Refusal{255, fmt.Sprintf(format, a...)}
}

// Input is what BuildEntry needs besides the request.
type Input struct {
	Config     config.Config
	Env        []string // the user's environment (without glean's own variables)
	Cwd        string
	User       string
	Now        time.Time
	Script     []byte
	ScriptName string // a path as given, "(stdin)" or "(wrap)"
	ScriptArgs []string
}

// Built is an entry ready to be written, without its anchor.
type Built struct {
	Entry *spool.Entry
	Env   []byte // the captured environment, NUL-separated
	Items []byte // nil unless --glean=dir=
	Quiet bool   // -Q: print nothing on success
	Parse bool   // --parsable
	Test  bool   // --test-only: check only
}

// optionsRefused are options an elastic job cannot have, with why and what
// to do instead.
var optionsRefused = map[string]string{
	"hold":         "the id is an anchor job that glean holds itself, so a user hold could not be released; submit without --hold and use --begin to delay the start",
	"clusters":     "glean runs elastic jobs on its own cluster only; submit without -M/--clusters",
	"uid":          "elastic jobs run as the submitting user; submit as that user",
	"gid":          "elastic jobs run with the submitting user's group",
	"export-file":  "glean captures the environment at submission; use --export instead of --export-file",
	"get-user-env": "glean captures the environment at submission; load what the tasks need in the script instead",
	"batch":        "batch features apply to a whole allocation; submit without --batch",
}

// BuildEntry checks an elastic submission and builds its entry. It reads
// the data folder for --glean=dir= but changes nothing.
func BuildEntry(req *Request, in Input) (*Built, error) {
	cfg := in.Config
	b := &Built{}
	gs, _ := req.Get("glean")
	spec, err := ParseGlean(gs.Value)
	if err != nil {
		return nil, badValue("%s: %v", gs.Name(), err)
	}
	if req.Dirs.Het || (len(req.Operands) > 0 && req.Operands[0] == ":") {
		return nil, refuse("a heterogeneous job cannot be elastic; submit its components separately, or without --glean")
	}
	for _, s := range req.InForce() {
		if why, ok := optionsRefused[s.Opt.Long]; ok {
			return nil, refuse("%s: %s", s.Name(), why)
		}
	}
	_, b.Quiet = req.Get("quiet")
	_, b.Parse = req.Get("parsable")
	_, b.Test = req.Get("test-only")

	e := &spool.Entry{
		Version:    spool.EntryVersion,
		Submitted:  in.Now.UTC(),
		User:       in.User,
		Script:     in.ScriptName,
		ScriptArgs: in.ScriptArgs,
		ScriptSize: int64(len(in.Script)),
		Glean: spool.Glean{Checkpoint: spec.Checkpoint == "yes", PTY: spec.PTY == "yes",
			Budget: spec.Budget, Profile: spec.Profile, Raw: gs.Value},
	}
	if err := checkScript(in.Script); err != nil {
		return nil, err
	}

	// Mode.
	e.Mode = spec.Mode
	if e.Mode == "" {
		e.Mode = cfg.Policy.DefaultMode
	}
	if e.Mode == ModeThesis && !cfg.Policy.AllowThesis {
		return nil, refuse("%s: mode=thesis is for admins reproducing the thesis (its node floor takes nodes from everyone) and this site does not allow it; use mode=fair or mode=scavenger", gs.Name())
	}

	// Working directory and file patterns.
	e.Cwd = in.Cwd
	if s, ok := req.Get("chdir"); ok {
		d := s.Value
		if !filepath.IsAbs(d) {
			d = filepath.Join(in.Cwd, d)
		}
		e.Cwd = filepath.Clean(d)
	}
	for _, f := range []struct {
		opt string
		dst *string
	}{{"output", &e.Output}, {"error", &e.Error}, {"input", &e.Input}, {"open-mode", &e.OpenMode}} {
		if s, ok := req.Get(f.opt); ok {
			*f.dst = s.Value
		}
	}
	e.Name = req.jobName(scriptPath(in.ScriptName))
	if len(e.Name) > 1024 || strings.ContainsFunc(e.Name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, refuse("job name %q has control characters or is over 1024 bytes, which glean status could not show; name the job with -J", e.Name)
	}

	// One node per task.
	if s, ok := req.Get("nodes"); ok && s.Value != "1" && s.Value != "1-1" {
		return nil, refuse("%s: an elastic job's tasks run on one node each (-N 1); use srun inside a task for parallel work on its node, or submit without --glean for a multi-node array job", s.Name())
	}

	// Array and tasks.
	if err := buildArray(req, spec, e, b); err != nil {
		return nil, err
	}
	if e.Tasks > cfg.Limits.MaxTasksPerJob {
		return nil, refuse("%d tasks: this site allows at most %d per elastic job (limits.max_tasks_per_job); split the array", e.Tasks, cfg.Limits.MaxTasksPerJob)
	}

	// Per-task resources.
	if err := buildResources(req, e); err != nil {
		return nil, err
	}

	// Options with a wider meaning.
	if s, ok := req.Get("dependency"); ok {
		if err := checkDependency(s); err != nil {
			return nil, err
		}
		e.Dependency = s.Value
	}
	if s, ok := req.Get("begin"); ok {
		e.Begin = s.Value
	}
	if s, ok := req.Get("mail-type"); ok {
		e.MailType = s.Value
	}
	if s, ok := req.Get("mail-user"); ok {
		e.MailUser = s.Value
	}
	_, e.Wait = req.Get("wait")
	if spec.Deadline != "" {
		t, err := ResolveDeadline(spec.Deadline, in.Now)
		if err != nil {
			return nil, badValue("%s: %v", gs.Name(), err)
		}
		if !t.After(in.Now) {
			return nil, refuse("%s: deadline %s has passed", gs.Name(), t.Format(time.RFC3339))
		}
		e.Deadline = t.UTC()
	}

	// Environment, as --export says.
	e.Export = "ALL"
	if s, ok := req.Get("export"); ok {
		e.Export = s.Value
	}
	env, err := captureEnv(in.Env, e.Export)
	if err != nil {
		return nil, err
	}
	b.Env = env

	for _, s := range req.InForce() {
		e.Options = append(e.Options, spool.Opt{Name: s.Opt.Long, Value: s.Value, From: s.Layer.String()})
	}
	for _, s := range req.InForce() {
		if !utf8.ValidString(s.Value) {
			return nil, refuse("%s: %q is not valid UTF-8, which the spool's JSON cannot carry unchanged (a file name would silently become another); use UTF-8 or submit without --glean", s.Name(), s.Value)
		}
	}
	if field, v := notUTF8(reflect.ValueOf(e).Elem(), ""); field != "" {
		return nil, refuse("%s %q is not valid UTF-8, which the spool's JSON cannot carry unchanged (a file name or directory would silently become another); rename it or submit without --glean", field, v)
	}
	// Whatever the checks above missed, the daemon would reject after the
	// user saw an id: check the entry as the daemon will (with stand-ins
	// for what is only known after the anchor's submission).
	probe := *e
	probe.ID, probe.Nonce, probe.Anchor = spool.NewID(in.Now), spool.NewNonce(), "1"
	if probe.Mode == ModeFair {
		probe.Shadow = "2"
	}
	if err := probe.Validate(spool.Limits{MaxTasks: cfg.Limits.MaxTasksPerJob}); err != nil {
		return nil, refuse("glean could not take this job in: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	b.Entry = e
	return b, nil
}

// notUTF8 finds a string in an entry that is not valid UTF-8 (JSON would
// replace its bad bytes with U+FFFD, so the tasks would see another path
// than the user gave): its JSON field name and value, or "".
func notUTF8(v reflect.Value, name string) (string, string) {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return name, v.String()
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return notUTF8(v.Elem(), name)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if f, s := notUTF8(v.Index(i), name); f != "" {
				return f, s
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if n == "" || n == "-" {
				continue
			}
			if name != "" {
				n = name + "." + n
			}
			if f, s := notUTF8(v.Field(i), n); f != "" {
				return f, s
			}
		}
	}
	return "", ""
}

// scriptPath is the script's path for the job name ("" for stdin).
func scriptPath(name string) string {
	if name == "(stdin)" || name == "(wrap)" {
		return ""
	}
	return name
}

// checkScript applies sbatch's own checks, with its words.
func checkScript(s []byte) error {
	switch {
	case len(s) == 0:
		return refuse("Batch script is empty!")
	case !bytes.HasPrefix(s, []byte("#!")):
		return refuse("This does not look like a batch script.  The first line must start with #! followed by the path to an interpreter. For instance: #!/bin/sh")
	case bytes.IndexByte(s, 0) >= 0:
		return refuse("The batch script contains a NULL character; remove it")
	case bytes.Contains(s, []byte("\r\n")):
		return refuse("Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks (\\n).")
	}
	return nil
}

func buildArray(req *Request, spec Spec, e *spool.Entry, b *Built) error {
	as, hasArray := req.Get("array")
	if spec.Dir != "" {
		if hasArray {
			return refuse("%s and --glean=dir=: give one; the data folder defines the array", as.Name())
		}
		dir := spec.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(e.Cwd, dir)
		}
		dir = filepath.Clean(dir)
		ents, err := os.ReadDir(dir)
		if err != nil {
			return refuse("--glean=dir=%s: %v", spec.Dir, err)
		}
		var items []string
		for _, de := range ents {
			n := de.Name()
			if strings.HasPrefix(n, ".") {
				continue
			}
			if strings.ContainsAny(n, "\n\x00") {
				return refuse("--glean=dir=%s: item %q has a newline in its name; rename it", spec.Dir, n)
			}
			items = append(items, n)
		}
		if len(items) == 0 {
			return refuse("--glean=dir=%s: the folder has no items (entries not starting with '.')", spec.Dir)
		}
		sort.Strings(items)
		batch := max(spec.Batch, 1)
		e.Tasks = (len(items) + batch - 1) / batch
		e.Array = &spool.Array{Ranges: []spool.Range{{Start: 0, End: e.Tasks - 1, Step: 1}}}
		e.Items = &spool.Items{Dir: dir, Batch: batch, Count: len(items)}
		b.Items = []byte(strings.Join(items, "\n") + "\n")
		return nil
	}
	if !hasArray {
		e.Tasks = 1
		return nil
	}
	a, err := ParseArray(as.Value)
	if err != nil {
		return badValue("%s: %v", as.Name(), err)
	}
	e.Array = &a
	e.Tasks = a.Count()
	return nil
}

func buildResources(req *Request, e *spool.Entry) error {
	r := &e.Resources
	r.CPUsPerTask, r.NTasks = 1, 1
	intOpt := func(name string, dst *int) error {
		if s, ok := req.Get(name); ok {
			n, err := parsePositive(s.Value)
			if err != nil {
				return badValue("%s: %v", s.Name(), err)
			}
			*dst = n
		}
		return nil
	}
	for _, o := range []struct {
		name string
		dst  *int
	}{{"cpus-per-task", &r.CPUsPerTask}, {"ntasks", &r.NTasks}} {
		if err := intOpt(o.name, o.dst); err != nil {
			return err
		}
	}
	if s, ok := req.Get("ntasks-per-node"); ok {
		n, err := parsePositive(s.Value)
		if err != nil {
			return badValue("%s: %v", s.Name(), err)
		}
		if _, set := req.Get("ntasks"); !set {
			r.NTasks = n // with one node, -n = --ntasks-per-node
		}
	}
	if r.CPUsPerTask*r.NTasks > math.MaxInt32 {
		return badValue("-c %d x -n %d: too many CPUs", r.CPUsPerTask, r.NTasks)
	}
	r.CPUs = r.CPUsPerTask * r.NTasks
	sizeOpt := func(name string, dst *int64) error {
		if s, ok := req.Get(name); ok {
			mb, err := parseSizeMB(s.Value)
			if err != nil {
				return badValue("%s: %v", s.Name(), err)
			}
			*dst = mb
		}
		return nil
	}
	if err := sizeOpt("mem", &r.MemMB); err != nil {
		return err
	}
	if err := sizeOpt("mem-per-cpu", &r.MemPerCPUMB); err != nil {
		return err
	}
	if err := sizeOpt("tmp", &r.TmpMB); err != nil {
		return err
	}
	if r.MemMB > 0 && r.MemPerCPUMB > 0 {
		return refuse("--mem and --mem-per-cpu are mutually exclusive")
	}
	for _, o := range []struct {
		name string
		dst  *int
	}{{"time", &r.TimeLimit}, {"time-min", &r.TimeMin}} {
		if s, ok := req.Get(o.name); ok {
			m, err := parseMinutes(s.Value)
			if err != nil {
				return badValue("%s: %v", s.Name(), err)
			}
			*o.dst = m
		}
	}
	for _, o := range []struct {
		name string
		dst  *string
	}{{"gres", &r.Gres}, {"gpus", &r.GPUs}, {"constraint", &r.Constraint}} {
		if s, ok := req.Get(o.name); ok {
			*o.dst = s.Value
		}
	}
	if s, ok := req.Get("exclusive"); ok && s.Value != "user" && s.Value != "mcs" {
		r.Exclusive = true
	}
	return nil
}

// checkDependency accepts the dependencies glean can wait for: after,
// afterany, afterok, afternotok on jobs, array elements (5_1, 5_[1-3])
// and whole arrays (5, 5_*), in Slurm's syntax (slurm.ParseDependency, the
// parser gleand evaluates them with), and refuses the other types by name.
func checkDependency(s Setting) error {
	if len(s.Value) > 4096 {
		return badValue("%s: too long", s.Name())
	}
	d, err := slurm.ParseDependency(s.Value)
	if err != nil {
		return badValue("%s: %v (type:jobid[:jobid...], a job id, an array element jobid_index or jobid_[indices])", s.Name(), err)
	}
	for _, c := range d.Conds {
		switch c.Type {
		case "after", "afterany", "afterok", "afternotok":
		default:
			return refuse("%s: %s is not supported for elastic jobs (glean can wait for after, afterany, afterok and afternotok); submit without --glean to use it", s.Name(), c.Type)
		}
	}
	return nil
}

// captureEnv is the environment the tasks get, as --export says: ALL (the
// default) all of it; NONE only SLURM_* variables; a list "[ALL,]VAR[=value],..."
// SLURM_* plus the variables named (or everything with ALL), with values
// given. NUL-separated KEY=VALUE.
func captureEnv(env []string, export string) ([]byte, error) {
	out := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := out[k]; !ok {
			order = append(order, k)
		}
		out[k] = v
	}
	all, named := spool.ParseExport(export)
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if all || strings.HasPrefix(k, "SLURM_") {
			put(k, v)
		}
	}
	for _, n := range named {
		if k, v, ok := strings.Cut(n, "="); ok {
			if k == "" {
				return nil, badValue("--export=%s: %q has no name", show(export), n)
			}
			put(k, v)
			continue
		}
		if v, ok := getenv(env, n); ok {
			put(n, v)
		}
	}
	var buf bytes.Buffer
	for _, k := range order {
		if strings.ContainsRune(k, 0) || strings.ContainsRune(out[k], 0) {
			continue
		}
		buf.WriteString(k)
		buf.WriteByte('=')
		buf.WriteString(out[k])
		buf.WriteByte(0)
	}
	return buf.Bytes(), nil
}
