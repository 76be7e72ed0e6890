package submit

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/slurm"
)

// Request is a submission as sbatch would see it: the command line, the
// environment's SBATCH_* settings and the script's directives, and what is
// in force after sbatch's precedence (script < environment < command line).
type Request struct {
	Args     []string  // the command line after "sbatch"
	CLI      []Setting // options on the command line
	Operands []string  // script path and its arguments; empty: --wrap or stdin
	Env      []Setting
	Script   []Setting  // #SBATCH directives
	Dirs     Directives // the scanned directive block
	eff      map[*Option]Setting
}

// ParseCLI parses the command line. Errors are *OptError.
func ParseCLI(args []string) (*Request, error) {
	cli, ops, err := parseWords(args, FromCLI, nil)
	if err != nil {
		return nil, err
	}
	return &Request{Args: args, CLI: cli, Operands: ops}, nil
}

// Has reports whether the command line has option long (canonical name).
func (r *Request) HasCLI(long string) bool {
	for _, s := range r.CLI {
		if s.Opt.Long == long {
			return true
		}
	}
	return false
}

// cliValue returns the last command-line value of an option.
func (r *Request) cliValue(long string) (string, bool) {
	v, ok := "", false
	for _, s := range r.CLI {
		if s.Opt.Long == long {
			v, ok = s.Value, true
		}
	}
	return v, ok
}

// AddScript parses the script's directives (file names the script in
// errors). Errors are *OptError or *DirectiveError.
func (r *Request) AddScript(file string, script []byte) error {
	d, err := ScanDirectives(file, script)
	if err != nil {
		return err
	}
	r.Dirs = d
	sets, ops, err := parseWords(d.Words, FromScript, func(i int) int { return d.Lines[i] })
	if err != nil {
		return err
	}
	if len(ops) > 0 {
		return &DirectiveError{Msg: "Invalid directive found in batch script: " + ops[0]}
	}
	r.Script = sets
	return nil
}

// AddEnv takes the SBATCH_* settings of env.
func (r *Request) AddEnv(env []string) { r.Env = envSettings(env) }

// resolve computes what is in force: for each option the last setting of
// the highest layer.
func (r *Request) resolve() {
	r.eff = map[*Option]Setting{}
	for _, layer := range [][]Setting{r.Script, r.Env, r.CLI} {
		for _, s := range layer {
			r.eff[s.Opt] = s
		}
	}
}

// Get returns the setting in force for an option (canonical long name).
func (r *Request) Get(long string) (Setting, bool) {
	if r.eff == nil {
		r.resolve()
	}
	s, ok := r.eff[byLong[long]]
	return s, ok
}

// InForce lists every setting in force, in option-table order.
func (r *Request) InForce() []Setting {
	if r.eff == nil {
		r.resolve()
	}
	var out []Setting
	for i := range optionTable {
		if s, ok := r.eff[&optionTable[i]]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Partitions returns the partitions in force (-p a,b), or nil.
func (r *Request) Partitions() []string {
	s, ok := r.Get("partition")
	if !ok || s.Value == "" {
		return nil
	}
	return strings.Split(s.Value, ",")
}

// MentionsGlean is the quick test: does the user ask for glean's --glean
// option (or an abbreviation: "--gl" is unique among sbatch's options)
// where sbatch reads options? That is among the options before the script
// operand on the command line (RequestsGlean), in SBATCH_GLEAN, or among
// the #SBATCH directives as sbatch reads them (ScanDirectives: up to the
// first command line, comments and quoting as sbatch has them). If not
// (and the site marks no partition elastic) the submission is passed
// through untouched, whatever glean's option table makes of the rest: the
// word in a script argument, a job name, a path, a comment or the script's
// body never counts.
func MentionsGlean(args, env []string, script []byte) bool {
	if RequestsGlean(args) {
		return true
	}
	if _, ok := getenv(env, "SBATCH_GLEAN"); ok {
		return true
	}
	if script == nil {
		return false
	}
	d, _ := ScanDirectives("", script) // up to an error, the words sbatch would have read
	return RequestsGlean(d.Words)
}

// RequestsGlean reports whether words (a command line, or directive words)
// hold the --glean option among the options before the first operand, as
// getopt_long would find it: values of the options that take one are
// skipped. It does not need the words to parse: an option glean's table
// does not know (a site plugin's) is taken to have no value, so a word
// after it that is not an option ends the options there.
func RequestsGlean(words []string) bool {
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--" || len(w) < 2 || w[0] != '-':
			return false // the script operand (or "--" before it)
		case strings.HasPrefix(w, "--"):
			name, _, hasVal := strings.Cut(w[2:], "=")
			o, err := lookupLong(name, w)
			switch {
			case err != nil:
			case o.Long == "glean":
				return true
			case o.Arg == RequiredArg && !hasVal:
				i++ // its value
			}
		default: // a cluster of short options: -Hv, -t5, -t 5
			for j := 1; j < len(w); j++ {
				o := byShort[w[j]]
				if o == nil || o.Arg == OptionalArg {
					break
				}
				if o.Arg == RequiredArg {
					if j == len(w)-1 {
						i++ // its value is the next word
					}
					break
				}
			}
		}
	}
	return false
}

// parseSizeMB parses a Slurm memory size: a number with an optional unit
// K, M, G or T (M if none), as whole megabytes (rounded up).
func parseSizeMB(v string) (int64, error) {
	s := strings.TrimSpace(v)
	mult := float64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult, s = 1.0/1024, s[:n-1]
		case 'M', 'm':
			s = s[:n-1]
		case 'G', 'g':
			mult, s = 1024, s[:n-1]
		case 'T', 't':
			mult, s = 1024*1024, s[:n-1]
		}
	}
	if s == "" || strings.Trim(s, "0123456789") != "" || len(s) > 15 {
		return 0, fmt.Errorf("%q is not a size (write e.g. 4000, 500M or 8G)", v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	mb := float64(n) * mult
	if mb > 1<<40 {
		return 0, fmt.Errorf("%q is too large", v)
	}
	out := int64(mb)
	if float64(out) < mb {
		out++
	}
	return out, nil
}

// parsePositive parses a count of at least 1.
func parsePositive(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 1<<20 {
		return 0, fmt.Errorf("%q is not a positive count", v)
	}
	return n, nil
}

// parseMinutes parses a Slurm time limit into whole minutes (rounded up);
// 0 means no limit of its own (Slurm reads -t 0 as "no limit").
func parseMinutes(v string) (int, error) {
	d, err := parseDuration(v)
	if err != nil {
		return 0, err
	}
	if d == cluster.Unlimited {
		return 0, nil
	}
	m := int((d + time.Minute - 1) / time.Minute)
	return m, nil
}

func parseDuration(v string) (time.Duration, error) {
	d, err := slurm.ParseTimeLimit(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%q is not a time limit (write minutes, HH:MM:SS or D-HH:MM:SS)", v)
	}
	return d, nil
}

// jobName is the name sbatch gives a job: -J, else the script's base
// name, "wrap" for --wrap, "sbatch" for a script on stdin.
func (r *Request) jobName(script string) string {
	if s, ok := r.Get("job-name"); ok && s.Value != "" {
		return s.Value
	}
	if _, wrap := r.cliValue("wrap"); wrap {
		return "wrap"
	}
	if script == "" {
		return "sbatch"
	}
	return filepath.Base(script)
}
