// Package isolation proves issue 6's "Two users, really" on a real
// loopback Slurm 22.05: two Unix users (gleantest, gleantest2) and the
// glean user, the real wrapper, gleand as glean and glean-helper as root.
// A's tasks run as A in pilots owned by A; A cannot make anything run as
// B, nor read or change B's files; gleand runs as glean and the helper
// refuses everything but its narrow requests.
package isolation

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/tests/gleantest"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

var (
	cl   *slurmtest.Cluster
	env  *gleantest.Env
	ckpt string // checkpoint.root's parent, like a shared scratch (1777)
)

func TestMain(m *testing.M) {
	code := slurmtest.Main(m, slurmtest.Options{Nodes: 6}, &cl)
	if env != nil {
		env.Stop()
		if code == 0 {
			os.RemoveAll(env.Dir)
			os.RemoveAll(ckpt)
		}
	}
	os.Exit(code)
}

// The jobs both users run: each task writes its pid, uid, gid and pilot,
// then waits for the user's release file, so that the test sees the task
// process while it runs.
const blockingTask = `#!/bin/sh
echo "$$ $(id -u) $(id -g) $SLURM_JOB_ID" > "$HOME/out/$SLURM_ARRAY_TASK_ID.pid"
while [ ! -e "$HOME/release" ]; do sleep 0.2; done
echo "task $SLURM_ARRAY_TASK_ID done"
`

// running is the state shared by the tests: A's and B's jobs, running.
type running struct {
	a, b             gleantest.Who
	anchorA, anchorB string
	recA, recB       *spool.Record
	pidsA, pidsB     map[int][4]int // task -> pid, uid, gid, pilot
}

var shared *running

// setup starts glean and both users' jobs once; their tasks keep running
// until the test binary's end (or release).
func setup(t *testing.T) *running {
	t.Helper()
	slurmtest.Need(t, cl)
	if shared != nil {
		return shared
	}
	var err error
	if ckpt, err = os.MkdirTemp("/tmp", "glckpt-"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ckpt, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	opt := gleantest.Options{Extra: fmt.Sprintf("[checkpoint]\nroot = %q\n", filepath.Join(ckpt, "%u"))}
	if env, err = gleantest.New(cl, opt); err != nil {
		t.Fatal(err)
	}
	env.Start(t)
	s := &running{a: env.User1(), b: env.User2()}
	for _, w := range []gleantest.Who{s.a, s.b} {
		for _, d := range []string{filepath.Join(w.Work, "out")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, w.UID, w.GID); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(w.Work, "task.sh"), []byte(blockingTask), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(w.Work, "task.sh"), w.UID, w.GID); err != nil {
			t.Fatal(err)
		}
	}
	// B's umask is 077: its outputs must be private, as with plain Slurm.
	s.anchorA = env.SbatchAs(t, s.a, "", "--glean=mode=scavenger", "--array=0-1", "-o", "out/%a.out", "task.sh")
	r := env.As(t, s.b, "", "/bin/sh", "-c", `umask 077; exec sbatch --parsable --glean=mode=scavenger --array=0-1 -o out/%a.out task.sh`)
	if r.Code != 0 {
		t.Fatalf("B's sbatch: %d %s%s", r.Code, r.Stdout, r.Stderr)
	}
	s.anchorB = strings.TrimSpace(r.Stdout)
	s.recA = env.WaitState(t, s.anchorA, time.Minute, spool.StateRunning)
	s.recB = env.WaitState(t, s.anchorB, time.Minute, spool.StateRunning)
	s.pidsA, s.pidsB = taskPIDs(t, s.a, 2), taskPIDs(t, s.b, 2)
	shared = s
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(env.Logs())
		}
	})
	return s
}

// taskPIDs waits for n tasks' pid files.
func taskPIDs(t *testing.T, w gleantest.Who, n int) map[int][4]int {
	t.Helper()
	out := map[int][4]int{}
	cl.WaitFor(t, 90*time.Second, w.Name+"'s tasks to start", func() bool {
		for i := 0; i < n; i++ {
			data, err := os.ReadFile(filepath.Join(w.Work, "out", strconv.Itoa(i)+".pid"))
			f := strings.Fields(string(data))
			if err != nil || len(f) != 4 {
				return false
			}
			var v [4]int
			for k := range v {
				v[k], _ = strconv.Atoi(f[k])
			}
			out[i] = v
		}
		return true
	})
	return out
}

