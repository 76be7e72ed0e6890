package submit

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const jobScript = `#!/bin/sh
#SBATCH -J corpus
#SBATCH -t 3
#SBATCH -o out-%j.txt
echo hello
`

const lateDirectives = `#!/bin/sh
#SBATCH -J early
x=1
#SBATCH -J late
#SBATCH -t 9
echo $x
`

// corpus is the pass-through corpus: real invocations, each run with and
// without the wrapper.
func corpus() []inv {
	stdinScript := "#!/bin/sh\n#SBATCH -t 4\n#SBATCH -J fromstdin\necho from stdin # mentions glean after the directives\n"
	return []inv{
		{name: "script with directives", args: []string{"-H", "job.sh"}},
		{name: "parsable", args: []string{"-H", "--parsable", "job.sh"}},
		{name: "options after the script are its arguments", args: []string{"job.sh", "-H", "--bogus"}},
		{name: "script arguments", args: []string{"-H", "-J", "args", "job.sh", "a1", "--a2=x"}},
		{name: "wrap", args: []string{"-H", "--wrap", "echo hi"}},
		{name: "wrap with = and name", args: []string{"-H", "--wrap=echo hi; echo there", "-J", "wrapped"}},
		{name: "script on stdin", args: []string{"-H"}, stdin: stdinScript},
		{name: "script on stdin, parsable", args: []string{"-H", "--parsable", "-t", "2"}, stdin: stdinScript},
		{name: "common resources", args: []string{"-H", "-p", "batch", "-t", "5", "-c", "1", "--mem=100", "-N", "1", "-n", "1", "job.sh"}},
		{name: "array range", args: []string{"-H", "--array=0-3", "job.sh"}},
		{name: "array list with step", args: []string{"-H", "--array=1,3,5-11:2", "job.sh"}},
		{name: "array throttle parsable", args: []string{"-H", "-a", "0-15%4", "--parsable", "job.sh"}},
		{name: "array at MaxArraySize", args: []string{"-H", "--array=0-1000", "job.sh"}},
		{name: "array over MaxArraySize is rejected", args: []string{"-H", "--array=0-5000", "job.sh"}},
		{name: "bad array spec", args: []string{"-H", "--array=5-1", "job.sh"}},
		{name: "export NONE", args: []string{"-H", "--export=NONE", "job.sh"}},
		{name: "export ALL plus a value", args: []string{"-H", "--export=ALL,FOO=bar", "job.sh"}},
		{name: "export a list", args: []string{"-H", "--export=FOO,BAR=2", "job.sh"}, env: []string{"FOO=1"}},
		{name: "directives after the first command are ignored", args: []string{"-H", "late.sh"}},
		{name: "SBATCH_TIMELIMIT", args: []string{"-H", "job.sh"}, env: []string{"SBATCH_TIMELIMIT=7"}},
		{name: "SBATCH_PARTITION", args: []string{"-H", "job.sh"}, env: []string{"SBATCH_PARTITION=pilot"}},
		{name: "command line beats SBATCH_JOB_NAME beats script", args: []string{"-H", "-J", "cli", "job.sh"}, env: []string{"SBATCH_JOB_NAME=env"}},
		{name: "SBATCH_JOB_NAME beats script", args: []string{"-H", "job.sh"}, env: []string{"SBATCH_JOB_NAME=env"}},
		{name: "unknown option", args: []string{"--bogus-opt", "job.sh"}},
		{name: "ambiguous option", args: []string{"-H", "--par", "job.sh"}},
		{name: "missing argument", args: []string{"-H", "-t"}},
		{name: "flag with a value", args: []string{"--hold=yes", "job.sh"}},
		{name: "rejected partition", args: []string{"-H", "-p", "nosuch", "job.sh"}},
		{name: "bad time", args: []string{"-H", "-t", "zz", "job.sh"}},
		{name: "test-only", args: []string{"--test-only", "job.sh"}},
		{name: "version", args: []string{"--version"}},
		{name: "help", args: []string{"--help"}},
		{name: "usage", args: []string{"--usage"}},
		{name: "no shebang", args: []string{"-H", "noshebang.sh"}},
		{name: "missing script", args: []string{"-H", "nosuch.sh"}},
		{name: "empty stdin", args: []string{"-H"}, stdin: ""},
		{name: "quoted names and comment", args: []string{"-H", "-J", "name with spaces", "--comment", "a b#c", "job.sh"}},
		{name: "chdir", args: []string{"-H", "-D", "sub", "job.sh"}},
		{name: "output patterns", args: []string{"-H", "-o", "o-%x-%j.txt", "-e", "e-%j.txt", "job.sh"}},
		{name: "quiet", args: []string{"-Q", "-H", "job.sh"}},
		{name: "bad directive in the script", args: []string{"-H", "baddirective.sh"}},
		{name: "wait for a job's exit code", args: []string{"-W", "--wrap", "exit 3"}},
		{name: "heterogeneous job", args: []string{"-H", "-t", "1", ":", "-t", "2", "job.sh"}},
		{name: "GLEAN_DISABLE", args: []string{"-H", "job.sh"}, env: []string{"GLEAN_DISABLE=1"}},
		{name: "dependency", args: []string{"-H", "--dependency=afterok:1", "job.sh"}},
	}
}

func corpusFiles() map[string]string {
	return map[string]string{
		"job.sh":          jobScript,
		"late.sh":         lateDirectives,
		"noshebang.sh":    "echo no interpreter line\n",
		"baddirective.sh": "#!/bin/sh\n#SBATCH --bogus\ntrue\n",
		"sub/.keep":       "",
	}
}

var (
	submittedRe = regexp.MustCompile(`\d+`)
)

