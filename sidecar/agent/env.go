package agent

import (
	"strconv"
	"strings"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// TaskVars are what one attempt's environment says about it.
type TaskVars struct {
	Task      int
	Attempt   int    // 1-based
	AttemptID string // the attempt's id: GLEAN_ATTEMPT_ID, which marks its processes (killAttempt)
	Restarted bool   // the task has a complete save (history.resume): resume from CkptDir
	CkptRoot  string // checkpoint.root as expanded for the user ("" = none)
	CkptDir   string // the task's checkpoint directory
}

// TaskEnv builds a task's environment as slurmd would build an array
// element's: the captured environment under --export (ALL; NONE: only
// SLURM_*; a list: SLURM_*, the named variables and NAME=value items), then
// the pilot's own SLURM_* job variables (so srun inside the task runs as a
// step of the pilot) with the job's name and submit directory, the
// SLURM_ARRAY_* values of the task as plain Slurm sets them, and glean's
// GLEAN_* variables. No SLURM_SPANK_* variable reaches a task, neither the
// submission's nor the pilot's.
func TaskEnv(j *Job, agentEnv []string, v TaskVars) []string {
	e := newEnvBuilder()
	keep := exportFilter(j.Entry.Export)
	for _, kv := range j.Env {
		k, val, _ := strings.Cut(kv, "=")
		// The agent's own GLEAN_* say what it gave this attempt: one
		// captured from the submitting shell (a job submitted from inside
		// a glean task) would name another task's, e.g. its checkpoint
		// directory where the agent gave this one none.
		if keep(k) && !strings.HasPrefix(k, "SLURM_ARRAY_") && !agentVars[k] {
			e.set(k, val)
		}
	}
	for _, kv := range agentEnv {
		k, val, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(k, "SLURM_") || k == "SLURMD_NODENAME") && !strings.HasPrefix(k, "SLURM_ARRAY_") {
			e.set(k, val)
		}
	}
	e.del(func(k string) bool {
		return strings.HasPrefix(k, "SLURM_SPANK_") || strings.HasPrefix(k, "_SLURM_SPANK_")
	})
	// The pilot runs with --export=NONE, which Slurm leaves in
	// SLURM_EXPORT_ENV: an srun inside the task would start its step
	// without the user's environment. A plain job has it only as the
	// submission gave it: --export other than ALL, or the variable itself
	// in the submitting shell (measured on 22.05).
	e.del(func(k string) bool { return k == "SLURM_EXPORT_ENV" })
	if v, ok := lookupEnv(j.Env, "SLURM_EXPORT_ENV"); ok {
		e.set("SLURM_EXPORT_ENV", v)
	} else if x := j.Entry.Export; x != "" && x != "ALL" {
		e.set("SLURM_EXPORT_ENV", x)
	}
	e.set("ENVIRONMENT", "BATCH")
	e.set("SLURM_JOB_NAME", j.Entry.Name)
	e.set("SLURM_SUBMIT_DIR", j.Entry.Cwd)
	if hasOption(j.Entry, "cpus-per-task") {
		e.set("SLURM_CPUS_PER_TASK", strconv.Itoa(j.Entry.Resources.CPUsPerTask))
	}
	// As sbatch sets them for a job given -n or --ntasks-per-node (an srun
	// in the task takes its task count from them); the pilot has neither.
	// Measured on the loopback 22.05: --ntasks-per-node=2 alone gives
	// SLURM_NTASKS=2 and SLURM_NPROCS=2 too, and on one node
	// SLURM_TASKS_PER_NODE is the task count (the pilot's says 1).
	if hasOption(j.Entry, "ntasks") || hasOption(j.Entry, "ntasks-per-node") {
		n := strconv.Itoa(j.Entry.Resources.NTasks)
		e.set("SLURM_NTASKS", n)
		e.set("SLURM_NPROCS", n)
		e.set("SLURM_TASKS_PER_NODE", n)
	}
	if v, ok := optionValue(j.Entry, "ntasks-per-node"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			e.set("SLURM_NTASKS_PER_NODE", strconv.Itoa(n))
		}
	}
	if a := j.Entry.Array; a != nil {
		idx := j.Entry.TaskIndices()
		e.set("SLURM_ARRAY_JOB_ID", j.Entry.Anchor)
		e.set("SLURM_ARRAY_TASK_ID", strconv.Itoa(v.Task))
		e.set("SLURM_ARRAY_TASK_COUNT", strconv.Itoa(len(idx)))
		e.set("SLURM_ARRAY_TASK_MIN", strconv.Itoa(idx[0]))
		e.set("SLURM_ARRAY_TASK_MAX", strconv.Itoa(idx[len(idx)-1]))
		e.set("SLURM_ARRAY_TASK_STEP", strconv.Itoa(arrayStep(idx)))
	}
	e.set("GLEAN_JOB", j.Entry.Anchor)
	e.set("GLEAN_TASK_ID", strconv.Itoa(v.Task))
	e.set("GLEAN_ATTEMPT", strconv.Itoa(v.Attempt))
	if v.AttemptID != "" {
		e.set("GLEAN_ATTEMPT_ID", v.AttemptID)
	}
	restarted := "0"
	if v.Restarted {
		restarted = "1"
	}
	e.set("GLEAN_RESTARTED", restarted)
	// The root even when the task has no directory (refused): then
	// glean_checkpoint_dir refuses it too, instead of falling back to
	// $HOME.
	if v.CkptRoot != "" {
		e.set("GLEAN_CHECKPOINT_ROOT", v.CkptRoot)
	}
	if v.CkptDir != "" {
		e.set("GLEAN_CHECKPOINT_DIR", v.CkptDir)
	}
	if it := j.Entry.Items; it != nil && j.ItemsPath != "" {
		e.set("GLEAN_ITEMS", j.ItemsPath)
		e.set("GLEAN_BATCH", strconv.Itoa(it.Batch))
	}
	return e.list()
}