// procIDs reads a process's Uid: and Gid: lines (real, effective, saved,
// filesystem).
func procIDs(t *testing.T, pid int) (uids, gids []string) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			uids = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "Gid:"); ok {
			gids = strings.Fields(v)
		}
	}
	return uids, gids
}

func all(vals []string, want int) bool {
	for _, v := range vals {
		if v != strconv.Itoa(want) {
			return false
		}
	}
	return len(vals) == 4
}

// A's tasks run as A (the live process's every uid and gid), in pilots
// that squeue shows as A's, submitted with the admin's pilot script; the
// same for B.
func TestTasksRunAsOwnerInOwnersPilots(t *testing.T) {
	s := setup(t)
	for _, c := range []struct {
		w    gleantest.Who
		rec  *spool.Record
		pids map[int][4]int
	}{{s.a, s.recA, s.pidsA}, {s.b, s.recB, s.pidsB}} {
		for task, v := range c.pids {
			uids, gids := procIDs(t, v[0])
			if !all(uids, c.w.UID) || !all(gids, c.w.GID) {
				t.Errorf("%s's task %d (pid %d): Uid %v Gid %v, want %d/%d", c.w.Name, task, v[0], uids, gids, c.w.UID, c.w.GID)
			}
			pilot := strconv.Itoa(v[3])
			out := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-j", pilot, "-o", "%u|%P|%o"))
			user, rest, _ := strings.Cut(out, "|")
			part, cmd, _ := strings.Cut(rest, "|")
			if user != c.w.Name || part != "pilot" || !strings.HasPrefix(cmd, filepath.Join(env.Dir, "libexec", "pilot.sh")+" ") {
				t.Errorf("%s's task %d runs in job %s: %q, want a pilot of %s running the admin's pilot script", c.w.Name, task, pilot, out, c.w.Name)
			}
			rec := recordOf(t, c.w, c.rec.ID)
			found := false
			for _, p := range rec.PilotJobs {
				found = found || p.ID == pilot
			}
			if !found {
				t.Errorf("%s's task %d runs in %s, not a pilot of its record (%+v)", c.w.Name, task, pilot, rec.PilotJobs)
			}
		}
	}
}

// writeEntry puts an entry into w's incoming directory as w could (the
// files belong to w, renamed into place).
func writeEntry(t *testing.T, w gleantest.Who, e *spool.Entry, raw []byte) {
	t.Helper()
	writeEntryMode(t, w, e, raw, 0o640)
}

// writeEntryMode is writeEntry with the script's mode.
func writeEntryMode(t *testing.T, w gleantest.Who, e *spool.Entry, raw []byte, scriptMode os.FileMode) {
	t.Helper()
	inc := filepath.Join(env.Spool, spool.UsersDir, strconv.Itoa(w.UID), spool.IncomingDir)
	tmp := filepath.Join(inc, ".tmp-"+e.ID)
	if err := os.Mkdir(tmp, 0o750); err != nil {
		t.Fatal(err)
	}
	script := []byte("#!/bin/sh\nid -u > \"$HOME/out/forged.$SLURM_ARRAY_TASK_ID\"\n")
	e.ScriptSize = int64(len(script))
	if raw == nil {
		var err error
		if raw, err = e.Encode(); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string][]byte{spool.EntryFile: raw, spool.ScriptFile: script, spool.EnvFile: []byte("HOME=" + w.Work + "\x00")} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(tmp, spool.EnvFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(tmp, spool.ScriptFile), scriptMode); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tmp, filepath.Join(tmp, spool.EntryFile), filepath.Join(tmp, spool.ScriptFile), filepath.Join(tmp, spool.EnvFile)} {
		if err := os.Chown(p, w.UID, env.GleanGID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, filepath.Join(inc, e.ID)); err != nil {
		t.Fatal(err)
	}
}

