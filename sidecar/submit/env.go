package submit

import (
	"sort"
	"strconv"
	"strings"
)

// envOptions maps sbatch's input environment variables (sbatch(1), INPUT
// ENVIRONMENT VARIABLES, 22.05) to options. SBATCH_GLEAN is glean's own:
// the environment form of --glean.
var envOptions = map[string]string{
	"SBATCH_ACCOUNT":          "account",
	"SBATCH_ACCTG_FREQ":       "acctg-freq",
	"SBATCH_ARRAY_INX":        "array",
	"SBATCH_BATCH":            "batch",
	"SBATCH_CLUSTERS":         "clusters",
	"SLURM_CLUSTERS":          "clusters",
	"SBATCH_CONSTRAINT":       "constraint",
	"SBATCH_CONTAINER":        "container",
	"SBATCH_CORE_SPEC":        "core-spec",
	"SBATCH_CPUS_PER_GPU":     "cpus-per-gpu",
	"SBATCH_DEBUG":            "verbose",
	"SBATCH_DELAY_BOOT":       "delay-boot",
	"SBATCH_DISTRIBUTION":     "distribution",
	"SBATCH_ERROR":            "error",
	"SBATCH_EXCLUSIVE":        "exclusive",
	"SBATCH_EXPORT":           "export",
	"SBATCH_GET_USER_ENV":     "get-user-env",
	"SBATCH_GLEAN":            "glean",
	"SBATCH_GPU_BIND":         "gpu-bind",
	"SBATCH_GPU_FREQ":         "gpu-freq",
	"SBATCH_GPUS":             "gpus",
	"SBATCH_GPUS_PER_NODE":    "gpus-per-node",
	"SBATCH_GPUS_PER_TASK":    "gpus-per-task",
	"SBATCH_GRES":             "gres",
	"SBATCH_GRES_FLAGS":       "gres-flags",
	"SBATCH_HINT":             "hint",
	"SLURM_HINT":              "hint",
	"SBATCH_IGNORE_PBS":       "ignore-pbs",
	"SBATCH_INPUT":            "input",
	"SBATCH_JOB_NAME":         "job-name",
	"SBATCH_MEM_BIND":         "mem-bind",
	"SBATCH_MEM_PER_CPU":      "mem-per-cpu",
	"SBATCH_MEM_PER_GPU":      "mem-per-gpu",
	"SBATCH_MEM_PER_NODE":     "mem",
	"SBATCH_NETWORK":          "network",
	"SBATCH_NO_KILL":          "no-kill",
	"SBATCH_NO_REQUEUE":       "no-requeue",
	"SBATCH_OPEN_MODE":        "open-mode",
	"SBATCH_OUTPUT":           "output",
	"SBATCH_OVERCOMMIT":       "overcommit",
	"SBATCH_PARTITION":        "partition",
	"SBATCH_POWER":            "power",
	"SBATCH_PROFILE":          "profile",
	"SBATCH_QOS":              "qos",
	"SBATCH_REQ_SWITCH":       "switches",
	"SBATCH_REQUEUE":          "requeue",
	"SBATCH_RESERVATION":      "reservation",
	"SBATCH_SIGNAL":           "signal",
	"SBATCH_SPREAD_JOB":       "spread-job",
	"SBATCH_THREAD_SPEC":      "thread-spec",
	"SBATCH_THREADS_PER_CORE": "threads-per-core",
	"SBATCH_TIMELIMIT":        "time",
	"SBATCH_USE_MIN_NODES":    "use-min-nodes",
	"SBATCH_WAIT":             "wait",
	"SBATCH_WAIT_ALL_NODES":   "wait-all-nodes",
	"SBATCH_WCKEY":            "wckey",
}

// EnvVars returns the input environment variables glean reads, sorted.
func EnvVars() []string {
	names := make([]string, 0, len(envOptions))
	for n := range envOptions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// envSettings returns the settings made by environment variables, in a
// fixed order (by variable name; sbatch reads them in its own table's order,
// which matters only where two variables set one option, and there the
// SBATCH_ form is read first and the SLURM_ form wins: we do the same).
func envSettings(env []string) []Setting {
	vals := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, known := envOptions[k]; known {
			vals[k] = v // the last duplicate wins, as getenv sees it
		}
	}
	if len(vals) == 0 {
		return nil
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		// SBATCH_ before SLURM_ for the same option, so that the SLURM_ form wins.
		return names[i] < names[j]
	})
	var sets []Setting
	for _, k := range names {
		v := vals[k]
		o := byLong[envOptions[k]]
		s := Setting{Opt: o, Layer: FromEnv, Word: k}
		switch {
		case o.Arg == NoArg:
			if !envFlagOn(v) {
				continue
			}
		case k == "SBATCH_GLEAN":
			s.Value, s.HasValue = v, v != ""
		case o.Arg == OptionalArg && v == "":
		default:
			s.Value, s.HasValue = v, true
		}
		sets = append(sets, s)
	}
	return sets
}

// envFlagOn is sbatch's rule for a flag set by the environment: empty,
// "yes" or a non-zero number enables it; anything else leaves it unset.
func envFlagOn(v string) bool {
	if v == "" || strings.EqualFold(v, "yes") {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n != 0
}
