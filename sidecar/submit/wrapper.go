// Package submit is the brain of glean's drop-in sbatch wrapper
// (docs/submission.md): it decides whether a submission is elastic, passes
// everything else to the real sbatch unchanged, and for an elastic one
// writes the spool entry, submits the anchor job whose id the user sees
// (and in fair mode the shadow array), and rolls all of it back if any step
// fails.
package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/internal/umask"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// DisableEnv=1 bypasses glean entirely.
const DisableEnv = "GLEAN_DISABLE"

// defaultMaxScript bounds a script read to decide, when there is no config.
const defaultMaxScript = 4 << 20

// Wrapper is one run of `glean sbatch ARGS`.
type Wrapper struct {
	Args []string
	Env  []string // as the user had it (os.Environ())
	// RawEnv, if set, is the environment exactly as this process got it
	// (/proc/self/environ: duplicates and entries without "=" included),
	// which a submission that is passed through hands on unchanged.
	RawEnv []string
	// Self is the path of the wrapper script that ran glean ("" if none).
	Self                  string
	Stdin, Stdout, Stderr *os.File
	Cwd                   string
	UID                   int
	Now                   time.Time
	// LoadConfig reads the site config; a missing or broken one only
	// matters for elastic submissions.
	LoadConfig func() (config.Config, error)
	// Agent is the glean-agent path the anchor and shadow scripts run.
	Agent string
}

// Main runs the wrapper and returns the exit code. On pass-through without
// having read stdin it does not return: the real sbatch replaces it.
func (w *Wrapper) Main(ctx context.Context) int {
	visited, reentry := Visited(w.Env)
	env := stripEnv(w.Env, VisitedEnv) // glean's own: never the tasks'
	passEnv := w.RawEnv
	if passEnv == nil {
		passEnv = w.Env
	}
	cfg, cfgErr := w.LoadConfig()
	configured := ""
	if cfgErr == nil {
		configured = cfg.Slurm.RealSbatch
	}
	path, _ := getenv(env, "PATH")
	real, err := FindRealSbatch(configured, path, w.Self, visited)
	if err != nil {
		fmt.Fprintf(w.Stderr, "sbatch: error: glean: cannot find the real sbatch: %v; set slurm.real_sbatch in %s\n", err, config.Path())
		return 127
	}
	p := &passer{real: real, args: w.Args, env: passEnv, visited: visited, w: w}
	if reentry {
		return p.pass() // glean decided already, before a site's wrapper ran it again
	}
	if v, _ := getenv(env, DisableEnv); v == "1" {
		return p.pass()
	}

	req, perr := ParseCLI(w.Args)
	mention := MentionsGlean(w.Args, env, nil)
	elasticParts := cfgErr == nil && len(cfg.Partitions.Elastic) > 0
	if perr != nil {
		if mention {
			return w.optError(perr)
		}
		return p.pass()
	}
	if req.HasCLI("help") || req.HasCLI("usage") || req.HasCLI("version") {
		return p.pass()
	}
	if _, isWrap := req.cliValue("wrap"); isWrap && !mention && !elasticParts {
		return p.pass() // no script directives: nothing else can make it elastic
	}

	maxScript := int64(defaultMaxScript)
	if cfgErr == nil {
		maxScript = cfg.Spool.MaxScriptBytes
	}
	// Asked for glean before the script is read: a script glean cannot
	// read is then refused, never passed on without glean.
	asked := mention || w.elastic(&Request{CLI: req.CLI, Env: envSettings(env)}, cfgErr == nil, cfg)
	var script []byte
	scriptName := ""
	wrap, isWrap := req.cliValue("wrap")
	switch {
	case isWrap:
		if len(req.Operands) > 0 {
			return p.pass() // sbatch: "Script arguments not permitted with --wrap option"
		}
		script = []byte("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n" + wrap + "\n")
		scriptName = "(wrap)"
	case len(req.Operands) > 0:
		if req.Operands[0] == ":" {
			if mention {
				return w.refusal(refuse("a heterogeneous job cannot be elastic; submit its components separately, or without --glean"))
			}
			return p.pass()
		}
		scriptName = req.Operands[0]
		if !filepath.IsAbs(scriptName) {
			scriptName = filepath.Join(w.Cwd, scriptName)
		}
		script, p.feed, err = readOperand(scriptName, req.Operands[0], w.Stdin, maxScript, asked)
		if err != nil {
			if asked || errors.Is(err, spool.ErrTooLarge) && MentionsGlean(nil, nil, script) {
				return w.unreadable(req.Operands[0], err, maxScript)
			}
			return p.pass() // sbatch says why it cannot read it
		}
	default:
		// The script comes on stdin: read it to decide. A regular file is
		// rewound afterwards; otherwise the bytes are handed on.
		p.feed, err = readFeed(w.Stdin, 0, maxScript)
		if err != nil || p.feed.rest != nil {
			if err == nil {
				err = spool.ErrTooLarge
			}
			if asked || errors.Is(err, spool.ErrTooLarge) && MentionsGlean(nil, nil, p.feed.data) {
				return w.unreadable("(stdin)", err, maxScript)
			}
			return p.pass()
		}
		script = p.feed.data
		scriptName = "(stdin)"
	}
	if !mention && !elasticParts && !MentionsGlean(nil, nil, script) {
		return p.pass()
	}
	mention = mention || MentionsGlean(nil, nil, script)
	if err := req.AddScript(filepath.Base(scriptName), script); err != nil {
		if mention {
			return w.optError(err)
		}
		return p.pass()
	}
	req.AddEnv(env)
	if !w.elastic(req, cfgErr == nil, cfg) {
		return p.pass()
	}
	if cfgErr != nil {
		fmt.Fprintf(w.Stderr, "sbatch: error: glean: cannot submit an elastic job: %v; fix the configuration, or submit with %s=1 to run it as a plain array job\n", cfgErr, DisableEnv)
		return 1
	}
	var args []string
	if len(req.Operands) > 1 {
		args = req.Operands[1:]
	}
	return w.submit(ctx, cfg, req, real, env, Input{Config: cfg, Env: withUmask(env, currentUmask()), Cwd: w.Cwd, User: userName(w.UID), Now: w.Now,
		Script: script, ScriptName: scriptName, ScriptArgs: args})
}

