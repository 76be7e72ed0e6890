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
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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

// VisitedEnv guards against an endless round between glean's wrapper and a
// site's own sbatch wrapper that picks "the first sbatch in PATH outside
// its own directory" (glean's again). When glean hands a submission to an
// sbatch that is a script (#!), it sets VisitedEnv to its pid and the
// scripts it handed the submission to, one per line; a glean that finds
// it set by itself or an ancestor process is running again for the same
// submission and passes it straight to the next sbatch not yet visited.
// It is removed whenever glean runs an sbatch that is not a script (Slurm's
// own), so Slurm and the job never see it.
const VisitedEnv = "GLEAN_SBATCH_VISITED"

// Visited reads VisitedEnv from env: the sbatch scripts this submission
// went through, and whether it was set by this process or an ancestor (a
// value from elsewhere, say leaked into a job's environment by a site
// wrapper, is ignored).
func Visited(env []string) (paths []string, reentry bool) {
	v, ok := getenv(env, VisitedEnv)
	if !ok {
		return nil, false
	}
	lines := strings.Split(v, "\n")
	pid, err := strconv.Atoi(lines[0])
	if err != nil || !selfOrAncestor(pid) {
		return nil, false
	}
	return lines[1:], true
}

// visitedValue is VisitedEnv's value for this process and paths.
func visitedValue(paths []string) string {
	return strings.Join(append([]string{strconv.Itoa(os.Getpid())}, paths...), "\n")
}

// selfOrAncestor reports whether pid is this process or one of its
// ancestors (not init).
func selfOrAncestor(pid int) bool {
	if pid <= 1 {
		return false
	}
	for p, hops := os.Getpid(), 0; p > 1 && hops < 256; hops++ {
		if p == pid {
			return true
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...; comm may hold blanks and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(f) < 2 {
			return false
		}
		if p, err = strconv.Atoi(f[1]); err != nil {
			return false
		}
	}
	return false
}

// isScript reports whether path starts with "#!" (a wrapper, not Slurm's
// sbatch). One that cannot be read is no script: an interpreter could not
// read it either.
func isScript(path string) bool {
	return bytes.HasPrefix(fileHead(path, 2), []byte("#!"))
}

// fileHead returns the first n bytes of a file (fewer if it is shorter or
// cannot be read).
func fileHead(path string, n int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, n)
	k, _ := io.ReadFull(f, head)
	return head[:k]
}

// DefaultSbatch is where Slurm's packages install sbatch: FindRealSbatch's
// last resort.
var DefaultSbatch = "/usr/bin/sbatch"

// FindRealSbatch returns the real sbatch: configured (an absolute path),
// else the first executable "sbatch" in PATH that is not in the wrapper's
// own directory, is not the wrapper itself and is not another glean
// wrapper, else DefaultSbatch. self is the wrapper's path ("" if unknown); the visited paths
// (VisitedEnv) are skipped.
func FindRealSbatch(configured, path, self string, visited []string) (string, error) {
	if configured != "" && !isVisited(configured, visited) {
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
		if isGleanWrapper(cand, self) || isVisited(cand, visited) {
			continue
		}
		return cand, nil
	}
	// Where the old shell wrapper looked last, and Slurm's packages put
	// it: a PATH of glean's wrapper alone (a login's minimal PATH) must
	// not break plain sbatch.
	if st, err := os.Stat(DefaultSbatch); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 &&
		!isGleanWrapper(DefaultSbatch, self) && !isVisited(DefaultSbatch, visited) {
		return DefaultSbatch, nil
	}
	if len(visited) > 0 {
		return "", fmt.Errorf("no sbatch in PATH besides glean's wrapper and %s, which ran glean's again", strings.Join(visited, ", "))
	}
	return "", errors.New("no sbatch in PATH besides glean's wrapper")
}

// isVisited reports whether cand is one of the visited paths (the same file).
func isVisited(cand string, visited []string) bool {
	a, err := os.Stat(cand)
	if err != nil {
		return false
	}
	for _, v := range visited {
		if b, err := os.Stat(v); err == nil && os.SameFile(a, b) {
			return true
		}
	}
	return false
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
	return bytes.Contains(fileHead(cand, 1024), []byte(WrapperMarker))
}

// execSbatch replaces this process with the real sbatch: the same argv
// (argv[0] "sbatch"), environment, descriptors and working directory. It
// returns only on failure.
func execSbatch(real string, args, env []string) error {
	argv := append([]string{"sbatch"}, args...)
	return syscall.Exec(real, argv, env)
}

// feed is what the real sbatch reads on descriptor fd in place of what
// glean consumed there: data, then the rest of rest (nil: nothing more).
type feed struct {
	fd   int
	data []byte
	rest *os.File
	src  *os.File // the descriptor read (kept, so that no finalizer closes it)
}

// runSbatch runs the real sbatch as a child, with the same stdin, stdout
// and stderr except that descriptor f.fd is a pipe fed f's bytes, and
// returns its wait status. Signals that reach this process are passed on.
// It does not wait for the feeding to end: once the child is gone, what it
// did not read does not matter.
func runSbatch(real string, args, env []string, f *feed, stdin, stdout, stderr *os.File) (syscall.WaitStatus, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(real, args...)
	cmd.Args[0] = "sbatch"
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if f.fd == 0 {
		cmd.Stdin = pr
	} else {
		cmd.ExtraFiles = inherited(f.fd, pr)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return 0, err
	}
	go func() {
		if _, err := pw.Write(f.data); err == nil && f.rest != nil {
			_, _ = io.Copy(pw, f.rest)
		}
		pw.Close()
	}()
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
	err = cmd.Wait()
	close(done)
	if cmd.ProcessState == nil {
		return 0, err
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus), nil
}

// inherited returns ExtraFiles that give a child the descriptors 3 to fd-1
// this process inherited (open, not close-on-exec: those Go opened are),
// and at fd the file at. Descriptors above fd are inherited as they are.
func inherited(fd int, at *os.File) []*os.File {
	files := make([]*os.File, fd-2)
	for k := 3; k < fd; k++ {
		if flags, err := unix.FcntlInt(uintptr(k), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			files[k-3] = os.NewFile(uintptr(k), "")
		}
	}
	files[fd-3] = at
	return files
}

// exitLike ends this process as status ended the child: the same exit
// code, or death by the same signal, with nothing printed. A signal goes
// back to its default action through rt_sigaction: signal.Reset would give
// it Go's handler, which prints a goroutine dump and exits 2 for SIGQUIT,
// SIGABRT, SIGSEGV and the like. The default action's core dump of glean
// is suppressed (RLIMIT_CORE 1: the kernel then writes none, to a file or
// a pipe handler): the crash was sbatch's. If the signal does not end the
// process after all, it exits 128+n, as a shell reports it.
func exitLike(ws syscall.WaitStatus) int {
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	sig := ws.Signal()
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_CORE, &lim) == nil {
		lim.Cur = min(1, lim.Max)
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &lim)
	}
	var dfl [4]uint64 // struct sigaction: SIG_DFL (0), no flags, empty mask
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	runtime.LockOSThread()
	var set unix.Sigset_t
	set.Val[(int(sig)-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	return 128 + int(sig)
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
