package submit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// WrapperMarker is a line in wrappers/sbatch. A candidate "real sbatch"
// holding it is a glean wrapper (perhaps another copy), never the real one.
const WrapperMarker = "glean-sbatch-wrapper"

// WrapperCommand is the glean subcommand that wrappers/sbatch's first line
// names: the kernel runs `glean sbatch-wrapper <wrapper path> ARGS`, so no
// shell stands between the user and glean, and the wrapper's own path
// comes as an argument, not through the environment.
const WrapperCommand = "sbatch-wrapper"

// WrapperInterpreter is the glean binary the first line of wrappers/sbatch
// names as shipped; `make install` writes the installed path there.
const WrapperInterpreter = "/usr/bin/glean"

// maxShebang is the longest first line every Linux kernel since 2.6 reads
// whole (BINPRM_BUF_SIZE was 128 bytes before 5.1).
const maxShebang = 127

// PointWrapper returns script, the text of wrappers/sbatch, with its first
// line naming glean (an absolute path) instead of WrapperInterpreter, as
// `make install` writes it; tests run such a copy against their own build.
func PointWrapper(script []byte, glean string) ([]byte, error) {
	first := "#!" + WrapperInterpreter + " " + WrapperCommand + "\n"
	rest, ok := bytes.CutPrefix(script, []byte(first))
	if !ok {
		return nil, fmt.Errorf("the wrapper does not start with %q", first)
	}
	line := "#!" + glean + " " + WrapperCommand + "\n"
	if !filepath.IsAbs(glean) || strings.ContainsAny(glean, " \t\n") || len(line) > maxShebang {
		return nil, fmt.Errorf("%s cannot be named on a #! line (an absolute path without blanks, the line at most %d bytes)", glean, maxShebang)
	}
	return append([]byte(line), rest...), nil
}

// FindRealSbatch returns the real sbatch: configured (an absolute path),
// else the first executable "sbatch" in PATH that is not in the wrapper's
// own directory, is not the wrapper itself and is not another glean
// wrapper. self is the wrapper's path ("" if unknown).
func FindRealSbatch(configured, path, self string) (string, error) {
	if configured != "" {
		if isGleanWrapper(configured, self) {
			return "", errors.New("slurm.real_sbatch points at glean's own wrapper")
		}
		// A wrong setting must not break plain sbatch: fall back to PATH.
		if st, err := os.Stat(configured); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return configured, nil
		}
	}
	var selfDir string
	if self != "" {
		if d, err := filepath.EvalSymlinks(filepath.Dir(self)); err == nil {
			selfDir = d
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if selfDir != "" {
			if d, err := filepath.EvalSymlinks(dir); err == nil && d == selfDir {
				continue
			}
		}
		cand := filepath.Join(dir, "sbatch")
		st, err := os.Stat(cand)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		if isGleanWrapper(cand, self) {
			continue
		}
		return cand, nil
	}
	return "", errors.New("no sbatch in PATH besides glean's wrapper")
}

// isGleanWrapper reports whether cand is the wrapper itself or a file
// carrying WrapperMarker in its first kilobyte.
func isGleanWrapper(cand, self string) bool {
	if self != "" {
		a, err1 := os.Stat(cand)
		b, err2 := os.Stat(self)
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			return true
		}
	}
	f, err := os.Open(cand)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte(WrapperMarker))
}

// execSbatch replaces this process with the real sbatch: the same argv
// (argv[0] "sbatch"), environment, descriptors and working directory. It
// returns only on failure.
func execSbatch(real string, args, env []string) error {
	argv := append([]string{"sbatch"}, args...)
	return syscall.Exec(real, argv, env)
}

// runSbatch runs the real sbatch as a child with stdin the bytes already
// read followed by the rest of stdin, the same stdout and stderr, and
// returns its wait status. Signals that reach this process are passed on.
func runSbatch(real string, args, env []string, consumed []byte, stdin, stdout, stderr *os.File) (syscall.WaitStatus, error) {
	cmd := exec.Command(real, args...)
	cmd.Args[0] = "sbatch"
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if consumed == nil {
		cmd.Stdin = stdin
	} else {
		cmd.Stdin = io.MultiReader(bytes.NewReader(consumed), stdin)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	if cmd.ProcessState == nil {
		return 0, err
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus), nil
}

// exitLike ends this process as status ended the child: the same exit
// code, or death by the same signal.
func exitLike(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		return 128 + int(sig)
	}
	return ws.ExitStatus()
}

// stripEnv returns env without the variables named.
func stripEnv(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		drop := false
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func getenv(env []string, name string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		if k, val, found := strings.Cut(kv, "="); found && k == name {
			v, ok = val, true
		}
	}
	return v, ok
}