// withUmask adds SLURM_UMASK, the umask at submission, to the captured
// environment as sbatch does for every job (unless it is set already):
// the agent creates a task's -o/-e files under it, so a user whose umask
// is 077 gets private outputs, as with plain Slurm.
func withUmask(env []string, mask int) []string {
	if _, ok := getenv(env, "SLURM_UMASK"); ok {
		return env
	}
	return append(env[:len(env):len(env)], fmt.Sprintf("SLURM_UMASK=%04o", mask&0o777))
}

// currentUmask reads the process's umask (internal/umask: never while the
// spool's code has it changed).
func currentUmask() int { return umask.Current() }

// elastic reports whether the submission is elastic: --glean in any layer,
// or a partition the site marks elastic.
func (w *Wrapper) elastic(req *Request, haveCfg bool, cfg config.Config) bool {
	if _, ok := req.Get("glean"); ok {
		return true
	}
	if haveCfg {
		for _, p := range req.Partitions() {
			if cfg.IsElastic(p) {
				return true
			}
		}
	}
	return false
}

// optError prints an option error of an elastic submission: as sbatch
// (glibc's getopt) does, except for an option glean's table lacks, which
// sbatch may know (a site plugin's): that says what glean cannot do.
func (w *Wrapper) optError(err error) int {
	var oe *OptError
	if errors.As(err, &oe) && oe.Unknown != "" {
		where := ""
		if oe.Line > 0 {
			where = fmt.Sprintf(" (#SBATCH, line %d)", oe.Line)
		}
		fmt.Fprintf(w.Stderr, "sbatch: error: glean: glean's sbatch wrapper does not know the option %s%s, so it cannot submit this job as elastic (it knows Slurm 22.05's options and --glean, not a site plugin's); check the spelling, or run it as a plain array job: without --glean, or with %s=1\n", oe.Unknown, where, DisableEnv)
		return 255
	}
	if errors.As(err, &oe) {
		fmt.Fprintf(w.Stderr, "sbatch: %s\nTry \"sbatch --help\" for more information\n", oe.Msg)
		return 255
	}
	var de *DirectiveError
	if errors.As(err, &de) {
		fmt.Fprintf(w.Stderr, "sbatch: error: %s\n", de.Msg)
		if strings.HasPrefix(de.Msg, "Invalid directive") {
			return 255
		}
		return 1
	}
	fmt.Fprintf(w.Stderr, "sbatch: error: glean: %v\n", err)
	return 1
}