// agentVars are the GLEAN_* variables the agent sets (or leaves unset) for
// a task. GLEAN_DIR and GLEAN_BATCH are not among them: a user may set them
// for glean_items where glean is absent (GLEAN_BATCH is the agent's, and
// set, only for a data-folder job).
var agentVars = map[string]bool{"GLEAN_JOB": true, "GLEAN_TASK_ID": true, "GLEAN_ATTEMPT": true,
	"GLEAN_ATTEMPT_ID": true, "GLEAN_RESTARTED": true, "GLEAN_CHECKPOINT_DIR": true, "GLEAN_CHECKPOINT_ROOT": true,
	"GLEAN_ITEMS": true}

// lookupEnv finds k in a KEY=VALUE list.
func lookupEnv(env []string, k string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// exportFilter says which captured variables --export lets through.
func exportFilter(export string) func(string) bool {
	all, items := spool.ParseExport(export)
	named := map[string]bool{}
	for _, item := range items {
		k, _, _ := strings.Cut(item, "=")
		named[k] = true
	}
	return func(k string) bool { return all || named[k] || strings.HasPrefix(k, "SLURM_") }
}

// arrayStep is SLURM_ARRAY_TASK_STEP: the common difference of the
// indices, 1 when they are not evenly spaced (or there is one).
func arrayStep(idx []int) int {
	if len(idx) < 2 {
		return 1
	}
	step := idx[1] - idx[0]
	for i := 2; i < len(idx); i++ {
		if idx[i]-idx[i-1] != step {
			return 1
		}
	}
	return step
}

func hasOption(e *spool.Entry, name string) bool {
	_, ok := optionValue(e, name)
	return ok
}

// optionValue is the value of an option in force in the submission.
func optionValue(e *spool.Entry, name string) (string, bool) {
	for _, o := range e.Options {
		if o.Name == name {
			return o.Value, true
		}
	}
	return "", false
}

// envBuilder keeps variables in first-set order, later sets winning.
type envBuilder struct {
	vals  map[string]string
	order []string
}

func newEnvBuilder() *envBuilder { return &envBuilder{vals: map[string]string{}} }

func (e *envBuilder) set(k, v string) {
	if k == "" || strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
		return
	}
	if _, ok := e.vals[k]; !ok {
		e.order = append(e.order, k)
	}
	e.vals[k] = v
}

func (e *envBuilder) del(drop func(string) bool) {
	out := e.order[:0]
	for _, k := range e.order {
		if drop(k) {
			delete(e.vals, k)
			continue
		}
		out = append(out, k)
	}
	e.order = out
}

func (e *envBuilder) list() []string {
	out := make([]string, 0, len(e.order))
	for _, k := range e.order {
		out = append(out, k+"="+e.vals[k])
	}
	return out
}
