// Package spank tests spank/glean.so, the SPANK plugin that makes
// `--glean[=k=v,...]` a valid sbatch/salloc/srun option, against a real
// loopback Slurm 22.05 with the real clients (never glean's sbatch wrapper).
package spank

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/tests/slurmtest"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// plugin builds spank/glean.so with `make spank` (as `make build` does), so
// that `go test ./...` works on a clean checkout, and returns its path.
func plugin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		repo := filepath.Join(filepath.Dir(file), "..", "..")
		out, err := exec.Command("make", "-s", "-C", repo, "spank").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("make spank: %v: %s", err, out)
			return
		}
		buildPath = filepath.Join(repo, "spank", "glean.so")
	})
	if buildErr != nil {
		if os.Getenv("GLEAN_REQUIRE_SLURM") == "1" || slurmtest.Unavailable() == "" {
			t.Fatal(buildErr) // Slurm is here, so its headers should be too
		}
		t.Skip(buildErr)
	}
	return buildPath
}

// realSbatch is Slurm's own sbatch, not a wrapper earlier in PATH.
func realSbatch(t *testing.T) string {
	if _, err := os.Stat("/usr/bin/sbatch"); err == nil {
		return "/usr/bin/sbatch"
	}
	p, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs a Slurm client against c and returns what it printed and its exit
// code; only a failure to start it (or a timeout) fails the test.
func run(t *testing.T, c *slurmtest.Cluster, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := c.Command(ctx, name, args...)
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) || ctx.Err() != nil {
		t.Fatalf("%s %s: %v (%v): %s", name, strings.Join(args, " "), err, ctx.Err(), errb.String())
	}
	if ee != nil && !ee.Exited() {
		t.Fatalf("%s %s died: %v: %s", name, strings.Join(args, " "), err, errb.String())
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// gleanLines are the lines of s that the plugin wrote.
func gleanLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "glean:") {
			out = append(out, l)
		}
	}
	return out
}

func jobCount(t *testing.T, c *slurmtest.Cluster) int {
	return len(strings.Fields(c.Run(t, "squeue", "-h", "-r", "-t", "all", "-o", "%i")))
}