func (w *Wrapper) refusal(err error) int {
	var r *Refusal
	if errors.As(err, &r) {
		fmt.Fprintf(w.Stderr, "sbatch: error: glean: %s\n", r.Msg)
		return r.Code
	}
	fmt.Fprintf(w.Stderr, "sbatch: error: glean: %v\n", err)
	return 1
}

// unreadable refuses an elastic submission whose script glean cannot read
// (name as the user gave it): one line with the file, the cause or the
// limit, and what to do.
func (w *Wrapper) unreadable(name string, err error, max int64) int {
	if errors.Is(err, spool.ErrTooLarge) {
		fmt.Fprintf(w.Stderr, "sbatch: error: glean: the batch script %s is larger than spool.max_script_bytes (%d bytes), so glean cannot submit it as elastic; make it smaller (keep data in files it reads), or run it as a plain array job: without --glean, or with %s=1\n", name, max, DisableEnv)
		return 1
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	fmt.Fprintf(w.Stderr, "sbatch: error: glean: cannot read the batch script %s (%v), so glean cannot submit it as elastic; check the path and its permissions, or run it as a plain array job: without --glean, or with %s=1\n", name, err, DisableEnv)
	return 1
}

// readFileMax reads a file of at most max bytes; a larger one gives the
// first max+1 bytes and an error wrapping spool.ErrTooLarge.
func readFileMax(path, name string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return data, fmt.Errorf("%s: %w", name, spool.ErrTooLarge)
	}
	return data, nil
}

// passer hands a submission to the real sbatch.
type passer struct {
	real    string
	args    []string
	env     []string // as the user had it
	visited []string // VisitedEnv's paths
	w       *Wrapper
	feed    *feed // what glean read from a pipe the real sbatch reads the script from
}

// environ is the real sbatch's environment: the user's, with VisitedEnv
// naming the sbatch scripts this submission went through if the real
// sbatch is one too (a site's wrapper, which may run glean's again), and
// without it otherwise.
func (p *passer) environ() []string {
	env := stripEnv(p.env, VisitedEnv)
	if isScript(p.real) {
		env = append(env, VisitedEnv+"="+visitedValue(append(slices.Clip(p.visited), p.real)))
	}
	return env
}

// pass runs the real sbatch with the user's argv, environment and
// descriptors. Unless glean read the script from a pipe (p.feed) it execs;
// after reading a regular-file stdin it rewinds it and execs; otherwise it
// runs sbatch as a child whose descriptor (stdin, or the /dev/fd/N the
// script operand names) is a pipe fed the same bytes, then the rest unless
// glean read it to its end (a terminal gives an end once per Ctrl-D:
// reading on would wait for a second one).
func (p *passer) pass() int {
	if f := p.feed; f != nil && f.fd == 0 {
		if st, err := p.w.Stdin.Stat(); err == nil && st.Mode().IsRegular() {
			if cur, err := p.w.Stdin.Seek(0, io.SeekCurrent); err == nil {
				if _, err := p.w.Stdin.Seek(cur-int64(len(f.data)), io.SeekStart); err == nil {
					p.feed = nil
				}
			}
		}
	}
	if p.feed == nil {
		err := execSbatch(p.real, p.args, p.environ())
		fmt.Fprintf(p.w.Stderr, "sbatch: error: glean: cannot run %s: %v\n", p.real, err)
		return 126
	}
	ws, err := runSbatch(p.real, p.args, p.environ(), p.feed, p.w.Stdin, p.w.Stdout, p.w.Stderr)
	if err != nil {
		fmt.Fprintf(p.w.Stderr, "sbatch: error: glean: cannot run %s: %v\n", p.real, err)
		return 126
	}
	return exitLike(ws)
}

// errNotRead is a script operand glean leaves alone: reading it would take
// what only the real sbatch may read (a named FIFO, a terminal, ...).
var errNotRead = errors.New("not a regular file")

