package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/sidecar/submit"
)

// TestMain lets this test binary stand in for two programs in the tests of
// the sbatch wrapper: glean itself, as a copy of wrappers/sbatch runs it
// (`<test binary> sbatch-wrapper <wrapper> ARGS`, or `sbatch ARGS`), wired
// as cmd/glean is; and the real sbatch (a link named sbatch, which glean
// runs with argv[0] "sbatch"), which writes what it got to $FAKE_SBATCH_DUMP.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == submit.WrapperCommand || os.Args[1] == "sbatch") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if filepath.Base(os.Args[0]) == "sbatch" {
		os.Exit(fakeSbatch())
	}
	os.Exit(m.Run())
}

// sbatchSeen is what the fake real sbatch got.
type sbatchSeen struct {
	Args   []string // argv
	Env    []string // the environment block as it came (/proc/self/environ)
	Script string   // the script: the first argument naming a file, else stdin
	Fds    []string // what descriptors 0-9 are (readlink), "" if closed
}

// fakeSbatch reports what it got to $FAKE_SBATCH_DUMP (one JSON line per
// run), prints a job id like sbatch, and exits $FAKE_SBATCH_EXIT. With
// FAKE_SBATCH_NO_READ=1 it reads no script.
func fakeSbatch() int {
	seen := sbatchSeen{Args: os.Args, Env: rawEnviron()}
	for fd := range 10 {
		l, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		seen.Fds = append(seen.Fds, l)
	}
	parsable := false
	if os.Getenv("FAKE_SBATCH_NO_READ") != "1" {
		var script []byte
		operand := ""
		for i := 1; i < len(os.Args); i++ {
			a := os.Args[i]
			if a == "--parsable" {
				parsable = true
			}
			if _, err := os.Stat(a); err == nil && !strings.HasPrefix(a, "-") {
				operand = a // the script (an option's value would not name a file here)
				break
			}
		}
		if operand != "" {
			script, _ = os.ReadFile(operand)
		} else {
			script, _ = io.ReadAll(os.Stdin)
		}
		seen.Script = string(script)
	}
	if dump := os.Getenv("FAKE_SBATCH_DUMP"); dump != "" {
		line, _ := json.Marshal(seen)
		f, err := os.OpenFile(dump, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return 99
		}
		f.Write(append(line, '\n'))
		f.Close()
	}
	if parsable {
		fmt.Println("42")
	} else {
		fmt.Println("Submitted batch job 42")
	}
	var code int
	fmt.Sscan(os.Getenv("FAKE_SBATCH_EXIT"), &code)
	return code
}

// wrapperEnv is a copy of wrappers/sbatch whose first line names this
// test binary, ahead of a fake real sbatch in PATH, with a config.
type wrapperEnv struct {
	Dir     string
	Wrapper string // <Dir>/wrappers/sbatch
	Real    string // <Dir>/real/sbatch, the fake real sbatch
	Dump    string
	Config  string
}

