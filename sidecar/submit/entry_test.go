package submit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
)

func build(t *testing.T, args []string, script string, env []string, mod func(*config.Config)) (*Built, error) {
	t.Helper()
	req, err := ParseCLI(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.AddScript("job.sh", []byte(script)); err != nil {
		t.Fatal(err)
	}
	req.AddEnv(env)
	cfg := config.Default()
	if mod != nil {
		mod(&cfg)
	}
	return BuildEntry(req, Input{Config: cfg, Env: env, Cwd: "/home/u", User: "u", Now: time.Unix(1_800_000_000, 0),
		Script: []byte(script), ScriptName: "/home/u/job.sh"})
}

const elasticScript = "#!/bin/sh\n#SBATCH --glean\n#SBATCH -t 10 -c 2 --mem=2G\necho\n"

func TestBuildEntry(t *testing.T) {
	b, err := build(t, []string{"--array=0-149%8", "-n", "2", "job.sh"}, elasticScript, []string{"HOME=/home/u", "SLURM_X=1", "SBATCH_PARTITION=batch"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := b.Entry
	r := e.Resources
	if e.Tasks != 150 || e.Array.Throttle != 8 || e.Mode != "fair" || e.Name != "job.sh" || e.Cwd != "/home/u" {
		t.Errorf("entry %+v", e)
	}
	if r.CPUsPerTask != 2 || r.NTasks != 2 || r.CPUs != 4 || r.MemMB != 2048 || r.TimeLimit != 10 {
		t.Errorf("resources %+v", r)
	}
	if string(b.Env) != "HOME=/home/u\x00SLURM_X=1\x00SBATCH_PARTITION=batch\x00" {
		t.Errorf("env %q", b.Env)
	}
	var from []string
	for _, o := range e.Options {
		from = append(from, o.Name+"@"+o.From)
	}
	if got := strings.Join(from, " "); !strings.Contains(got, "array@command line") || !strings.Contains(got, "partition@environment") || !strings.Contains(got, "time@script") {
		t.Errorf("options %s", got)
	}
}

func TestBuildEntryRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		script string
		code   int
		msg    string
	}{
		{"multi-node", []string{"-N", "2", "job.sh"}, elasticScript, 1, "-N 1"},
		{"hold", []string{"-H", "job.sh"}, elasticScript, 1, "--hold: the id is an anchor job"},
		{"thesis not allowed", []string{"--glean=mode=thesis", "job.sh"}, elasticScript, 1, "mode=thesis is for admins"},
		{"bad glean key", []string{"--glean=colour=red", "job.sh"}, elasticScript, 255, `unknown key "colour"`},
		{"clusters", []string{"-M", "other", "job.sh"}, elasticScript, 1, "--clusters=other: glean runs elastic jobs on its own cluster"},
		{"singleton", []string{"--dependency=singleton", "job.sh"}, elasticScript, 1, "singleton is not supported"},
		{"aftercorr", []string{"--dependency=afterok:4,aftercorr:5", "job.sh"}, elasticScript, 1, "aftercorr is not supported"},
		{"dependency element", []string{"--dependency=afterok:5_x", "job.sh"}, elasticScript, 255, `--dependency=afterok:5_x: afterok: "5_x": bad array index`},
		{"dependency id", []string{"--dependency=afterok:abc", "job.sh"}, elasticScript, 255, `"abc": bad job id`},
		{"dependency type", []string{"--dependency=afterfoo:5", "job.sh"}, elasticScript, 255, `unknown dependency type "afterfoo"`},
		{"bad time", []string{"-t", "zz", "job.sh"}, elasticScript, 255, `--time=zz: "zz" is not a time limit`},
		{"bad array", []string{"--array=5-1", "job.sh"}, elasticScript, 255, "--array=5-1: range"},
		{"too many tasks", []string{"--array=0-2000000", "job.sh"}, elasticScript, 1, "at most 1000000 per elastic job"},
		{"het job", []string{"job.sh"}, "#!/bin/sh\n#SBATCH --glean -t 1\n#SBATCH hetjob\n#SBATCH -t 2\n", 1, "heterogeneous"},
		{"no shebang", []string{"job.sh"}, "#SBATCH --glean\necho\n", 1, "does not look like a batch script"},
		{"export-file", []string{"--export-file=/x", "job.sh"}, elasticScript, 1, "use --export instead"},
		{"mem and mem-per-cpu", []string{"--mem-per-cpu=100", "job.sh"}, elasticScript, 1, "mutually exclusive"},
		{"array and dir", []string{"--glean=dir=/tmp", "--array=0-3", "job.sh"}, elasticScript, 1, "give one; the data folder defines the array"},
		{"missing dir", []string{"--glean=dir=/nonexistent/data", "job.sh"}, elasticScript, 1, "no such file"},
		{"deadline passed", []string{"--glean=deadline=2020-01-01", "job.sh"}, elasticScript, 1, "has passed"},
		{"uid", []string{"--uid=0", "job.sh"}, elasticScript, 1, "--uid=0: elastic jobs run as the submitting user"},
		{"gid", []string{"--gid=root", "job.sh"}, elasticScript, 1, "--gid=root: elastic jobs run with the submitting user's group"},
		// Found by FuzzBuildEntry: JSON would turn the bad bytes into
		// U+FFFD, and the task's output would go to another file.
		// Found by FuzzBuildEntry: the daemon would have rejected it after
		// the user saw an id.
		{"job name with a control character", []string{"-J", "a\x0eb", "job.sh"}, elasticScript, 1, "has control characters"},
		{"output not UTF-8", []string{"-o", "out\xff.txt", "job.sh"}, elasticScript, 1, "is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := build(t, tc.args, tc.script, nil, nil)
			var r *Refusal
			if !errors.As(err, &r) || r.Code != tc.code || !strings.Contains(r.Msg, tc.msg) {
				t.Fatalf("err = %v, want code %d with %q", err, tc.code, tc.msg)
			}
		})
	}
	if _, err := build(t, []string{"--glean=mode=thesis", "job.sh"}, elasticScript, nil, func(c *config.Config) { c.Policy.AllowThesis = true }); err != nil {
		t.Errorf("thesis where allowed: %v", err)
	}
	if _, err := build(t, []string{"-N", "1-1", "job.sh"}, elasticScript, nil, nil); err != nil {
		t.Errorf("-N 1-1: %v", err)
	}
}