// readOperand reads the script named by the operand (path, absolute) to
// decide, without consuming what the real sbatch will read: a regular file
// is read; /dev/stdin, /dev/fd/N or /proc/self/fd/N naming a pipe is read
// from that descriptor and handed on (the returned feed); anything else (a
// named FIFO, a terminal, a socket) only when glean is asked for already
// (asked: the submission is then glean's, never passed on).
func readOperand(path, name string, stdin *os.File, max int64, asked bool) ([]byte, *feed, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if st.Mode().IsRegular() {
		data, err := readFileMax(path, name, max)
		return data, nil, err
	}
	if fd, ok := fdPath(path); ok && fd != 1 && fd != 2 && st.Mode()&os.ModeNamedPipe != 0 {
		src := stdin
		if fd != 0 {
			src = os.NewFile(uintptr(fd), path)
		}
		if fst, err := src.Stat(); err == nil && os.SameFile(st, fst) {
			f, err := readFeed(src, fd, max)
			if err != nil {
				return nil, f, err
			}
			if f.rest != nil {
				return f.data, f, fmt.Errorf("%s: %w", name, spool.ErrTooLarge)
			}
			return f.data, f, nil
		}
	}
	if asked {
		data, err := readFileMax(path, name, max)
		return data, nil, err
	}
	return nil, nil, errNotRead
}

// fdPath returns the descriptor a path names: /dev/stdin, /dev/fd/N,
// /proc/self/fd/N.
func fdPath(path string) (int, bool) {
	if path == "/dev/stdin" {
		return 0, true
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, ok := strings.CutPrefix(path, dir); ok {
			fd, err := strconv.Atoi(n)
			return fd, err == nil && fd >= 0 && strconv.Itoa(fd) == n
		}
	}
	return 0, false
}

// readFeed reads up to max bytes from f, the descriptor fd, for a feed:
// rest is f unless glean read it to its end.
func readFeed(f *os.File, fd int, max int64) (*feed, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	fe := &feed{fd: fd, data: data, src: f}
	if err != nil || int64(len(data)) > max {
		fe.rest = f
	}
	return fe, err
}