// recordOf waits for the record of w's entry id.
func recordOf(t *testing.T, w gleantest.Who, id string) *spool.Record {
	t.Helper()
	var r spool.Record
	p := filepath.Join(env.Spool, spool.JobsDir, spool.RecordName(w.UID, id), spool.RecordFile)
	cl.WaitFor(t, 30*time.Second, "the record of "+id, func() bool {
		data, err := os.ReadFile(p)
		return err == nil && json.Unmarshal(data, &r) == nil && r.State != spool.StateAccepting
	})
	return &r
}

func anchorComment(t *testing.T, id string) string {
	t.Helper()
	return strings.TrimSpace(cl.Run(t, "squeue", "-h", "-j", id, "-o", "%k"))
}

// A cannot make anything run as B: not with --uid/--gid, not with an
// entry naming B's anchor (with a nonce of its own, or B's id and nonce
// copied from squeue's comment), not with a lying user field or a uid
// field, not with a job dressed as a pilot, not by running the agent
// for B's job.
func TestCannotRunAsAnother(t *testing.T) {
	s := setup(t)
	jobsBefore := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-u", s.b.Name, "-o", "%i %T %r"))

	for _, args := range [][]string{
		{"--glean", "--uid=" + strconv.Itoa(s.b.UID), "task.sh"},
		{"--glean", "--uid=0", "task.sh"},
		{"--glean", "--gid=" + strconv.Itoa(s.b.GID), "task.sh"},
	} {
		r := env.As(t, s.a, "", "sbatch", args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "sbatch: error: glean: --") || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("sbatch %v as A: exit %d %q %q, want a one-line refusal", args, r.Code, r.Stdout, r.Stderr)
		}
	}

	now := time.Now()
	base := func(anchor string) *spool.Entry {
		return &spool.Entry{Version: spool.EntryVersion, ID: spool.NewID(now), Nonce: spool.NewNonce(), Submitted: now,
			User: s.a.Name, Anchor: anchor, Name: "forged", Mode: "scavenger", Script: "x.sh", Cwd: s.a.Work, Export: "ALL",
			Tasks: 1, Resources: spool.Resources{CPUsPerTask: 1, NTasks: 1, CPUs: 1}}
	}
	// B's anchor with A's own nonce.
	e1 := base(s.anchorB)
	writeEntry(t, s.a, e1, nil)
	// B's anchor with B's id and nonce, read from squeue's comment.
	_, idNonce, _ := strings.Cut(anchorComment(t, s.anchorB), ":")
	bID, bNonce, _ := strings.Cut(idNonce, ":")
	e2 := base(s.anchorB)
	e2.ID, e2.Nonce, e2.User = bID, bNonce, s.b.Name
	writeEntry(t, s.a, e2, nil)
	// A uid field naming B.
	e3 := base(s.anchorA)
	data, _ := e3.Encode()
	writeEntry(t, s.a, e3, append([]byte(fmt.Sprintf(`{"uid":%d,`, s.b.UID)), data[1:]...))
	for _, c := range []struct {
		e      *spool.Entry
		reason string
	}{
		{e1, "is not yours (it belongs to " + s.b.Name + ")"},
		{e2, "is not yours (it belongs to " + s.b.Name + ")"},
		{e3, `unknown field "uid"`},
	} {
		r := recordOf(t, s.a, c.e.ID)
		if r.State != spool.StateRejected || !strings.Contains(r.Reason, c.reason) || r.UID != s.a.UID || r.User != s.a.Name {
			t.Errorf("forged entry %s: %s %q (uid %d %s), want rejected: %q", c.e.ID, r.State, r.Reason, r.UID, r.User, c.reason)
		}
		if c.e == e2 {
			continue // its id is B's too: glean show <id> finds B's job first
		}
		show := env.As(t, s.a, "", "glean", "show", c.e.ID)
		if !strings.Contains(show.Stdout, c.reason) {
			t.Errorf("glean show %s: %q %q, want the reason", c.e.ID, show.Stdout, show.Stderr)
		}
	}

	// A job of A's dressed as a pilot (name, partition, a pilot comment)
	// is A's job: not recorded as a pilot of B's job.
	tok := make([]byte, 16)
	rand.Read(tok)
	out := env.As(t, s.a, "", "/usr/bin/sbatch", "--parsable", "-p", "pilot", "-J", "glean-pilot", "-o", "/dev/null",
		"--comment=glean-pilot:"+hex.EncodeToString(tok), "--wrap", "exec sleep 300")
	if out.Code != 0 {
		t.Fatalf("A's imitating job: %+v", out)
	}
	imit := strings.TrimSpace(out.Stdout)
	defer cl.Run(t, "scancel", imit)
	// A user field naming B, on A's own anchor: the job is A's and runs
	// as A (by then gleand has had rounds with the imitator queued).
	e4 := base("")
	out = env.As(t, s.a, "", "/usr/bin/sbatch", "--parsable", "--hold", "-p", "glean", "-o", "/dev/null",
		"--comment="+spool.Comment(e4.ID, e4.Nonce), "--wrap", "exec true")
	if out.Code != 0 {
		t.Fatalf("A's own anchor: %+v", out)
	}
	e4.Anchor, e4.User = strings.TrimSpace(out.Stdout), s.b.Name
	writeEntry(t, s.a, e4, nil)
	r4 := recordOf(t, s.a, e4.ID)
	if r4.State == spool.StateRejected || r4.UID != s.a.UID || r4.User != s.a.Name {
		t.Errorf("entry whose user field says %s on A's anchor: %s %q uid %d user %s, want A's job", s.b.Name, r4.State, r4.Reason, r4.UID, r4.User)
	}
	cl.WaitFor(t, 90*time.Second, "the lying entry's task to run", func() bool {
		data, err := os.ReadFile(filepath.Join(s.a.Work, "out", "forged.0"))
		if err != nil {
			data, err = os.ReadFile(filepath.Join(s.a.Work, "out", "forged."))
		}
		return err == nil && strings.TrimSpace(string(data)) != ""
	})
	for _, f := range []string{"forged.0", "forged."} {
		if data, err := os.ReadFile(filepath.Join(s.a.Work, "out", f)); err == nil && strings.TrimSpace(string(data)) != strconv.Itoa(s.a.UID) {
			t.Errorf("the lying entry's task ran as uid %s, want A's %d", data, s.a.UID)
		}
	}
	if _, err := os.Stat(filepath.Join(s.b.Work, "out", "forged.0")); err == nil {
		t.Error("a forged entry's task wrote into B's directory")
	}

	// The agent, run by A for B's job, refuses (and could read nothing).
	ag := env.As(t, s.a, "", filepath.Join(env.Bin, "glean-agent"), "pilot", "--job", s.recB.DirName(), "--config", env.Config)
	if ag.Code == 0 || !strings.Contains(ag.Stdout+ag.Stderr, fmt.Sprintf("belongs to uid %d", s.b.UID)) {
		t.Errorf("glean-agent pilot --job <B's> as A: exit %d %q %q", ag.Code, ag.Stdout, ag.Stderr)
	}
	for _, p := range recordOf(t, s.b, s.recB.ID).PilotJobs {
		if p.ID == imit {
			t.Errorf("A's job %s recorded as a pilot of B's job", imit)
		}
	}
	if after := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-u", s.b.Name, "-t", "all", "-o", "%i %T %r")); !strings.Contains(after, s.anchorB) {
		t.Errorf("B's jobs before %q, after %q", jobsBefore, after)
	}
	for task, v := range s.pidsB {
		if uids, _ := procIDs(t, v[0]); !all(uids, s.b.UID) {
			t.Errorf("B's task %d: %v", task, uids)
		}
	}
}