func TestPlugin(t *testing.T) {
	t.Parallel()
	so := plugin(t)
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 4, Spank: so})
	sbatch := realSbatch(t)

	// (1) The option is in every client's --help, under the plugins' heading.
	t.Run("Help", func(t *testing.T) {
		for _, client := range []string{sbatch, "salloc", "srun"} {
			r := run(t, c, nil, client, "--help")
			_, plugins, ok := strings.Cut(r.stdout, "Options provided by plugins:")
			if r.code != 0 || !ok || !strings.Contains(plugins, "--glean=[k=v,...]") ||
				!strings.Contains(plugins, "Run this array job elastically on idle nodes") {
				t.Errorf("%s --help (exit %d) does not list --glean with its help text:\n%s%s", client, r.code, r.stdout, r.stderr)
			}
		}
	})

	// (2) #SBATCH --glean through the real sbatch: a plain array job whose
	// elements all run, each with its own output and its own -t.
	t.Run("ArrayJob", func(t *testing.T) {
		dir := t.TempDir()
		script := filepath.Join(dir, "elastic.sh")
		body := "#!/bin/sh\n#SBATCH --array=0-3\n#SBATCH --glean=mode=fair,checkpoint=yes\n#SBATCH -t 1\n" +
			"#SBATCH -o " + dir + "/out-%A_%a.txt\n" +
			"echo \"task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID: $SLURM_SPANK__SLURM_SPANK_OPTION_glean_glean\"\n"
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		r := run(t, c, nil, sbatch, "--parsable", script)
		id := strings.TrimSpace(r.stdout)
		if r.code != 0 || id == "" || len(gleanLines(r.stderr)) != 0 {
			t.Fatalf("sbatch %s: exit %d, stdout %q, stderr %q", script, r.code, r.stdout, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(c.Run(t, "scontrol", "-o", "show", "job", id)), "\n") {
			if !strings.Contains(line, " TimeLimit=00:01:00 ") {
				t.Errorf("array element without its -t 1: %s", line)
			}
		}
		var states string
		c.WaitFor(t, 60*time.Second, "4 array elements COMPLETED", func() bool {
			states = c.Run(t, "squeue", "-h", "-r", "-t", "all", "-j", id, "-o", "%i %T")
			return strings.Count(states, " COMPLETED") == 4
		})
		if n := len(strings.Split(strings.TrimSpace(states), "\n")); n != 4 {
			t.Fatalf("squeue shows %d elements, want 4:\n%s", n, states)
		}
		for i := 0; i < 4; i++ {
			f := filepath.Join(dir, fmt.Sprintf("out-%s_%d.txt", id, i))
			data, err := os.ReadFile(f)
			// The option reaches the job's environment: the inheritance
			// gotcha glean's agent must scrub (spank/glean.c).
			want := fmt.Sprintf("task %d of %s: mode=fair,checkpoint=yes\n", i, id)
			if err != nil || string(data) != want {
				t.Errorf("%s = %q, %v; want %q", f, data, err, want)
			}
		}
	})

	// Well-formed values pass, in sbatch (allocator context), srun (local,
	// then slurmstepd: remote) and salloc.
	t.Run("GoodValues", func(t *testing.T) {
		for _, v := range []string{"", "=", "=mode=scavenger", "=mode=thesis,pty=no,batch=20,budget=12.5",
			"=dir=/scratch/u/data_1,profile=cal.v2-a,deadline=2030-01-31T18:00:00+01:00",
			"=deadline=now+2hours,checkpoint=no,pty=yes"} {
			r := run(t, c, nil, sbatch, "--test-only", "--glean"+v, "--wrap", "true")
			if r.code != 0 || len(gleanLines(r.stderr)) != 0 {
				t.Errorf("sbatch --test-only --glean%s: exit %d, stderr %q", v, r.code, r.stderr)
			}
		}
		for _, client := range [][]string{{"srun"}, {"salloc"}} {
			r := run(t, c, nil, client[0], "-t", "1", "--glean=mode=fair", "true")
			if r.code != 0 || len(gleanLines(r.stderr)) != 0 {
				t.Errorf("%s --glean=mode=fair true: exit %d, stderr %q", client[0], r.code, r.stderr)
			}
		}
	})

	// (3) A malformed value: one "glean:" line naming the key and what is
	// allowed. Though the plugin is `optional`, a failing option callback
	// makes sbatch exit 255 on 22.05.8: nothing is submitted.
	t.Run("BadValues", func(t *testing.T) {
		before := jobCount(t, c)
		for _, tc := range []struct{ value, want string }{
			{"bogus=1", "unknown key 'bogus'; allowed keys: mode, dir, batch, checkpoint, pty, deadline, budget, profile"},
			{"mode=fast", "bad value 'fast' for key 'mode'; allowed: fair|scavenger|thesis"},
			{"mode=fair,checkpoint=maybe", "for key 'checkpoint'; allowed: yes|no"},
			{"batch=0", "for key 'batch'"},
			{"budget=1.2.3", "for key 'budget'"},
			{"profile=a/b", "for key 'profile'"},
			{"dir=a b", "for key 'dir'"},
			{"pty=yes,pty=no", "key 'pty' given twice"},
			{"fair", "'fair' is not key=value"},
			{"mode=fair,", "is not key=value"},
			{"\x1b[31mred=1", "unknown key '?[31mred'"},
			{"dir=" + strings.Repeat("d", 3000), "value longer than 2048 bytes"},
		} {
			r := run(t, c, nil, sbatch, "--glean="+tc.value, "--wrap", "true")
			lines := gleanLines(r.stderr)
			if r.code != 255 || strings.Contains(r.stdout, "Submitted") || len(lines) != 1 ||
				!strings.Contains(lines[0], "sbatch: error: glean: --glean: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("sbatch --glean=%.40q: exit %d (want 255), stdout %q, glean lines %q (want one with %q)",
					tc.value, r.code, r.stdout, lines, tc.want)
			}
		}
		// The same in a script's #SBATCH line, and in srun and salloc.
		script := filepath.Join(t.TempDir(), "bad.sh")
		if err := os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH --glean=bogus=1\ntrue\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{sbatch, script}, {"srun", "--glean=bogus=1", "true"}, {"salloc", "--glean=bogus=1", "true"}} {
			r := run(t, c, nil, args[0], args[1:]...)
			if lines := gleanLines(r.stderr); r.code != 255 || len(lines) != 1 || !strings.Contains(lines[0], "unknown key 'bogus'") {
				t.Errorf("%s: exit %d (want 255), stderr %q", strings.Join(args, " "), r.code, r.stderr)
			}
		}
		if after := jobCount(t, c); after != before {
			t.Errorf("refused submissions created jobs: %d jobs before, %d after", before, after)
		}
	})

	// The inheritance gotcha: the option's environment variable, as a job
	// sees it, counts as --glean for an sbatch run inside that job.
	t.Run("InheritedOption", func(t *testing.T) {
		env := []string{"SLURM_SPANK__SLURM_SPANK_OPTION_glean_glean=bogus=2"}
		r := run(t, c, env, sbatch, "--test-only", "--wrap", "true")
		if r.code == 0 || len(gleanLines(r.stderr)) != 1 || !strings.Contains(r.stderr, "unknown key 'bogus'") ||
			!strings.Contains(r.stderr, "for environment variable: SLURM_SPANK__SLURM_SPANK_OPTION_glean_glean") {
			t.Errorf("sbatch with an inherited bad option: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// (4) Without the plugin, the real sbatch does not know --glean: a script
// with #SBATCH --glean fails outright. This is why sites load the plugin.
func TestWithoutPlugin(t *testing.T) {
	t.Parallel()
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1})
	sbatch := realSbatch(t)
	if r := run(t, c, nil, sbatch, "--help"); strings.Contains(r.stdout, "--glean") {
		t.Errorf("sbatch --help lists --glean without the plugin:\n%s", r.stdout)
	}
	script := filepath.Join(t.TempDir(), "elastic.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH --array=0-3\n#SBATCH --glean=mode=fair\ntrue\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--glean=mode=fair", "--wrap", "true"}, {script}} {
		r := run(t, c, nil, sbatch, args...)
		if r.code != 255 || !strings.Contains(r.stderr, "unrecognized option") || !strings.Contains(r.stderr, "--glean") {
			t.Errorf("sbatch %s without the plugin: exit %d, stderr %q; want 255 and an unrecognized option --glean",
				strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if n := jobCount(t, c); n != 0 {
		t.Errorf("%d jobs exist, want none", n)
	}
}
