package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/glean-hpc/glean/sidecar/internal/umask"
	"github.com/glean-hpc/glean/sidecar/spool"
	"golang.org/x/sys/unix"
)

// proc is one running attempt.
type proc struct {
	task     int
	attempt  string
	start    time.Time
	pid      int // also its process group
	signaled bool
	lost     bool // its lease was taken back: KILLed, no result
	beat     time.Time
	note     string // for the result's detail (a refused checkpoint directory)
}

// exited is a proc's end, sent by its waiting goroutine to the loop.
type exited struct {
	p     *proc
	state *os.ProcessState
	err   error
	end   time.Time
}

// privateScript copies the job script to a private 0700 file, as slurmd
// does, so it can be executed directly and its shebang applies. Its
// directory holds the agent's pid: an agent killed with SIGKILL cannot
// remove it, so the next agent of the same user on the node does.
func privateScript(script []byte) (path string, cleanup func(), err error) {
	removeStaleScripts(os.TempDir(), os.Getuid())
	dir, err := os.MkdirTemp("", scriptDirPrefix)
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "script")
	err = os.WriteFile(filepath.Join(dir, scriptPIDFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
	if err == nil {
		err = os.WriteFile(path, script, 0o700)
	}
	if err == nil {
		err = os.Chmod(path, 0o700)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

const (
	scriptDirPrefix = "glean-agent-"
	scriptPIDFile   = "pid"
)

// removeStaleScripts removes the script directories in tmp of uid's agents
// that are gone (their pid no longer exists). A directory without a pid
// (being made, or an older agent's) is left alone.
func removeStaleScripts(tmp string, uid int) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, scriptDirPrefix+"*"))
	for _, d := range dirs {
		st, err := os.Lstat(d)
		if err != nil || !st.IsDir() || int(st.Sys().(*syscall.Stat_t).Uid) != uid {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d, scriptPIDFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// launch starts one attempt: its files opened as Slurm opens them (in the
// submission's umask), the script executed directly in its own process
// group (its own session with a pty), its end reported on done.
func (a *Agent) launch(task, attemptNo int, attempt string, now time.Time) (*proc, error) {
	j := a.job
	vars := PatternVars{ArrayJob: j.Entry.Anchor, Task: taskLabel(j, task), Job: a.opt.Pilot,
		Name: j.Entry.Name, User: j.User, Node: a.opt.Node}
	paths := TaskPaths(j, vars)
	ck := a.opt.Checkpoint
	aware := j.Entry.Glean.Checkpoint
	tv := TaskVars{Task: task, Attempt: attemptNo, AttemptID: attempt, Restarted: a.hist.resume[task], CkptRoot: ck.Root}
	// A refused checkpoint directory: the task runs without one (no
	// GLEAN_CHECKPOINT_DIR) and its result says why.
	ckErr := a.ckErr
	if ckErr == nil {
		tv.CkptDir, tv.Restarted, ckErr = ck.prepareTask(j.Entry.Anchor, task, tv.Restarted, a.hist.killed[task], aware || ck.Command != "")
	}
	note := ""
	if ckErr != nil {
		a.opt.Log.Warn("no checkpoint directory for the task", "task", task, "err", ckErr)
		note = "no checkpoint directory: " + ckErr.Error()
		tv.CkptDir, tv.Restarted = "", false
	}
	env := TaskEnv(j, a.opt.Env, tv)

	// The task's files and process get the submission's umask; the
	// process's, so held against the spool's own changes (internal/umask).
	defer umask.Hold(submissionUmask(j.Env))()
	// A task run again after a hand-back keeps its earlier output, as a
	// requeued Slurm job does.
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if strings.EqualFold(j.Entry.OpenMode, "append") || attemptNo > 1 {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	open := func(name string, flag int) (*os.File, error) {
		f, err := os.OpenFile(name, flag, 0o666)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		return f, nil
	}
	out, err := open(paths.Out, flags)
	if err != nil {
		return nil, fmt.Errorf("output file: %w", err)
	}
	errf := out
	if paths.Err != paths.Out {
		if errf, err = open(paths.Err, flags); err != nil {
			closeAll()
			return nil, fmt.Errorf("error file: %w", err)
		}
	}

	argv := taskArgv(a.script, j.Entry.ScriptArgs, ck.Command, aware)
	// A Cmd starts once, even after a failed Start: each try gets its own.
	var cmd *exec.Cmd
	newCmd := func() *exec.Cmd {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Dir = env, j.Entry.Cwd
		return cmd
	}
	var master *os.File
	if j.Entry.Glean.PTY {
		// stdout and stderr both go to the terminal; its output is copied
		// to the output file.
		err = retryBusy(func() error {
			var e error
			master, e = pty.StartWithAttrs(newCmd(), nil, &syscall.SysProcAttr{Setsid: true, Setctty: true})
			return e
		})
	} else {
		in := paths.In
		if in == "" {
			in = os.DevNull
		}
		stdin, ierr := open(in, os.O_RDONLY)
		if ierr != nil {
			closeAll()
			return nil, fmt.Errorf("input file: %w", ierr)
		}
		err = retryBusy(func() error {
			c := newCmd()
			c.Stdin, c.Stdout, c.Stderr = stdin, out, errf
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			return c.Start()
		})
	}
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("exec %s: %w", j.Entry.Script, err)
	}
	p := &proc{task: task, attempt: attempt, start: now, pid: cmd.Process.Pid, beat: now, note: note}
	copied := make(chan struct{})
	if master != nil {
		go func() {
			_, _ = io.Copy(out, master) // ends with EIO once every holder of the terminal is gone
			close(copied)
		}()
	} else {
		close(copied)
	}
	go func() {
		err := cmd.Wait()
		end := time.Now()
		// What the task left behind goes with it, as at the end of a Slurm job.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		killAttempt(attempt)
		if master != nil {
			select {
			case <-copied:
			case <-time.After(5 * time.Second):
			}
			master.Close()
		}
		closeAll()
		a.done <- exited{p: p, state: cmd.ProcessState, err: err, end: end}
	}()
	return p, nil
}

// killAttempt SIGKILLs every process of the agent's uid whose environment
// carries attempt's marker (GLEAN_ATTEMPT_ID=<attempt>, exactly): a child
// that left the task's process group (setsid, a daemon) would otherwise
// outlive its attempt, and run on beside the task's next one. It scans
// again while it finds some (they may have forked meanwhile). A process
// that both left the group and cleared its environment escapes until the
// pilot ends (Slurm's cgroup then takes it). Only processes of the
// agent's own Slurm job are candidates (jobScope): the marker is inherited
// by whatever the task starts, a job it submits included, which may run
// on this node as the same user and must not die with the attempt.
// Unreadable entries and processes that exit meanwhile are skipped.
func killAttempt(attempt string) {
	marker := []byte("GLEAN_ATTEMPT_ID=" + attempt)
	uid, self := os.Getuid(), os.Getpid()
	scope, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return
	}
	mine := jobScope(scope)
	for round := 0; round < maxKillRounds; round++ {
		procs, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		killed := 0
		for _, p := range procs {
			n := p.Name()
			pid, err := strconv.Atoi(n)
			if err != nil || pid == self {
				continue
			}
			var st syscall.Stat_t
			if syscall.Stat("/proc/"+n, &st) != nil || int(st.Uid) != uid {
				continue
			}
			if cg, err := os.ReadFile("/proc/" + n + "/cgroup"); err != nil || jobScope(cg) != mine {
				continue
			}
			if killMarked(pid, marker) {
				killed++
			}
		}
		if killed == 0 {
			return
		}
	}
}

const maxKillRounds = 8

// slurmJob finds the job_<id> component that Slurm's cgroup plugins put in
// a job's cgroup paths (v1 and v2: .../job_42/step_batch/...).
var slurmJob = regexp.MustCompile(`/job_[0-9]+(/|\n|$)`)

// jobScope is what of a process's /proc/<pid>/cgroup tells its Slurm job:
// the job_<id> component where Slurm's cgroup plugins put one (the steps
// of one job, srun's included, share it), else the whole file (no cgroup
// tracking, or a test outside Slurm: every process of the node's slurmd
// or of the test shares it).
func jobScope(cgroup []byte) string {
	if m := slurmJob.Find(cgroup); m != nil {
		return strings.TrimRight(string(m), "/\n")
	}
	return string(cgroup)
}

// killMarked SIGKILLs pid if its environment holds marker as an entry. A
// pidfd, where the kernel has them (5.3), makes sure the process killed is
// the one whose environment was read, not a later one with its pid.
func killMarked(pid int, marker []byte) bool {
	fd, ferr := unix.PidfdOpen(pid, 0)
	if ferr == nil {
		defer unix.Close(fd)
	} else if !errors.Is(ferr, unix.ENOSYS) {
		return false // gone already
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(e []byte) bool { return bytes.Equal(e, marker) }) {
		return false
	}
	if ferr == nil {
		return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
	}
	return syscall.Kill(pid, syscall.SIGKILL) == nil
}

// exitedAlready reports whether the agent's child pid has exited: a
// zombie not yet reaped, or one its waiting goroutine reaped already
// (ECHILD). WNOWAIT leaves the zombie to that goroutine's Wait.
func exitedAlready(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if errors.Is(err, unix.ECHILD) {
		return true
	}
	// Linux zeroes info when no child is waitable (WNOHANG).
	return err == nil && info.Signo == int32(unix.SIGCHLD)
}

// retryBusy retries a start that failed with ETXTBSY: another goroutine's
// fork may briefly hold a copy of a script being written (golang/go#22315).
func retryBusy(start func() error) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = start(); !errors.Is(err, syscall.ETXTBSY) {
			return err
		}
		time.Sleep(time.Duration(i+1) * 5 * time.Millisecond)
	}
	return err
}

// submissionUmask is the umask sbatch recorded (SLURM_UMASK), which
// slurmd applies to the job; without one, slurmd's usual 022 (the pilot
// itself runs with 077).
func submissionUmask(env []string) int {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SLURM_UMASK="); ok {
			if m, err := strconv.ParseUint(v, 8, 32); err == nil {
				return int(m) & 0o777
			}
		}
	}
	return 0o022
}

// outcome classifies an ended attempt. sentTerm: the agent signalled it.
func outcome(state *os.ProcessState, waitErr error, sentTerm bool) (out string, exit, sig int) {
	if state == nil {
		return spool.OutcomeHandedBack, 0, 0
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		sig = int(ws.Signal())
		exit = 128 + sig
	default:
		exit = state.ExitCode()
	}
	switch {
	case sentTerm && sig == 0 && exit == spool.CheckpointExit:
		return spool.OutcomeCheckpointed, exit, sig
	case sentTerm:
		return spool.OutcomeHandedBack, exit, sig
	case sig != 0:
		return spool.OutcomeSignaled, exit, sig
	}
	return spool.OutcomeExited, exit, sig
}