// --dependency takes what slurmctld takes (its syntax, not whether the
// jobs exist): array elements ("5_1", "5_[1,3]", whose ',' is not a
// separator), whole arrays ("5_*"), the type in any case, the old form of
// bare ids; the value goes into the entry as given, for gleand to evaluate
// with the same parser.
func TestBuildEntryDependencyForms(t *testing.T) {
	for _, dep := range []string{"afterok:5_1", "afterany:5_[1,3]", "afterok:5_[0-9:3]?afternotok:6", "afterok:5_*",
		"AfterOK:5", "5,6", "after:5+10:6", "afterok:5:6_2,afterany:7"} {
		b, err := build(t, []string{"--dependency=" + dep, "job.sh"}, elasticScript, nil, nil)
		if err != nil {
			t.Errorf("--dependency=%s: %v", dep, err)
			continue
		}
		if b.Entry.Dependency != dep {
			t.Errorf("--dependency=%s: entry has %q", dep, b.Entry.Dependency)
		}
	}
}

func TestBuildEntryDataFolder(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b", "a", "c", ".hidden", "d", "e"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	b, err := build(t, []string{"--glean=dir=" + dir + ",batch=2", "job.sh"}, elasticScript, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := b.Entry
	if e.Tasks != 3 || e.Array.String() != "0-2" || e.Items.Count != 5 || e.Items.Batch != 2 || string(b.Items) != "a\nb\nc\nd\ne\n" {
		t.Fatalf("entry %+v items %q", e.Items, b.Items)
	}
}

func TestCaptureEnv(t *testing.T) {
	env := []string{"HOME=/h", "SLURM_A=1", "FOO=f", "SECRET=s"}
	for _, tc := range []struct{ export, want string }{
		{"ALL", "HOME=/h SLURM_A=1 FOO=f SECRET=s"},
		{"NONE", "SLURM_A=1"},
		{"FOO,BAR=2", "SLURM_A=1 FOO=f BAR=2"},
		{"ALL,FOO=g", "HOME=/h SLURM_A=1 FOO=g SECRET=s"},
		{"MISSING", "SLURM_A=1"},
	} {
		got, err := captureEnv(env, tc.export)
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSpace(strings.ReplaceAll(string(got), "\x00", " ")); s != tc.want {
			t.Errorf("--export=%s: %q, want %q", tc.export, s, tc.want)
		}
	}
}

func TestJobName(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		script string
		want   string
	}{
		{[]string{"--wrap", "true"}, "", "wrap"},
		{nil, "", "sbatch"},
		{[]string{"x.sh"}, "/a/b/x.sh", "x.sh"},
		{[]string{"-J", "n", "x.sh"}, "/a/b/x.sh", "n"},
	} {
		req, _ := ParseCLI(tc.args)
		if got := req.jobName(tc.script); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// The captured environment carries SLURM_UMASK, as sbatch sets it: the
// agent creates -o/-e files under the submitter's umask (a user with
// umask 077 gets private outputs, not 0644 ones).
func TestWithUmask(t *testing.T) {
	env := []string{"HOME=/h"}
	got := withUmask(env, 0o077)
	if strings.Join(got, " ") != "HOME=/h SLURM_UMASK=0077" || len(env) != 1 {
		t.Errorf("withUmask: %q (input %q)", got, env)
	}
	if got := withUmask([]string{"SLURM_UMASK=0002"}, 0o077); strings.Join(got, " ") != "SLURM_UMASK=0002" {
		t.Errorf("a user's own SLURM_UMASK was replaced: %q", got)
	}
	b, err := build(t, []string{"job.sh"}, elasticScript, withUmask([]string{"A=1"}, 0o027), nil)
	if err != nil || !strings.Contains(string(b.Env), "SLURM_UMASK=0027\x00") {
		t.Errorf("captured %q, %v", b.Env, err)
	}
	if b, err := build(t, []string{"--export=NONE", "job.sh"}, elasticScript, withUmask(nil, 0o077), nil); err != nil || string(b.Env) != "SLURM_UMASK=0077\x00" {
		t.Errorf("--export=NONE keeps SLURM_* variables: %q, %v", b.Env, err)
	}
}
