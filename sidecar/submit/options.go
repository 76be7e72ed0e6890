package submit

import (
	"fmt"
	"sort"
	"strings"
)

// ArgKind says whether an option takes a value, as getopt_long's has_arg.
type ArgKind uint8

const (
	NoArg       ArgKind = iota // --hold; "--hold=x" is an error
	RequiredArg                // --time=5 or --time 5 (the next word, whatever it is)
	OptionalArg                // --nice or --nice=5; never takes the next word
)

// Option is one sbatch option.
type Option struct {
	Long  string // canonical long name, e.g. "cpus-per-task"
	Short byte   // 0 if none
	Arg   ArgKind
}

// The table below is sbatch 22.05.8's, measured against the installed
// binary (tests/submit TestOptionTableMatchesSbatch probes every entry and
// fails if Slurm disagrees), plus --glean, which glean's SPANK plugin
// registers with an optional value. Aliases (tasks-per-node) map to their
// canonical option.
var optionTable = []Option{
	{"account", 'A', RequiredArg},
	{"acctg-freq", 0, RequiredArg},
	{"array", 'a', RequiredArg},
	{"batch", 0, RequiredArg},
	{"bb", 0, RequiredArg},
	{"bbf", 0, RequiredArg},
	{"begin", 'b', RequiredArg},
	{"chdir", 'D', RequiredArg},
	{"cluster-constraint", 0, RequiredArg},
	{"clusters", 'M', RequiredArg},
	{"comment", 0, RequiredArg},
	{"constraint", 'C', RequiredArg},
	{"container", 0, RequiredArg},
	{"contiguous", 0, NoArg},
	{"core-spec", 'S', RequiredArg},
	{"cores-per-socket", 0, RequiredArg},
	{"cpu-freq", 0, RequiredArg},
	{"cpus-per-gpu", 0, RequiredArg},
	{"cpus-per-task", 'c', RequiredArg},
	{"deadline", 0, RequiredArg},
	{"delay-boot", 0, RequiredArg},
	{"dependency", 'd', RequiredArg},
	{"distribution", 'm', RequiredArg},
	{"error", 'e', RequiredArg},
	{"exclude", 'x', RequiredArg},
	{"exclusive", 0, OptionalArg},
	{"export", 0, RequiredArg},
	{"export-file", 0, RequiredArg},
	{"extra-node-info", 'B', RequiredArg},
	{"get-user-env", 0, OptionalArg},
	{"gid", 0, RequiredArg},
	{"glean", 0, OptionalArg},
	{"gpu-bind", 0, RequiredArg},
	{"gpu-freq", 0, RequiredArg},
	{"gpus", 'G', RequiredArg},
	{"gpus-per-node", 0, RequiredArg},
	{"gpus-per-socket", 0, RequiredArg},
	{"gpus-per-task", 0, RequiredArg},
	{"gres", 0, RequiredArg},
	{"gres-flags", 0, RequiredArg},
	{"help", 'h', NoArg},
	{"hint", 0, RequiredArg},
	{"hold", 'H', NoArg},
	{"ignore-pbs", 0, NoArg},
	{"input", 'i', RequiredArg},
	{"job-name", 'J', RequiredArg},
	{"kill-on-invalid-dep", 0, RequiredArg},
	{"licenses", 'L', RequiredArg},
	{"mail-type", 0, RequiredArg},
	{"mail-user", 0, RequiredArg},
	{"mcs-label", 0, RequiredArg},
	{"mem", 0, RequiredArg},
	{"mem-bind", 0, RequiredArg},
	{"mem-per-cpu", 0, RequiredArg},
	{"mem-per-gpu", 0, RequiredArg},
	{"mincpus", 0, RequiredArg},
	{"network", 0, RequiredArg},
	{"nice", 0, OptionalArg},
	{"no-kill", 'k', OptionalArg},
	{"no-requeue", 0, NoArg},
	{"nodefile", 'F', RequiredArg},
	{"nodelist", 'w', RequiredArg},
	{"nodes", 'N', RequiredArg},
	{"ntasks", 'n', RequiredArg},
	{"ntasks-per-core", 0, RequiredArg},
	{"ntasks-per-gpu", 0, RequiredArg},
	{"ntasks-per-node", 0, RequiredArg},
	{"ntasks-per-socket", 0, RequiredArg},
	{"ntasks-per-tres", 0, RequiredArg},
	{"open-mode", 0, RequiredArg},
	{"output", 'o', RequiredArg},
	{"overcommit", 'O', NoArg},
	{"oversubscribe", 's', NoArg},
	{"parsable", 0, NoArg},
	{"partition", 'p', RequiredArg},
	{"power", 0, RequiredArg},
	{"prefer", 0, RequiredArg},
	{"priority", 0, RequiredArg},
	{"profile", 0, RequiredArg},
	{"propagate", 0, OptionalArg},
	{"qos", 'q', RequiredArg},
	{"quiet", 'Q', NoArg},
	{"reboot", 0, NoArg},
	{"requeue", 0, NoArg},
	{"reservation", 0, RequiredArg},
	{"signal", 0, RequiredArg},
	{"sockets-per-node", 0, RequiredArg},
	{"spread-job", 0, NoArg},
	{"switches", 0, RequiredArg},
	{"test-only", 0, NoArg},
	{"thread-spec", 0, RequiredArg},
	{"threads-per-core", 0, RequiredArg},
	{"time", 't', RequiredArg},
	{"time-min", 0, RequiredArg},
	{"tmp", 0, RequiredArg},
	{"uid", 0, RequiredArg},
	{"usage", 0, NoArg},
	{"use-min-nodes", 0, NoArg},
	{"verbose", 'v', NoArg},
	{"version", 'V', NoArg},
	{"wait", 'W', NoArg},
	{"wait-all-nodes", 0, RequiredArg},
	{"wckey", 0, RequiredArg},
	{"wrap", 0, RequiredArg},
}