// submit makes the elastic job: entry files, anchor, shadow array (fair),
// entry renamed into place; any failure undoes what was done.
func (w *Wrapper) submit(ctx context.Context, cfg config.Config, req *Request, real string, env []string, in Input) int {
	built, err := BuildEntry(req, in)
	if err != nil {
		return w.refusal(err)
	}
	e := built.Entry
	runner := &slurm.Exec{Timeout: cfg.Slurm.Timeout.Duration}
	if built.Test {
		return w.testOnly(ctx, real, req, env, in, built)
	}

	sp := &spool.Spool{Dir: cfg.Spool.Dir, MaxEntryBytes: cfg.Spool.MaxEntryBytes, MaxScriptBytes: cfg.Spool.MaxScriptBytes}
	if err := sp.EnsureUserDirs(w.UID); err != nil {
		return w.refusal(refuse("%v", err))
	}
	e.ID, e.Nonce = spool.NewID(in.Now), spool.NewNonce()
	pend, err := sp.Prepare(w.UID, e.ID, in.Script, built.Env, built.Items)
	if err != nil {
		return w.refusal(refuse("%v", err))
	}

	// From here until the entry is in place (or everything is undone),
	// SIGINT/SIGTERM/SIGHUP wait: an interrupted submission must not leave
	// a job behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	sctx := context.WithoutCancel(ctx)

	var submitted []string
	undo := func() {
		// A submission that timed out may still have reached Slurm: find
		// this entry's jobs by their comments too.
		submitted = append(submitted, jobsWithComments(sctx, runner, w.UID, spool.Comment(e.ID, e.Nonce), spool.ShadowComment(e.ID, e.Nonce))...)
		done := map[string]bool{}
		for _, id := range submitted {
			if id == "" || done[id] {
				continue
			}
			done[id] = true
			if _, err := runner.Run(sctx, []string{"scancel", id}); err != nil {
				fmt.Fprintf(w.Stderr, "sbatch: error: glean: could not cancel job %s while undoing the submission: %v; cancel it with `scancel %s`\n", id, err, id)
			}
		}
		pend.Abort()
	}

	anchorOut, err := runner.Run(sctx, anchorArgv(real, cfg, e, w.agent(), w.UID))
	if err != nil {
		var ce *slurm.CmdError
		if errors.As(err, &ce) && ce.ExitCode < 0 { // killed or timed out: it may have been queued
			undo()
		} else {
			pend.Abort()
		}
		return w.sbatchFailed(err)
	}
	e.Anchor, e.Cluster = parseParsable(anchorOut)
	if e.Anchor == "" {
		undo() // it exited 0: a job may have been queued; undo finds it by its comment
		fmt.Fprintf(w.Stderr, "sbatch: error: glean: the anchor job's sbatch printed %q, not a job id\n", strings.TrimSpace(string(anchorOut)))
		return 1
	}
	submitted = append(submitted, e.Anchor)

	if e.Mode == ModeFair {
		shadow := filepath.Join(pend.Dir(), "shadow.sh")
		if err := os.WriteFile(shadow, shadowScript(req, e, w.agent(), w.UID), 0o600); err != nil {
			undo()
			return w.refusal(refuse("shadow array: %v", err))
		}
		tctx, cancel := context.WithTimeout(sctx, cfg.Slurm.Timeout.Duration)
		out, code, stderr := runCapture(tctx, append([]string{real}, shadowArgv(req, e, shadow, in.ScriptArgs, true)...),
			stripEnv(env, "SBATCH_WAIT", "SBATCH_GLEAN"), in.Cwd)
		cancel()
		_ = os.Remove(shadow)
		if code != 0 {
			undo()
			w.Stderr.Write(stderr)
			return code
		}
		e.Shadow, _ = parseParsable(out)
		if e.Shadow == "" {
			submitted = append(submitted, strings.TrimSpace(string(out)))
			undo()
			fmt.Fprintf(w.Stderr, "sbatch: error: glean: the shadow array's sbatch printed %q, not a job id\n", strings.TrimSpace(string(out)))
			return 1
		}
		submitted = append(submitted, e.Shadow)
	}
	// A signal that came while the job was being submitted: undo it all
	// and fail, as an interrupted sbatch would. From the commit on the job
	// exists, so the wrapper finishes and says so (exit 0) whatever comes:
	// a workflow manager must not take a queued job for a failed one.
	select {
	case s := <-sigs:
		undo()
		return 128 + int(s.(syscall.Signal))
	default:
	}
	if err := pend.Commit(e); err != nil {
		undo()
		return w.refusal(refuse("writing the spool entry: %v", err))
	}
	if !built.Quiet {
		if built.Parse {
			fmt.Fprintln(w.Stdout, strings.TrimSpace(string(anchorOut)))
		} else {
			fmt.Fprintf(w.Stdout, "Submitted batch job %s\n", e.Anchor)
		}
	}
	signal.Stop(sigs)
	if e.Wait {
		return waitForJob(ctx, runner, e.Anchor, w.Stderr)
	}
	return 0
}

func (w *Wrapper) agent() string {
	if w.Agent != "" {
		return w.Agent
	}
	return "glean-agent"
}

// sbatchFailed relays a failed sbatch's own words and exit code.
func (w *Wrapper) sbatchFailed(err error) int {
	var ce *slurm.CmdError
	if errors.As(err, &ce) && ce.ExitCode > 0 {
		if ce.Stderr != "" {
			fmt.Fprintln(w.Stderr, ce.Stderr)
		}
		return ce.ExitCode
	}
	fmt.Fprintf(w.Stderr, "sbatch: error: glean: submitting the anchor job: %v\n", err)
	return 1
}

// parseParsable splits sbatch --parsable output "id[;cluster]".
func parseParsable(out []byte) (id, cluster string) {
	s := strings.TrimSpace(string(out))
	id, cluster, _ = strings.Cut(s, ";")
	if _, err := slurm.ParseSubmitOutput([]byte(s)); err != nil {
		return "", ""
	}
	return id, cluster
}