// asA runs a shell command as A and returns its stderr and exit code.
func asA(t *testing.T, s *running, script string, args ...string) (string, int) {
	t.Helper()
	r := env.As(t, s.a, "", "/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	return r.Stderr, r.Code
}

// A cannot read or change B's spool records, environment capture, script,
// work directory, checkpoints or outputs: each attempt fails with EACCES.
func TestCannotReadOrChangeAnothersFiles(t *testing.T) {
	s := setup(t)
	userB := filepath.Join(env.Spool, spool.UsersDir, strconv.Itoa(s.b.UID))
	inB := filepath.Join(userB, spool.IncomingDir, s.recB.ID)
	workB := filepath.Join(userB, spool.WorkDir, s.recB.ID)
	recB := filepath.Join(env.Spool, spool.JobsDir, s.recB.DirName())
	outB := filepath.Join(s.b.Work, "out", "0.out")
	if st, err := os.Stat(outB); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("B's output %s: %v %v, want mode 0600 (B's umask 077, recorded as SLURM_UMASK)", outB, st.Mode(), err)
	}
	for _, c := range []struct{ what, script, path string }{
		{"list B's spool directory", `ls "$1"`, userB},
		{"read B's entry", `cat "$1"`, filepath.Join(inB, spool.EntryFile)},
		{"read B's environment capture", `cat "$1"`, filepath.Join(inB, spool.EnvFile)},
		{"read B's script", `cat "$1"`, filepath.Join(inB, spool.ScriptFile)},
		{"read the daemon's copy of B's script", `cat "$1"`, filepath.Join(recB, spool.ScriptFile)},
		{"read the daemon's record of B's job (B's entry: --export values, arguments, paths)", `cat "$1"`, filepath.Join(recB, spool.RecordFile)},
		{"change B's record", `echo '{}' > "$1"`, filepath.Join(recB, spool.RecordFile)},
		{"append to B's journal", `echo '{}' >> "$1"`, filepath.Join(recB, spool.JournalFile)},
		{"add to B's record directory", `echo x > "$1"`, filepath.Join(recB, "control.json.new")},
		{"write a result into B's work directory", `echo '{}' > "$1"`, filepath.Join(workB, spool.ResultsDir, "0.forged")},
		{"take a lease in B's work directory", `: > "$1"`, filepath.Join(workB, spool.LeasesDir, "1")},
		{"put an entry into B's incoming", `mkdir "$1"`, filepath.Join(userB, spool.IncomingDir, "x")},
		{"read B's output (umask 077)", `cat "$1"`, outB},
		{"change B's output", `echo x >> "$1"`, outB},
		{"create files in B's output directory", `echo x > "$1"`, filepath.Join(s.b.Work, "out", "9.out")},
	} {
		stderr, code := asA(t, s, c.script+" >/dev/null", c.path)
		if code == 0 || !strings.Contains(stderr, "Permission denied") {
			t.Errorf("A could %s (%s): exit %d %q", c.what, c.path, code, stderr)
		}
	}
	// What A may read of B's job is its public status: no entry.
	pub, code := asA(t, s, `cat "$1" >&2`, filepath.Join(recB, spool.StatusFile))
	if code != 0 || !strings.Contains(pub, s.recB.ID) || strings.Contains(pub, `"entry"`) || strings.Contains(pub, s.b.Work) {
		t.Errorf("B's status.json as A: exit %d %q; want B's job without its entry", code, pub)
	}
	for _, c := range []struct {
		who  gleantest.Who
		want bool
	}{{s.a, false}, {s.b, true}} {
		show := env.As(t, c.who, "", "glean", "show", s.anchorB)
		if show.Code != 0 || strings.Contains(show.Stdout, "WorkDir:") != c.want || !strings.Contains(show.Stdout, "State:") {
			t.Errorf("glean show <B's job> as %s: %q %q; the entry (WorkDir) shown: want %v", c.who.Name, show.Stdout, show.Stderr, c.want)
		}
	}
	// Checkpoints, outside the spool: <checkpoint.root>/<anchor>, 0700.
	ckB := filepath.Join(ckpt, s.b.Name, s.anchorB)
	if st, err := os.Stat(ckB); err != nil || st.Mode().Perm() != 0o700 || int(st.Sys().(*syscall.Stat_t).Uid) != s.b.UID {
		t.Errorf("B's checkpoint directory %s: %v %v, want B's, 0700", ckB, st, err)
	}
	for _, c := range []struct{ what, script string }{
		{"list B's checkpoints", `ls "$1"`},
		{"write into B's checkpoints", `echo x > "$1/0/state"`},
	} {
		if stderr, code := asA(t, s, c.script+" >/dev/null", ckB); code == 0 || !strings.Contains(stderr, "Permission denied") {
			t.Errorf("A could %s: %d %q", c.what, code, stderr)
		}
	}
	// A cannot speak to the helper at all (socket 0660 root:glean).
	raw := rawClient(t)
	r := env.As(t, s.a, `{"op":"cancel","job":"`+s.anchorB+`"}`, raw, env.Helper)
	if r.Code != 2 || !strings.Contains(r.Stderr, "permission denied") {
		t.Errorf("A reached the helper: %+v", r)
	}
}