func newWrapperEnv(t *testing.T) *wrapperEnv {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &wrapperEnv{Dir: dir, Wrapper: filepath.Join(dir, "wrappers", "sbatch"), Real: filepath.Join(dir, "real", "sbatch"),
		Dump: filepath.Join(dir, "dump"), Config: filepath.Join(dir, "glean.toml")}
	src, err := os.ReadFile(filepath.Join("..", "..", "wrappers", "sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := submit.PointWrapper(src, exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(e.Wrapper), filepath.Dir(e.Real), filepath.Join(dir, "spool")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.Wrapper, script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, e.Real); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[spool]\ndir = %q\n", filepath.Join(dir, "spool"))
	if err := os.WriteFile(e.Config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// env is a plain environment for the wrapper: its directory first in PATH.
func (e *wrapperEnv) env(extra ...string) []string {
	return append([]string{"PATH=" + filepath.Dir(e.Wrapper) + ":" + filepath.Dir(e.Real) + ":/usr/bin:/bin",
		"GLEAN_CONFIG=" + e.Config, "FAKE_SBATCH_DUMP=" + e.Dump, "LANG=C"}, extra...)
}

// seen returns what the fake real sbatch reported, one entry per run.
func (e *wrapperEnv) seen(t *testing.T) []sbatchSeen {
	t.Helper()
	data, err := os.ReadFile(e.Dump)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []sbatchSeen
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var s sbatchSeen
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}

// started is a wrapper run under way.
type started struct {
	proc           *os.Process
	stdout, stderr *os.File // files the run writes, read after it ends
}

// start runs the wrapper by execve, as a shell's `exec sbatch ARGS` would,
// with exactly env (os.StartProcess passes duplicates and odd entries as
// they are) and stdin (nil: /dev/null).
func (e *wrapperEnv) start(t *testing.T, args, env []string, stdin *os.File, extra ...*os.File) *started {
	t.Helper()
	return e.startProgram(t, e.Wrapper, args, env, stdin, extra...)
}

// startProgram is start for another program than the wrapper; extra are
// its descriptors 3, 4, ...
func (e *wrapperEnv) startProgram(t *testing.T, prog string, args, env []string, stdin *os.File, extra ...*os.File) *started {
	t.Helper()
	out, err := os.CreateTemp(e.Dir, "stdout")
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.CreateTemp(e.Dir, "stderr")
	if err != nil {
		t.Fatal(err)
	}
	if stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
	}
	p, err := os.StartProcess(prog, append([]string{"sbatch"}, args...), &os.ProcAttr{Dir: e.Dir, Env: env, Files: append([]*os.File{stdin, out, errf}, extra...),
		Sys: &syscall.SysProcAttr{Setpgid: true}}) // its own group, all killed on a time-out
	if err != nil {
		t.Fatal(err)
	}
	return &started{proc: p, stdout: out, stderr: errf}
}

// wait waits for the run to end, at most until deadline, and returns its
// status and output.
func (s *started) wait(t *testing.T, deadline time.Duration) (syscall.WaitStatus, string, string) {
	t.Helper()
	done := make(chan *os.ProcessState, 1)
	go func() {
		st, _ := s.proc.Wait()
		done <- st
	}()
	var st *os.ProcessState
	select {
	case st = <-done:
	case <-time.After(deadline):
		syscall.Kill(-s.proc.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the wrapper had not ended after %v", deadline)
	}
	read := func(f *os.File) string {
		data, _ := os.ReadFile(f.Name())
		f.Close()
		return string(data)
	}
	return st.Sys().(syscall.WaitStatus), read(s.stdout), read(s.stderr)
}

// run runs the wrapper to its end.
func (e *wrapperEnv) run(t *testing.T, args, env []string, stdin *os.File) (syscall.WaitStatus, string, string) {
	t.Helper()
	return e.start(t, args, env, stdin).wait(t, 30*time.Second)
}

// The real sbatch gets the environment byte for byte, whatever the shell
// behind /bin/sh would drop (dash: names that are not identifiers, such as
// the exported bash function of environment modules) or add (PWD), and
// duplicates, which Go's os.Environ drops: the wrapper's first line runs
// glean without any shell, and glean passes on /proc/self/environ.
func TestWrapperKeepsTheEnvironment(t *testing.T) {
	e := newWrapperEnv(t)
	odd := []string{"BASH_FUNC_module%%=() {  eval `/usr/bin/modulecmd bash $*`\n}", "A-B=1", "DUP=first", "DUP=second",
		"NOEQUALS", "=", "SPACE IN NAME=x", "EMPTY="}
	script := filepath.Join(e.Dir, "job.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH -t 5\ntrue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"plain submission", e.env(odd...)},
		{"GLEAN_DISABLE", e.env(append([]string{"GLEAN_DISABLE=1"}, odd...)...)},
		{"config missing", append(e.env(odd...), "GLEAN_CONFIG=/nonexistent/glean.toml")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(e.Dump)
			ws, stdout, stderr := e.run(t, []string{"-t", "5", script}, tc.env, nil)
			if ws.ExitStatus() != 0 || stdout != "Submitted batch job 42\n" || stderr != "" {
				t.Fatalf("exit %v, stdout %q, stderr %q", ws, stdout, stderr)
			}
			seen := e.seen(t)
			if len(seen) != 1 {
				t.Fatalf("the real sbatch ran %d times", len(seen))
			}
			if !slices.Equal(seen[0].Env, tc.env) {
				t.Errorf("the real sbatch got the environment\n%q\nwant\n%q", seen[0].Env, tc.env)
			}
			if want := []string{"sbatch", "-t", "5", script}; !slices.Equal(seen[0].Args, want) {
				t.Errorf("argv %q, want %q", seen[0].Args, want)
			}
		})
	}
}

// siteWrapper is a site's own sbatch wrapper, as public ones are written:
// it runs "the first sbatch in PATH outside its own directory". It counts
// its runs in its directory's "runs" and gives up after 5.
const siteWrapper = `#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd -P)
echo run >>"$here/runs"
[ "$(wc -l <"$here/runs")" -le 5 ] || { echo "site wrapper: run 6 times" >&2; exit 99; }
IFS=:
for d in $PATH; do
	[ "$(cd "$d" 2>/dev/null && pwd -P)" = "$here" ] && continue
	[ -x "$d/sbatch" ] && exec "$d/sbatch" "$@"
done
exit 127
`

// A site's own sbatch wrapper next to glean's in PATH, which runs the
// first sbatch in PATH outside its own directory, does not make an endless
// round: glean marks the submission (VisitedEnv) while it hands it to a
// script, and when its wrapper runs again it passes straight to the next
// sbatch not yet visited. Slurm's sbatch (an ELF binary here) never sees
// the mark, and neither does it when the mark comes from elsewhere.
func TestWrapperAndASiteWrapper(t *testing.T) {
	e := newWrapperEnv(t)
	site := filepath.Join(e.Dir, "site", "sbatch")
	if err := os.MkdirAll(filepath.Dir(site), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(site, []byte(siteWrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(e.Dir, "job.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH -t 5\ntrue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	glean, sited, real := filepath.Dir(e.Wrapper), filepath.Dir(site), filepath.Dir(e.Real)
	for _, tc := range []struct {
		name      string
		prog      string // what the user's sbatch is
		path      []string
		extra     []string
		siteRuns  int
		gleanEnvs []string // VisitedEnv values in the real sbatch's environment
	}{
		{"site's behind glean's", e.Wrapper, []string{glean, sited, real}, nil, 1, nil},
		{"site's ahead of glean's", site, []string{sited, glean, real}, nil, 2, nil},
		{"a mark from elsewhere", e.Wrapper, []string{glean, sited, real}, []string{submit.VisitedEnv + "=99999999\n" + site}, 1, nil},
		{"no site wrapper, a mark from elsewhere", e.Wrapper, []string{glean, real}, []string{submit.VisitedEnv + "=99999999\n" + site}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(e.Dump)
			os.Remove(filepath.Join(sited, "runs"))
			env := append(e.env(), tc.extra...)
			env[0] = "PATH=" + strings.Join(append(tc.path, "/usr/bin", "/bin"), ":")
			ws, stdout, stderr := e.startProgram(t, tc.prog, []string{"-t", "5", script}, env, nil).wait(t, 30*time.Second)
			if ws.ExitStatus() != 0 || stdout != "Submitted batch job 42\n" || stderr != "" {
				t.Fatalf("exit %v, stdout %q, stderr %q", ws, stdout, stderr)
			}
			runs, _ := os.ReadFile(filepath.Join(sited, "runs"))
			if n := bytes.Count(runs, []byte("\n")); n != tc.siteRuns {
				t.Errorf("the site's wrapper ran %d times, want %d", n, tc.siteRuns)
			}
			seen := e.seen(t)
			if len(seen) != 1 {
				t.Fatalf("the real sbatch ran %d times", len(seen))
			}
			if want := []string{"sbatch", "-t", "5", script}; !slices.Equal(seen[0].Args, want) {
				t.Errorf("argv %q, want %q", seen[0].Args, want)
			}
			for _, kv := range seen[0].Env {
				if strings.HasPrefix(kv, submit.VisitedEnv+"=") {
					t.Errorf("the real sbatch got %q", kv)
				}
			}
		})
	}
}

// writeFile writes a file in the test's directory and returns its path.
func (e *wrapperEnv) writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(e.Dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Only options count as asking for glean: "--glean" as a script argument,
// in a comment of the directive block or in the script's body does not, so
// a plain submission with an option glean's table lacks (a site plugin's,
// such as pyxis's --container-image) passes through untouched. An elastic
// one with such an option is refused in one line that names it.
func TestWrapperUnknownOptions(t *testing.T) {
	e := newWrapperEnv(t)
	job := e.writeFile(t, "job.sh", "#!/bin/sh\n#SBATCH -t 5\n# try --glean once this works\necho --glean\n")
	stdinJob := e.writeFile(t, "stdin.sh", "#!/bin/sh\n#SBATCH --container-image=img\n# --glean later\nsrun true\n")
	directive := e.writeFile(t, "elastic.sh", "#!/bin/sh\n#SBATCH --glean\n#SBATCH --container-image=img\ntrue\n")
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string // a file
		passed bool
		stderr string // with passed false
	}{
		{"a script argument", []string{"--container-image=img", job, "--glean"}, "", true, ""},
		{"comments on stdin", []string{"-t", "5"}, stdinJob, true, ""},
		{"elastic, on the command line", []string{"--glean", "--container-image=img", job}, "", false,
			"sbatch: error: glean: glean's sbatch wrapper does not know the option --container-image, so it cannot submit this job as elastic"},
		{"elastic, in the script", []string{directive}, "", false,
			"sbatch: error: glean: glean's sbatch wrapper does not know the option --container-image (#SBATCH, line 3), so it cannot submit this job as elastic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(e.Dump)
			stdin := openFile(t, tc.stdin)
			ws, stdout, stderr := e.run(t, tc.args, e.env(), stdin)
			seen := e.seen(t)
			if !tc.passed {
				if ws.ExitStatus() != 255 || len(seen) != 0 || !strings.HasPrefix(stderr, tc.stderr) ||
					strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "--help") {
					t.Fatalf("exit %v, %d runs of sbatch, stderr %q; want exit 255, none, one line starting %q", ws, len(seen), stderr, tc.stderr)
				}
				return
			}
			if ws.ExitStatus() != 0 || stdout != "Submitted batch job 42\n" || stderr != "" || len(seen) != 1 {
				t.Fatalf("exit %v, stdout %q, stderr %q, %d runs of sbatch", ws, stdout, stderr, len(seen))
			}
			if want := append([]string{"sbatch"}, tc.args...); !slices.Equal(seen[0].Args, want) {
				t.Errorf("argv %q, want %q", seen[0].Args, want)
			}
			if tc.stdin != "" {
				if want, _ := os.ReadFile(tc.stdin); seen[0].Script != string(want) {
					t.Errorf("the real sbatch read %q on stdin, want %q", seen[0].Script, want)
				}
			}
		})
	}
}

// A script typed at a terminal ends with one Ctrl-D: glean reads it to
// decide, and the real sbatch, run as a child, gets those bytes and then
// the end, not the terminal again (which would wait for a second Ctrl-D).
func TestWrapperScriptTypedAtATerminal(t *testing.T) {
	e := newWrapperEnv(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	typed := "#!/bin/sh\n#SBATCH -t 5\ntrue\n"
	run := e.start(t, []string{"-t", "5"}, e.env(), tty)
	if _, err := ptmx.Write([]byte(typed + "\x04")); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx) // the echo
	ws, stdout, stderr := run.wait(t, 10*time.Second)
	if ws.ExitStatus() != 0 || stdout != "Submitted batch job 42\n" || stderr != "" {
		t.Fatalf("exit %v, stdout %q, stderr %q", ws, stdout, stderr)
	}
	if seen := e.seen(t); len(seen) != 1 || seen[0].Script != typed {
		t.Fatalf("the real sbatch got %+v, want one run reading %q", seen, typed)
	}
}

// openFile opens a file for reading until the test ends (nil for "").
func openFile(t *testing.T, path string) *os.File {
	t.Helper()
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// pipeWith returns the read end of a pipe holding text, its write end closed.
func pipeWith(t *testing.T, text string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(text); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { r.Close() })
	return r
}

// A script operand that is a pipe (bash's <(...), /dev/stdin fed by a
// pipe or a heredoc, a named FIFO) reaches the real sbatch whole: glean
// reads a pipe named by /dev/stdin, /dev/fd/N or /proc/self/fd/N and feeds
// the same bytes on that descriptor, and leaves a named FIFO alone unless
// the submission asks for glean. Other inherited descriptors stay as they were.
func TestWrapperScriptFromAPipe(t *testing.T) {
	e := newWrapperEnv(t)
	text := "#!/bin/sh\n#SBATCH -t 5\n#SBATCH -J piped\ntrue\n"
	other, err := os.Open(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fifo := filepath.Join(e.Dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		operand string
		stdin   func() *os.File
		extra   func() []*os.File
	}{
		{"/dev/fd/3", "/dev/fd/3", nil, func() []*os.File { return []*os.File{pipeWith(t, text), other} }},
		{"/proc/self/fd/4", "/proc/self/fd/4", nil, func() []*os.File { return []*os.File{other, pipeWith(t, text)} }},
		{"/dev/stdin", "/dev/stdin", func() *os.File { return pipeWith(t, text) }, nil},
		{"a named FIFO", fifo, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(e.Dump)
			var stdin *os.File
			if tc.stdin != nil {
				stdin = tc.stdin()
			}
			var extra []*os.File
			if tc.extra != nil {
				extra = tc.extra()
			}
			if tc.operand == fifo {
				go func() { // blocks until a reader opens it: the real sbatch, not glean
					if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
						w.WriteString(text)
						w.Close()
					}
				}()
			}
			ws, stdout, stderr := e.start(t, []string{"-t", "5", tc.operand}, e.env(), stdin, extra...).wait(t, 10*time.Second)
			if ws.ExitStatus() != 0 || stdout != "Submitted batch job 42\n" || stderr != "" {
				t.Fatalf("exit %v, stdout %q, stderr %q", ws, stdout, stderr)
			}
			seen := e.seen(t)
			if len(seen) != 1 || seen[0].Script != text {
				t.Fatalf("the real sbatch got %+v, want one run reading %q", seen, text)
			}
			if want := []string{"sbatch", "-t", "5", tc.operand}; !slices.Equal(seen[0].Args, want) {
				t.Errorf("argv %q, want %q", seen[0].Args, want)
			}
			for fd, f := range extra {
				if f == other && seen[0].Fds[3+fd] != e.Config {
					t.Errorf("descriptor %d is %q in the real sbatch, want %s", 3+fd, seen[0].Fds[3+fd], e.Config)
				}
			}
		})
	}
}

// An elastic submission whose script glean cannot read (over
// spool.max_script_bytes, missing, a directory) is refused in one line
// naming the script and the limit or the cause, and nothing is submitted;
// a plain one still passes through to the real sbatch.
func TestWrapperUnreadableScript(t *testing.T) {
	e := newWrapperEnv(t)
	cfg := fmt.Sprintf("[spool]\ndir = %q\nmax_script_bytes = 100\n", filepath.Join(e.Dir, "spool"))
	if err := os.WriteFile(e.Config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("echo padding the script past the limit\n", 5)
	big := e.writeFile(t, "big.sh", "#!/bin/sh\n#SBATCH -t 5\n"+body)
	bigGlean := e.writeFile(t, "bigglean.sh", "#!/bin/sh\n#SBATCH --glean\n"+body)
	dir := filepath.Join(e.Dir, "adir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		env    []string
		stdin  string
		stderr string // "": passed through
	}{
		{"too large", []string{"--glean", "big.sh"}, nil, "",
			"sbatch: error: glean: the batch script big.sh is larger than spool.max_script_bytes (100 bytes), so glean cannot submit it as elastic; "},
		{"too large, #SBATCH --glean", []string{bigGlean}, nil, "",
			"sbatch: error: glean: the batch script " + bigGlean + " is larger than spool.max_script_bytes (100 bytes), "},
		{"too large on stdin, SBATCH_GLEAN", []string{"-t", "5"}, []string{"SBATCH_GLEAN=mode=fair"}, big,
			"sbatch: error: glean: the batch script (stdin) is larger than spool.max_script_bytes (100 bytes), "},
		{"missing", []string{"--glean", "nosuch.sh"}, nil, "",
			"sbatch: error: glean: cannot read the batch script nosuch.sh (no such file or directory), so glean cannot submit it as elastic; "},
		{"a directory", []string{"--glean=mode=fair", dir}, nil, "",
			"sbatch: error: glean: cannot read the batch script " + dir + " (is a directory), "},
		{"too large, plain", []string{"-t", "5", "big.sh"}, nil, "", ""},
		{"too large on stdin, plain", []string{"-t", "5"}, nil, big, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(e.Dump)
			stdin := openFile(t, tc.stdin)
			ws, stdout, stderr := e.run(t, tc.args, e.env(tc.env...), stdin)
			seen := e.seen(t)
			if tc.stderr == "" {
				if ws.ExitStatus() != 0 || stderr != "" || len(seen) != 1 {
					t.Fatalf("exit %v, stderr %q, %d runs of sbatch; want it passed through", ws, stderr, len(seen))
				}
				return
			}
			if ws.ExitStatus() != 1 || stdout != "" || !strings.HasPrefix(stderr, tc.stderr) || strings.Count(stderr, "\n") != 1 ||
				!strings.Contains(stderr, "or run it as a plain array job") || len(seen) != 0 {
				t.Fatalf("exit %v, stdout %q, stderr %q, %d runs of sbatch; want exit 1, one line starting %q", ws, stdout, stderr, len(seen), tc.stderr)
			}
			if users, _ := os.ReadDir(filepath.Join(e.Dir, "spool")); len(users) != 0 {
				t.Errorf("the spool holds %d entries", len(users))
			}
		})
	}
}

// When the real sbatch, run as a child because glean read the script from
// a pipe on stdin, dies of a signal, the wrapper dies of the same signal
// and prints nothing of its own (no goroutine dump from Go's handler for
// SIGQUIT, SIGABRT or SIGSEGV), and leaves no core file of its own.
func TestWrapperDiesAsTheRealSbatchDid(t *testing.T) {
	e := newWrapperEnv(t)
	dying := filepath.Join(e.Dir, "dying")
	if err := os.MkdirAll(dying, 0o755); err != nil {
		t.Fatal(err)
	}
	// Cores allowed, so that one of the wrapper's would show (where the
	// kernel writes them into the working directory).
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &lim) == nil && lim.Cur < lim.Max {
		old := lim
		lim.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_CORE, &lim) == nil {
			t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_CORE, &old) })
		}
	}
	fake := "#!/bin/sh\nulimit -c 0\ncat >/dev/null\nkill -\"$FAKE_SBATCH_SIGNAL\" $$\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dying, "sbatch"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			env := e.env(fmt.Sprintf("FAKE_SBATCH_SIGNAL=%d", int(sig)))
			env[0] = "PATH=" + filepath.Dir(e.Wrapper) + ":" + dying + ":/usr/bin:/bin"
			ws, stdout, stderr := e.run(t, []string{"-t", "5"}, env, pipeWith(t, "#!/bin/sh\ntrue\n"))
			if !ws.Signaled() || ws.Signal() != sig || ws.CoreDump() || stdout != "" || stderr != "" {
				t.Fatalf("wait status %#x (signal %v, core %v), stdout %q, stderr %q; want death by %v, no core, no output",
					int(ws), ws.Signal(), ws.CoreDump(), stdout, stderr, sig)
			}
			if cores, _ := filepath.Glob(filepath.Join(e.Dir, "core*")); len(cores) != 0 {
				t.Errorf("core files: %v", cores)
			}
		})
	}
}