// anchorArgv is the anchor's sbatch: held, in the anchor partition, with
// the user's job name, mail options, dependency, begin time and account,
// and the comment that ties it to the entry. Its script runs
// `glean-agent anchor` when the daemon releases it at the end.
func anchorArgv(real string, cfg config.Config, e *spool.Entry, agent string, uid int) []string {
	argv := []string{real, "--parsable", "--hold",
		"--partition=" + cfg.Partitions.Anchor,
		"--job-name=" + e.Name,
		"--comment=" + spool.Comment(e.ID, e.Nonce),
		"--output=/dev/null", "--error=/dev/null", "--chdir=/",
		"--ntasks=1", "--nodes=1", "--time=5",
	}
	for _, o := range e.Options {
		switch o.Name {
		case "mail-type", "mail-user", "dependency", "begin", "account", "wckey", "kill-on-invalid-dep":
			argv = append(argv, "--"+o.Name+"="+o.Value)
		}
	}
	return append(argv, "--wrap=exec "+shellQuote(agent)+" anchor --job "+spool.RecordName(uid, e.ID))
}

// shadowBegin is the begin time the shadow array is submitted with: it
// must not start before gleand has taken the job in (and its --begin and
// --dependency, which the anchor carries, are met), and it must keep the
// place in the queue Slurm gives it at submission, as the plain job's.
// gleand moves it to now (scontrol update StartTime=now), which keeps the
// job's priority; a hold would not: under priority/basic, releasing a job
// gives it a new, last priority (measured on Slurm 22.05).
const shadowBegin = "now+365days"

// shadowArgv is the shadow array's sbatch: the user's own command line
// (so Slurm applies every option as for the plain job, script directives
// and SBATCH_* variables included), minus what glean handles itself, with
// its output discarded (the agent writes each task's output) and no mail
// (the anchor carries it). gated (the real submission, not --test-only)
// adds shadowBegin in place of the user's --begin, and --parsable; with
// Slurm's --deadline in force, which sbatch refuses before a begin time
// ("Incompatible begin and deadline time specification"), --hold instead:
// gleand then releases it, and it queues from there.
func shadowArgv(req *Request, e *spool.Entry, script string, scriptArgs []string, gated bool) []string {
	_, deadline := req.Get("deadline")
	var argv []string
	for _, s := range req.CLI {
		switch s.Opt.Long {
		case "glean", "wait", "parsable", "hold", "test-only", "wrap", "quiet", "verbose", "mail-type", "mail-user":
			continue
		case "begin":
			if gated && !deadline {
				continue
			}
		}
		if s.HasValue {
			argv = append(argv, "--"+s.Opt.Long+"="+s.Value)
		} else {
			argv = append(argv, "--"+s.Opt.Long)
		}
	}
	argv = append(argv, "--job-name="+e.Name, "--mail-type=NONE",
		"--comment="+spool.ShadowComment(e.ID, e.Nonce), "--output=/dev/null", "--error=/dev/null")
	switch {
	case gated && deadline:
		argv = append(argv, "--hold", "--parsable")
	case gated:
		argv = append(argv, "--begin="+shadowBegin, "--parsable")
	}
	if e.Items != nil {
		argv = append(argv, "--array="+e.Array.String())
	}
	argv = append(argv, script)
	return append(argv, scriptArgs...)
}

// shadowScript is the shadow array's batch script: the user's directive
// block (without --glean, which the real sbatch may not know), then the
// agent, which takes the next pending task when an element starts.
func shadowScript(req *Request, e *spool.Entry, agent string, uid int) []byte {
	var b bytes.Buffer
	b.WriteString("#!/bin/sh\n")
	b.WriteString("# glean shadow array of elastic job " + e.ID + ": each element runs the next pending task.\n")
	for _, s := range req.Script {
		switch s.Opt.Long {
		case "glean", "wait", "parsable", "test-only": // glean's, or the wrapper's to honour
			continue
		}
		b.WriteString("#SBATCH ")
		if s.HasValue {
			b.WriteString(directiveQuote("--" + s.Opt.Long + "=" + s.Value))
		} else {
			b.WriteString("--" + s.Opt.Long)
		}
		b.WriteByte('\n')
	}
	b.WriteString("exec " + shellQuote(agent) + " shadow --job " + spool.RecordName(uid, e.ID) + "\n")
	return b.Bytes()
}