// aliases are long names that getopt knows besides the canonical ones.
var aliases = map[string]string{"tasks-per-node": "ntasks-per-node"}

var (
	byLong  = map[string]*Option{}
	byShort [256]*Option
	longs   []string // every long name getopt matches prefixes against, sorted
)

func init() {
	for i := range optionTable {
		o := &optionTable[i]
		byLong[o.Long] = o
		if o.Short != 0 {
			byShort[o.Short] = o
		}
		longs = append(longs, o.Long)
	}
	for a, c := range aliases {
		byLong[a] = byLong[c]
		longs = append(longs, a)
	}
	sort.Strings(longs)
}

// Options returns a copy of the option table, for tests and docs.
func Options() []Option { return append([]Option(nil), optionTable...) }

// lookupLong finds a long option as getopt_long does: an exact name, else a
// unique prefix (several prefixes of one option count as one). arg is the
// whole word ("--par=x"), for glibc's error text.
func lookupLong(name, arg string) (*Option, error) {
	if o, ok := byLong[name]; ok {
		return o, nil
	}
	var match *Option
	var cands []string
	ambiguous := false
	i := sort.SearchStrings(longs, name)
	for ; name != "" && i < len(longs) && strings.HasPrefix(longs[i], name); i++ {
		o := byLong[longs[i]]
		cands = append(cands, "'--"+longs[i]+"'")
		if match != nil && match != o {
			ambiguous = true
		}
		match = o
	}
	switch {
	case match == nil:
		return nil, &OptError{Msg: fmt.Sprintf("unrecognized option '%s'", arg), Unknown: "--" + name}
	case ambiguous:
		return nil, &OptError{Msg: fmt.Sprintf("option '%s' is ambiguous; possibilities: %s", arg, strings.Join(cands, " "))}
	}
	return match, nil
}

// OptError is an option error in getopt's words: Error() is what sbatch
// prints after "sbatch: ".
type OptError struct {
	Msg string
	// Unknown is the option as written ("--container-image", "-X") when
	// it is not in the table: sbatch may know it (a site's SPANK plugin),
	// glean does not.
	Unknown string
	Line    int // the script line, for an #SBATCH directive
}

func (e *OptError) Error() string { return e.Msg }