// The exit status of an elastic submission tells whether the job exists: a
// signal that comes while it is submitted undoes it (the anchor cancelled,
// no entry) and the wrapper fails with 128+n, printing no id; once the
// entry is committed, the wrapper prints the id and exits 0.
func TestWrapperSignalDuringElasticSubmission(t *testing.T) {
	e := newWrapperEnv(t)
	spoolDir := filepath.Join(e.Dir, "spool")
	if _, err := (&spool.Spool{Dir: spoolDir}).Init(-1); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[spool]\ndir = %q\n[policy]\ndefault_mode = \"scavenger\"\n", spoolDir)
	if err := os.WriteFile(e.Config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// Slurm: the anchor's sbatch, signalling the wrapper (its parent) on
	// the way when FAKE_SIGNAL_PARENT is set; squeue and scancel log.
	slurm := filepath.Join(e.Dir, "slurm")
	log := filepath.Join(e.Dir, "slurm.log")
	for name, text := range map[string]string{
		"sbatch":  "#!/bin/sh\necho \"sbatch $*\" >>" + log + "\n[ -z \"$FAKE_SIGNAL_PARENT\" ] || kill -TERM $PPID\necho 42\n",
		"squeue":  "#!/bin/sh\necho \"squeue $*\" >>" + log + "\n",
		"scancel": "#!/bin/sh\necho \"scancel $*\" >>" + log + "\n",
	} {
		if err := os.MkdirAll(slurm, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(slurm, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	job := e.writeFile(t, "job.sh", "#!/bin/sh\n#SBATCH --array=0-3 -t 5\ntrue\n")
	entries := func() []string {
		m, _ := filepath.Glob(filepath.Join(spoolDir, spool.UsersDir, "*", spool.IncomingDir, "[0-9]*"))
		return m
	}
	// The no-signal run commits; the signalled one takes one of two
	// outcomes, depending on whether the signal reached the wrapper before
	// its commit (Go hands signals over asynchronously, so the test cannot
	// choose): undone (exit 143, no id, the anchor scancelled, no entry) or
	// committed (exit 0, the id printed, the entry kept). Never a mix: the
	// old code printed the id, kept the entry and exited 143.
	committed := func(t *testing.T, ws syscall.WaitStatus, stdout string, logged []byte, before int) {
		t.Helper()
		if ws.ExitStatus() != 0 || stdout != "Submitted batch job 42\n" || strings.Contains(string(logged), "scancel 42") || len(entries()) != before+1 {
			t.Fatalf("committed: exit %v, stdout %q, %d entries (want %d), Slurm saw:\n%s", ws, stdout, len(entries()), before+1, logged)
		}
	}
	run := func(t *testing.T, extra ...string) (syscall.WaitStatus, string, []byte) {
		os.Remove(log)
		env := e.env(extra...)
		env[0] = "PATH=" + filepath.Dir(e.Wrapper) + ":" + slurm + ":/usr/bin:/bin"
		ws, stdout, _ := e.run(t, []string{"--glean", job}, env, nil)
		logged, _ := os.ReadFile(log)
		return ws, stdout, logged
	}
	t.Run("no signal", func(t *testing.T) {
		before := len(entries())
		ws, stdout, logged := run(t)
		committed(t, ws, stdout, logged, before)
	})
	t.Run("a signal while the anchor is submitted", func(t *testing.T) {
		before := len(entries())
		ws, stdout, logged := run(t, "FAKE_SIGNAL_PARENT=1")
		if ws.ExitStatus() == 0 {
			t.Logf("the signal came after the commit")
			committed(t, ws, stdout, logged, before)
			return
		}
		if ws.ExitStatus() != 128+int(syscall.SIGTERM) || stdout != "" || !strings.Contains(string(logged), "scancel 42") || len(entries()) != before {
			t.Fatalf("undone: exit %v, stdout %q, %d entries (want %d), Slurm saw:\n%s", ws, stdout, len(entries()), before, logged)
		}
	})
}