// directiveQuote quotes a word for sbatch's directive reader: in "...",
// with '\' before '"' and '\'.
func directiveQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// shellQuote quotes a word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runCapture runs argv with env in dir and returns stdout, the exit code
// and stderr.
func runCapture(ctx context.Context, argv, env []string, dir string) ([]byte, int, []byte) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Args[0] = "sbatch"
	cmd.Env, cmd.Dir = env, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			return out.Bytes(), ee.ExitCode(), errb.Bytes()
		}
		fmt.Fprintf(&errb, "sbatch: error: glean: running %s: %v\n", argv[0], err)
		return out.Bytes(), 1, errb.Bytes()
	}
	return out.Bytes(), 0, errb.Bytes()
}

// testOnly checks an elastic submission without submitting anything: the
// real sbatch --test-only judges the shadow form (what plain sbatch would
// queue) and its answer is relayed.
func (w *Wrapper) testOnly(ctx context.Context, real string, req *Request, env []string, in Input, b *Built) int {
	dir, err := os.MkdirTemp("", "glean-test-only-")
	if err != nil {
		return w.refusal(refuse("%v", err))
	}
	defer os.RemoveAll(dir)
	e := &spool.Entry{ID: "000000000000-00000000", Nonce: strings.Repeat("0", 32), Items: b.Entry.Items, Array: b.Entry.Array}
	script := filepath.Join(dir, "shadow.sh")
	if err := os.WriteFile(script, shadowScript(req, e, w.agent(), w.UID), 0o600); err != nil {
		return w.refusal(refuse("%v", err))
	}
	// Ungated, with --test-only: sbatch says when the plain job would start.
	argv := shadowArgv(req, e, script, in.ScriptArgs, false)
	out, code, stderr := runCapture(ctx, append([]string{real, "--test-only"}, argv...), stripEnv(env, "SBATCH_WAIT", "SBATCH_GLEAN"), in.Cwd)
	w.Stdout.Write(out)
	w.Stderr.Write(stderr)
	return code
}

// waitForJob is --wait: poll until the anchor ends, then exit as sbatch
// --wait does: the job's exit code, at least 1 if it did not complete.
func waitForJob(ctx context.Context, r slurm.Runner, id string, stderr io.Writer) int {
	delay := time.Second
	for {
		out, err := r.Run(ctx, []string{"scontrol", "-o", "show", "job", id})
		if err == nil {
			state, code := jobEnd(string(out))
			switch {
			case state == "" || !slurm.JobEnded(state): // as sbatch --wait, until it ended
			case state == "COMPLETED":
				return code
			default:
				return max(code, 1)
			}
		} else {
			var ce *slurm.CmdError
			if errors.As(err, &ce) && strings.Contains(ce.Stderr, "Invalid job id") {
				fmt.Fprintf(stderr, "sbatch: error: glean: job %s is no longer known to Slurm\n", id)
				return 1
			}
		}
		select {
		case <-ctx.Done():
			return 130
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}

// jobEnd reads JobState and ExitCode from `scontrol -o show job`. The
// anchor's name is the only user text before them, so the first
// occurrences after "JobName=" are Slurm's.
func jobEnd(show string) (state string, code int) {
	_, rest, _ := strings.Cut(show, " UserId=")
	for _, f := range strings.Fields(rest) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok && state == "" {
			state = v
		}
		if v, ok := strings.CutPrefix(f, "ExitCode="); ok {
			n, _, _ := strings.Cut(v, ":")
			fmt.Sscan(n, &code)
			break
		}
	}
	return state, code
}

// userName is uid's login name, for display only (identity is the uid).
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// jobsWithComments returns uid's jobs whose comment is one of comments.
// Comments are the user's own text, but only the user's own jobs are
// listed, so a forged line can only name the user's own job.
func jobsWithComments(ctx context.Context, r slurm.Runner, uid int, comments ...string) []string {
	out, err := r.Run(ctx, []string{"squeue", "-h", "-u", strconv.Itoa(uid), "-o", "%A|%k"})
	if err != nil {
		return nil
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		id, c, ok := strings.Cut(line, "|")
		if ok && slurm.ValidJobID(id) && slices.Contains(comments, c) {
			ids = append(ids, id)
		}
	}
	return ids
}