// A squats on B's checkpoint root: with checkpoint.root on a shared
// scratch (<1777 dir>/%u), A creates B's directory before B's first job
// (world-writable, so A could swap anything inside it later). B's agent
// refuses the root (A's, in a directory others may write into): B's task
// runs without GLEAN_CHECKPOINT_DIR, glean_checkpoint_dir refuses too,
// the attempt's detail in the journal says why, and nothing of B's is
// created in A's directory.
func TestCheckpointRootSquatted(t *testing.T) {
	s := setup(t)
	scratch, err := os.MkdirTemp("/tmp", "glsquat-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(scratch)
	if err := os.Chmod(scratch, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	squat := filepath.Join(scratch, s.b.Name)
	if _, code := asA(t, s, `mkdir -m 777 "$1"`, squat); code != 0 {
		t.Fatalf("A could not create %s", squat)
	}
	// The agents read checkpoint.root at their start: B's next pilot
	// sees the squatted root.
	cfg, err := os.ReadFile(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf("root = %q", filepath.Join(ckpt, "%u"))
	if !strings.Contains(string(cfg), old) {
		t.Fatalf("glean.toml has no %s", old)
	}
	if err := os.WriteFile(env.Config, []byte(strings.Replace(string(cfg), old, fmt.Sprintf("root = %q", filepath.Join(scratch, "%u")), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(env.Config, cfg, 0o644)
	script := filepath.Join(s.b.Work, "squat.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
. "$GLEAN_SH"
echo "dir=[${GLEAN_CHECKPOINT_DIR:-}]"
if d=$(glean_checkpoint_dir 2>&1); then echo "got $d"; else echo "refused: $d"; fi
`), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(script, s.b.UID, s.b.GID); err != nil {
		t.Fatal(err)
	}
	anchor := env.SbatchAs(t, s.b, "", "--glean=mode=scavenger,checkpoint=yes", "--array=0", "-o", "out/squat.out",
		"--export=ALL,GLEAN_SH="+filepath.Join(env.Wrappers, "glean.sh"), "squat.sh")
	r := env.WaitState(t, anchor, 2*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if r.State != spool.StateDone {
		t.Fatalf("B's job %s", r.State)
	}
	out, err := os.ReadFile(filepath.Join(s.b.Work, "out", "squat.out"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "dir=[]") || !strings.Contains(string(out), fmt.Sprintf("refused: glean_checkpoint_dir: %s is owned by uid %d, not yours", squat, s.a.UID)) {
		t.Errorf("B's task printed %q, want no directory and glean_checkpoint_dir's refusal", out)
	}
	detail := ""
	for _, ev := range env.TaskEvents(t, anchor) {
		detail += ev.Detail
	}
	if !strings.Contains(detail, "no checkpoint directory: checkpoint root refused: "+squat+" is owned by uid "+strconv.Itoa(s.a.UID)) {
		t.Errorf("the attempt's detail %q does not say why B's task had no checkpoint directory", detail)
	}
	if ents, err := os.ReadDir(squat); err != nil || len(ents) != 0 {
		t.Errorf("in A's directory %s: %v %v, want nothing of B's", squat, ents, err)
	}
}

var rawBin string

func rawClient(t *testing.T) string {
	t.Helper()
	if rawBin == "" {
		rawBin = filepath.Join(env.Dir, "bin", "rawclient")
		build := exec.Command("go", "build", "-o", rawBin, "./tests/submit/rawclient")
		build.Dir = gleantest.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build rawclient: %v %s", err, out)
		}
	}
	return rawBin
}

// asGlean sends one raw request to the helper as the glean user.
func asGlean(t *testing.T, req string) string {
	t.Helper()
	cmd := exec.Command(rawClient(t), env.Helper)
	cmd.Stdin = strings.NewReader(req + "\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(env.GleanUID), Gid: uint32(env.GleanGID)}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rawclient %s: %v %s", req, err, out)
	}
	return string(out)
}

// forgeRecord writes a record under jobs/ as the daemon's user could (a
// compromised gleand): owned by owner.
func forgeRecord(t *testing.T, r *spool.Record, owner int) string {
	t.Helper()
	dir := filepath.Join(env.Spool, spool.JobsDir, r.DirName())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(r)
	p := filepath.Join(dir, spool.RecordFile)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dir, p} {
		if err := os.Chown(f, owner, env.GleanGID); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return r.DirName()
}

// gleand runs as glean; the helper, spoken to as glean with raw
// requests, refuses a free-form op, a pilot for a record that is not the
// daemon's, for root, for a system uid, and cancelling B's pilot through
// A's record; B's pilots and tasks are untouched.
func TestDaemonUnprivilegedHelperNarrow(t *testing.T) {
	s := setup(t)
	uids, gids := procIDs(t, env.DaemonPID())
	if !all(uids, env.GleanUID) || !all(gids, env.GleanGID) {
		t.Errorf("gleand (pid %d): Uid %v Gid %v, want glean %d/%d", env.DaemonPID(), uids, gids, env.GleanUID, env.GleanGID)
	}
	pilotB := strconv.Itoa(s.pidsB[0][3])
	token := strings.Repeat("ab", 16)
	fresh := func(uid int, user string) *spool.Record {
		r := *s.recA
		e := *r.Entry
		e.ID = spool.NewID(time.Now())
		r.ID, r.UID, r.User, r.Entry = e.ID, uid, user, &e
		r.State = spool.StateRunning
		return &r
	}
	notDaemons := forgeRecord(t, fresh(s.a.UID, s.a.Name), s.a.UID)
	roots := forgeRecord(t, fresh(0, "root"), env.GleanUID)
	system := forgeRecord(t, fresh(1, "daemon"), env.GleanUID)
	claim := fresh(s.a.UID, s.a.Name)
	claim.PilotJobs = []spool.PilotJob{{ID: pilotB}}
	claims := forgeRecord(t, claim, env.GleanUID)
	// A pilot intent whose node is an option: the helper takes nodes from
	// the record, and checks them there too.
	inject := fresh(s.a.UID, s.a.Name)
	inject.PilotJobs = []spool.PilotJob{{Token: token, Node: "--uid=0", TimeLimit: 5 * time.Minute}}
	injects := forgeRecord(t, inject, env.GleanUID)
	for _, c := range []struct{ req, want string }{
		{`{"op":"exec","argv":["/bin/sh","-c","id"]}`, `unknown field "argv"`},
		{`{"op":"exec","job":"` + s.anchorB + `"}`, `unknown op "exec"`},
		{`{"op":"submit-pilots","record":"` + notDaemons + `","tokens":["` + token + `"]}`, "record " + notDaemons},
		{`{"op":"submit-pilots","record":"` + roots + `","tokens":["` + token + `"]}`, "glean does not act for root"},
		{`{"op":"submit-pilots","record":"` + system + `","tokens":["` + token + `"]}`, "is a system account"},
		{`{"op":"submit-pilots","record":"` + s.recA.DirName() + `","tokens":["` + token + `"]}`, "holds no pilot with token"},
		{`{"op":"submit-pilots","record":"` + injects + `","tokens":["` + token + `"]}`, "bad node name"},
		{`{"op":"submit-pilots","record":"` + s.recA.DirName() + `","node":"--uid=0","tokens":["` + token + `"]}`, `unknown field "node"`},
		{`{"op":"cancel-pilot","job":"` + pilotB + `","record":"` + s.recA.DirName() + `"}`, "is not a pilot of record"},
		{`{"op":"signal-pilot","job":"` + pilotB + `","record":"` + s.recA.DirName() + `"}`, "is not a pilot of record"},
		{`{"op":"cancel-pending-pilot","job":"` + pilotB + `","record":"` + claims + `"}`, "belongs to " + s.b.Name},
		{`{"op":"cancel-pilot","job":"` + pilotB + `","record":"` + claims + `"}`, "belongs to " + s.b.Name},
		{`{"op":"cancel","job":"` + pilotB + `"}`, "not a job glean recorded"},
		{`{"op":"hold","job":"` + s.anchorB + `","record":"` + s.recA.DirName() + `"}`, "takes no record"},
	} {
		ans := asGlean(t, c.req)
		var resp struct {
			OK      bool   `json:"ok"`
			Refused bool   `json:"refused"`
			Error   string `json:"error"`
		}
		if json.Unmarshal([]byte(ans), &resp) != nil || resp.OK || !resp.Refused || !strings.Contains(resp.Error, c.want) {
			t.Errorf("helper answered %s with %q, want a refusal with %q", c.req, ans, c.want)
		}
	}
	if out := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-j", pilotB, "-o", "%T %u")); out != "RUNNING "+s.b.Name {
		t.Errorf("B's pilot %s after the refused requests: %q", pilotB, out)
	}
	if out := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-u", "root", "-p", "pilot", "-o", "%i")); out != "" {
		t.Errorf("pilots of root's: %q", out)
	}
}

// A script the daemon cannot read (mode 0600: gleand runs as glean, not
// as root) is a clear rejection; the entry was never verified, so its
// anchor is left as A submitted it (A's own hold, A's to cancel), and
// nothing else is affected.
func TestUnreadableScript(t *testing.T) {
	s := setup(t)
	now := time.Now()
	e := &spool.Entry{Version: spool.EntryVersion, ID: spool.NewID(now), Nonce: spool.NewNonce(), Submitted: now,
		User: s.a.Name, Name: "unreadable", Mode: "scavenger", Script: "x.sh", Cwd: s.a.Work, Export: "ALL",
		Tasks: 1, Resources: spool.Resources{CPUsPerTask: 1, NTasks: 1, CPUs: 1}}
	out := env.As(t, s.a, "", "/usr/bin/sbatch", "--parsable", "--hold", "-p", "glean", "-o", "/dev/null",
		"--comment="+spool.Comment(e.ID, e.Nonce), "--wrap", "exec true")
	if out.Code != 0 {
		t.Fatalf("A's anchor: %+v", out)
	}
	e.Anchor = strings.TrimSpace(out.Stdout)
	writeEntryMode(t, s.a, e, nil, 0o600)
	r := recordOf(t, s.a, e.ID)
	if r.State != spool.StateRejected || !strings.Contains(r.Reason, "script: permission denied") || r.UID != s.a.UID {
		t.Errorf("record %s %q uid %d, want rejected: script: permission denied", r.State, r.Reason, r.UID)
	}
	if st := strings.TrimSpace(cl.Run(t, "squeue", "-h", "-j", e.Anchor, "-o", "%T %r %u")); st != "PENDING JobHeldUser "+s.a.Name {
		t.Errorf("the unverified anchor %s: %q, want untouched", e.Anchor, st)
	}
	if show := env.As(t, s.a, "", "glean", "show", e.ID); !strings.Contains(show.Stdout, "permission denied") {
		t.Errorf("glean show: %q %q", show.Stdout, show.Stderr)
	}
	for _, rec := range []*spool.Record{recordOf(t, s.a, s.recA.ID), recordOf(t, s.b, s.recB.ID)} {
		if rec == nil || rec.State != spool.StateRunning {
			t.Errorf("another job after the rejection: %+v", rec)
		}
	}
}