// normalize hides what differs between two identical submissions: job ids
// and times (every run of digits).
func normalize(s string) string { return submittedRe.ReplaceAllString(s, "N") }

// jobID extracts the id of a successful submission's output.
func jobID(out string) string {
	out = strings.TrimSpace(out)
	out = strings.TrimPrefix(out, "Submitted batch job ")
	id, _, _ := strings.Cut(out, ";")
	if id != "" && strings.Trim(id, "0123456789") == "" {
		return id
	}
	return ""
}

// queued is what Slurm queued for a job, minus what differs between two
// identical submissions (ids and times).
func queued(t *testing.T, id string) string {
	t.Helper()
	out, err := cl.Command(t.Context(), "scontrol", "-o", "show", "job", id).Output()
	if err != nil {
		return "(gone)"
	}
	var keep []string
	for _, rec := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// Once a job started, which scheduler started it (Scheduler=Main
		// or Backfill) is timing, and so is its TimeLimit: a job without
		// one showed UNLIMITED when the main scheduler started it and a
		// finite limit when backfill did (a fresh-clone run, -W).
		started := !strings.Contains(" "+rec+" ", " JobState=PENDING ")
		for _, f := range strings.Fields(rec) {
			k, _, _ := strings.Cut(f, "=")
			switch k {
			case "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime", "LastSchedEval", "Priority", "Reason", "JobState", "RunTime", "SchedNodeList", "NodeList", "BatchHost", "PreemptEligibleTime", "SuspendTime", "SecsPreSuspend", "Restarts", "TimeLeft", "Scheduler":
				continue
			case "TimeLimit":
				if started {
					continue
				}
			}
			keep = append(keep, normalize(f))
		}
	}
	sort.Strings(keep)
	return strings.Join(keep, " ")
}

// Pass-through is sacred: every invocation of the corpus gives the same
// stdout, stderr and exit code with the wrapper as without it (job ids
// aside), and Slurm queues the same job.
func TestPassThroughCorpus(t *testing.T) {
	e := setup(t)
	e.writeFiles(t, corpusFiles())
	cs := corpus()
	if len(cs) < 30 {
		t.Fatalf("corpus has %d invocations, want at least 30", len(cs))
	}
	for _, in := range cs {
		t.Run(in.name, func(t *testing.T) {
			plain := e.run(t, false, in)
			wrapped := e.run(t, true, in)
			compareRuns(t, plain, wrapped)
		})
	}
}

func compareRuns(t *testing.T, plain, wrapped result) {
	t.Helper()
	if plain.Code != wrapped.Code || normalize(plain.Stdout) != normalize(wrapped.Stdout) || normalize(plain.Stderr) != normalize(wrapped.Stderr) {
		t.Fatalf("with the wrapper:\n  exit %d\n  stdout %q\n  stderr %q\nwithout:\n  exit %d\n  stdout %q\n  stderr %q",
			wrapped.Code, wrapped.Stdout, wrapped.Stderr, plain.Code, plain.Stdout, plain.Stderr)
	}
	p, w := jobID(plain.Stdout), jobID(wrapped.Stdout)
	if (p == "") != (w == "") {
		t.Fatalf("job ids: %q without the wrapper, %q with it", p, w)
	}
	if p != "" {
		if qp, qw := queued(t, p), queued(t, w); qp != qw {
			t.Errorf("Slurm queued different jobs:\nwithout the wrapper: %s\nwith it:             %s", qp, qw)
		}
	}
}

// A broken glean never breaks plain sbatch: with the config missing, not
// TOML, or naming a spool that does not exist, and with a copy of the
// wrapper elsewhere, non-elastic submissions still behave exactly as
// without glean. (A missing glean binary is no longer survivable: the
// wrapper's first line names it; docs/submission.md says why.)
func TestPassThroughSurvivesBrokenGlean(t *testing.T) {
	e := setup(t)
	e.writeFiles(t, corpusFiles())
	broken := filepath.Join(e.Dir, "broken.toml")
	if err := os.WriteFile(broken, []byte("[spool\ndir = \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noSpool := filepath.Join(e.Dir, "nospool.toml")
	if err := os.WriteFile(noSpool, []byte("[spool]\ndir = \"/nonexistent/spool\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(e.Dir, "unreadable.toml")
	if err := os.WriteFile(unreadable, []byte("[spool]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A copy of the wrapper away from glean's bin directory: its first line
	// names glean by its absolute path.
	lone := filepath.Join(e.Dir, "lone", "wrappers")
	if err := os.MkdirAll(lone, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(e.Wrappers, "sbatch"))
	if err := os.WriteFile(filepath.Join(lone, "sbatch"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	some := []inv{corpus()[0], corpus()[1], corpus()[6], corpus()[23], corpus()[27], corpus()[30]}
	for _, variant := range []struct {
		name string
		env  []string
		path string
	}{
		{"config missing", []string{"GLEAN_CONFIG=/nonexistent/glean.toml"}, ""},
		{"config not TOML", []string{"GLEAN_CONFIG=" + broken}, ""},
		{"config unreadable", []string{"GLEAN_CONFIG=" + unreadable}, ""},
		{"spool missing", []string{"GLEAN_CONFIG=" + noSpool}, ""},
		{"wrapper copied elsewhere", nil, lone},
	} {
		for _, in := range some {
			t.Run(variant.name+"/"+in.name, func(t *testing.T) {
				plain := e.run(t, false, in)
				var wrapped result
				if variant.path != "" {
					in.env = append(append([]string{}, in.env...), "PATH="+variant.path+":"+basePath)
					wrapped = e.run(t, false, in)
				} else {
					wrapped = e.run(t, true, in, variant.env...)
				}
				compareRuns(t, plain, wrapped)
			})
		}
	}
}
