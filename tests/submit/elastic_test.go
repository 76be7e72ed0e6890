package submit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

var daemonOnce sync.Once

// startDaemon runs the real glean-helper as root (which the loopback
// Slurm treats as an operator) and the real gleand as the glean user for
// the rest of the package's tests.
func (e *env) startDaemon(t *testing.T) {
	t.Helper()
	daemonOnce.Do(func() {
		start := func(name string, cred *syscall.Credential) *exec.Cmd {
			cmd := exec.Command(filepath.Join(e.Bin, name), "-config", e.Config)
			cmd.Env = []string{"PATH=" + basePath, "SLURM_CONF=" + cl.Conf}
			logf, err := os.Create(filepath.Join(e.Dir, name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			cmd.Stdout, cmd.Stderr = logf, logf
			if cred != nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return cmd
		}
		helperProc = start("glean-helper", nil)
		cl.WaitFor(t, 10*time.Second, "glean-helper's socket", func() bool {
			st, err := os.Stat(e.Helper)
			return err == nil && st.Mode()&os.ModeSocket != 0
		})
		daemonProc = start("gleand", &syscall.Credential{Uid: uint32(e.GleanUID), Gid: uint32(e.GleanGID)})
	})
	if daemonProc == nil || helperProc == nil {
		t.Fatal("gleand or glean-helper did not start")
	}
}

var daemonProc, helperProc *exec.Cmd

// stopDaemon stops gleand, then glean-helper: TestZZStopDaemon, before the
// cluster goes down, and TestMain, in case that test did not run.
func stopDaemon() {
	for _, p := range []**exec.Cmd{&daemonProc, &helperProc} {
		if *p != nil && (*p).Process != nil {
			_ = (*p).Process.Signal(syscall.SIGTERM)
			_ = (*p).Wait()
			*p = nil
		}
	}
}

// asUser runs a command as the test user with the wrapper first in PATH.
func (e *env) asUser(t *testing.T, name string, args ...string) result {
	t.Helper()
	// Through sh, so that the user's PATH (the wrapper first) finds the command.
	cmd := exec.Command("/bin/sh", append([]string{"-c", `exec "$0" "$@"`, name}, args...)...)
	cmd.Env = []string{"PATH=" + e.Wrappers + ":" + e.Bin + ":" + basePath, "SLURM_CONF=" + cl.Conf, "GLEAN_CONFIG=" + e.Config, "HOME=" + e.Work}
	cmd.Dir = e.Work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.UID), Gid: uint32(e.GID)}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// entries lists the test user's incoming names (temporary ones included).
func (e *env) entries(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.Spool, spool.UsersDir, itoa(e.UID), spool.IncomingDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	sort.Strings(names)
	return names
}

func itoa(i int) string { return strconv.Itoa(i) }

// readEntry reads the entry whose anchor is id.
func (e *env) readEntry(t *testing.T, id string) (*spool.Entry, string) {
	t.Helper()
	for _, n := range e.entries(t) {
		dir := filepath.Join(e.Spool, spool.UsersDir, itoa(e.UID), spool.IncomingDir, n)
		data, err := os.ReadFile(filepath.Join(dir, spool.EntryFile))
		if err != nil {
			continue
		}
		var en spool.Entry
		if json.Unmarshal(data, &en) == nil && en.Anchor == id {
			return &en, dir
		}
	}
	t.Fatalf("no entry for anchor %s", id)
	return nil, ""
}

// liveJobs lists the jobs that are not cancelled or ended.
func liveJobs(t *testing.T) []string {
	t.Helper()
	return strings.Fields(cl.Run(t, "squeue", "-h", "-o", "%A"))
}

func showJob(t *testing.T, id string) map[string]string {
	t.Helper()
	out := cl.Run(t, "scontrol", "-o", "show", "job", id)
	m := map[string]string{}
	for _, f := range strings.Fields(strings.SplitN(out, "\n", 2)[0]) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if _, seen := m[k]; !seen {
				m[k] = v
			}
		}
	}
	return m
}

// gated: a job (scontrol show job's fields) is behind the begin time the
// wrapper gives a shadow array until gleand lets it start.
func gated(t *testing.T, job map[string]string) bool {
	t.Helper()
	at, err := strconv.ParseInt(job["EligibleTime"], 10, 64) // SLURM_TIME_FORMAT=%s
	if err != nil {
		t.Fatalf("EligibleTime %q: %v", job["EligibleTime"], err)
	}
	return time.Unix(at, 0).After(time.Now().Add(300 * 24 * time.Hour))
}

func (e *env) status(t *testing.T) []spool.Record {
	t.Helper()
	r := e.asUser(t, filepath.Join(e.Bin, "glean"), "status", "--json", "-a")
	if r.Code != 0 {
		t.Fatalf("glean status: %d %s", r.Code, r.Stderr)
	}
	var v struct{ Jobs []spool.Record }
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("glean status --json: %v: %s", err, r.Stdout)
	}
	return v.Jobs
}

func (e *env) waitState(t *testing.T, anchor, state string) spool.Record {
	t.Helper()
	var got spool.Record
	cl.WaitFor(t, 30*time.Second, "job "+anchor+" "+state+" in glean status", func() bool {
		for _, r := range e.status(t) {
			if r.Anchor == anchor {
				got = r
				return r.State == state
			}
		}
		return false
	})
	return got
}

const elasticJob = `#!/bin/sh
#SBATCH --glean
#SBATCH -J calib
#SBATCH -t 5
echo task $SLURM_ARRAY_TASK_ID
`

// Done when: a new user, the wrapper first in PATH, submits an elastic
// array job: it prints a real id that squeue -j shows, it appears in glean
// status, and scancel cancels it (the shadow array with it).
func TestElasticArrayJob(t *testing.T) {
	e := setup(t)
	e.startDaemon(t)
	e.writeFiles(t, map[string]string{"calib.sh": elasticJob})
	r := e.asUser(t, "sbatch", "--array=0-149", "--glean=budget=2.5", "calib.sh")
	if r.Code != 0 || r.Stderr != "" || !strings.HasPrefix(r.Stdout, "Submitted batch job ") || strings.Count(r.Stdout, "\n") != 1 {
		t.Fatalf("submission: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	id := jobID(r.Stdout)
	if out, err := e.slurmAsUser(t, "squeue", "-h", "-j", id, "-o", "%A %u %P %j"); err != nil || !strings.HasPrefix(out, id+" "+testUser+" glean calib") {
		t.Fatalf("squeue -j %s: %q %v", id, out, err)
	}
	en, dir := e.readEntry(t, id)
	if en.Tasks != 150 || en.Mode != "fair" || en.Shadow == "" || en.Name != "calib" {
		t.Fatalf("entry %+v", en)
	}
	// The entry: a fixed set of files, the environment readable only by its owner.
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	if strings.Join(names, " ") != "entry.json env script" {
		t.Errorf("entry files %v", names)
	}
	for name, mode := range map[string]os.FileMode{"entry.json": 0o640, "script": 0o640, "env": 0o600} {
		st, _ := os.Stat(filepath.Join(dir, name))
		sys := st.Sys().(*syscall.Stat_t)
		if st.Mode().Perm() != mode || int(sys.Uid) != e.UID || int(sys.Gid) != e.GleanGID {
			t.Errorf("%s: mode %v uid %d gid %d, want %v %d %d", name, st.Mode().Perm(), sys.Uid, sys.Gid, mode, e.UID, e.GleanGID)
		}
	}
	st, _ := os.Stat(filepath.Dir(filepath.Dir(dir)))
	if st.Mode()&os.ModeSetgid == 0 || st.Mode().Perm() != 0o770 {
		t.Errorf("user directory mode %v, want 2770", st.Mode())
	}
	// The daemon's user reads the entry and the script, not the environment.
	for file, readable := range map[string]bool{"entry.json": true, "script": true, "env": false} {
		cmd := exec.Command("cat", filepath.Join(dir, file))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.GleanUID), Gid: uint32(e.GleanGID)}}
		if err := cmd.Run(); (err == nil) != readable {
			t.Errorf("user glean reading %s: %v, want readable=%v", file, err, readable)
		}
	}
	// The shadow array: the same array, owned by the user.
	sh := showJob(t, en.Shadow)
	if sh["ArrayTaskId"] != "0-149" || sh["Partition"] != "batch" || !strings.HasPrefix(sh["UserId"], testUser) || sh["JobName"] != "calib" {
		t.Errorf("shadow array %v", sh)
	}

	rec := e.waitState(t, id, spool.StateQueued)
	if rec.Tasks.Pending != 150 || rec.Mode != "fair" {
		t.Errorf("status record %+v", rec)
	}
	if got := showJob(t, id)["Reason"]; got != "JobHeldAdmin" {
		t.Errorf("anchor reason after intake %s, want JobHeldAdmin", got)
	}
	// The shadow array may start, as the plain job, in its place: never
	// held (a release would requeue it last).
	cl.WaitFor(t, 10*time.Second, "the shadow array to be let start", func() bool { return !gated(t, showJob(t, en.Shadow)) })
	if sh := showJob(t, en.Shadow); sh["Priority"] == "0" || strings.HasPrefix(sh["Reason"], "JobHeld") {
		t.Errorf("shadow array %s: priority %s, reason %s; want it never held", en.Shadow, sh["Priority"], sh["Reason"])
	}
	// The user cannot release the admin hold.
	if out, err := e.slurmAsUser(t, "scontrol", "release", id); err == nil {
		t.Errorf("the user released the anchor: %s", out)
	}
	tab := e.asUser(t, filepath.Join(e.Bin, "glean"), "status")
	if !strings.Contains(tab.Stdout, "JOBID") || !strings.Contains(tab.Stdout, id) || !strings.Contains(tab.Stdout, "queued") {
		t.Errorf("glean status:\n%s", tab.Stdout)
	}
	show := e.asUser(t, filepath.Join(e.Bin, "glean"), "show", id)
	if show.Code != 0 || !strings.Contains(show.Stdout, "ShadowArray: "+en.Shadow) || !strings.Contains(show.Stdout, "Array:") ||
		!regexp.MustCompile(`(?m)^Budget: +2\.5 node-hours of pilots, `).MatchString(show.Stdout) {
		t.Errorf("glean show:\n%s%s", show.Stdout, show.Stderr)
	}

	if out, err := e.slurmAsUser(t, "scancel", id); err != nil {
		t.Fatalf("scancel: %v %s", err, out)
	}
	rec = e.waitState(t, id, spool.StateCancelled)
	if !strings.Contains(rec.Reason, "cancelled") {
		t.Errorf("reason %q", rec.Reason)
	}
	if st := showJob(t, en.Shadow)["JobState"]; st != "CANCELLED" {
		t.Errorf("shadow array %s after scancel of the anchor", st)
	}
}

// glean cancel does what scancel on the id does.
func TestGleanCancel(t *testing.T) {
	e := setup(t)
	e.startDaemon(t)
	e.writeFiles(t, map[string]string{"calib.sh": elasticJob})
	r := e.asUser(t, "sbatch", "--parsable", "--glean=mode=scavenger", "--array=0-9", "calib.sh")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != jobID(r.Stdout) {
		t.Fatalf("--parsable: %+v", r)
	}
	id := jobID(r.Stdout)
	e.waitState(t, id, spool.StateQueued)
	if c := e.asUser(t, filepath.Join(e.Bin, "glean"), "cancel", id); c.Code != 0 || c.Stdout != "" || c.Stderr != "" {
		t.Fatalf("glean cancel: %+v", c)
	}
	e.waitState(t, id, spool.StateCancelled)
	if c := e.asUser(t, filepath.Join(e.Bin, "glean"), "cancel", id); c.Code != 1 || !strings.Contains(c.Stderr, "already ended") {
		t.Errorf("second cancel: %+v", c)
	}
}

// Bad submissions get one clear line, sbatch's exit code, and leave
// nothing behind: no live Slurm job, no entry, no temporary directory.
func TestElasticRefusalsLeaveNothing(t *testing.T) {
	e := setup(t)
	e.writeFiles(t, map[string]string{"calib.sh": elasticJob})
	tiny := filepath.Join(e.Dir, "tiny.toml")
	if err := os.WriteFile(tiny, []byte("[spool]\ndir = \""+e.Spool+"\"\nmax_entry_bytes = 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nospool := filepath.Join(e.Dir, "nospool2.toml")
	os.WriteFile(nospool, []byte("[spool]\ndir = \"/nonexistent/spool\"\n"), 0o644)
	noanchor := filepath.Join(e.Dir, "noanchor.toml")
	os.WriteFile(noanchor, []byte("[partitions]\nanchor = \"nosuch\"\n[spool]\ndir = \""+e.Spool+"\"\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		code int
		msg  string
	}{
		{"multi-node", []string{"-N", "2", "--array=0-3", "calib.sh"}, nil, 1, "sbatch: error: glean: --nodes=2: an elastic job's tasks run on one node each"},
		{"hold", []string{"--hold", "calib.sh"}, nil, 1, "sbatch: error: glean: --hold: the id is an anchor job"},
		{"bad glean key", []string{"--glean=colour=red", "calib.sh"}, nil, 255, `sbatch: error: glean: --glean=colour=red: unknown key "colour"`},
		{"thesis", []string{"--glean=mode=thesis", "calib.sh"}, nil, 1, "sbatch: error: glean: --glean=mode=thesis: mode=thesis is for admins"},
		{"bad option", []string{"--glean", "--bogus", "calib.sh"}, nil, 255, "sbatch: error: glean: glean's sbatch wrapper does not know the option --bogus"},
		{"shadow rejected by Slurm (MaxArraySize)", []string{"--array=0-5000", "calib.sh"}, nil, 1, "sbatch: error: Batch job submission failed: Invalid job array specification"},
		{"shadow rejected by Slurm (partition)", []string{"-p", "nosuch", "calib.sh"}, nil, 1, "sbatch: error: invalid partition specified: nosuch"},
		{"anchor rejected by Slurm", []string{"--glean=mode=scavenger", "calib.sh"}, []string{"GLEAN_CONFIG=" + noanchor}, 1, "sbatch: error: invalid partition specified: nosuch"},
		{"entry cannot be written", []string{"--array=0-3", "calib.sh"}, []string{"GLEAN_CONFIG=" + tiny}, 1, "sbatch: error: glean: writing the spool entry"},
		{"spool missing", []string{"calib.sh"}, []string{"GLEAN_CONFIG=" + nospool}, 1, "sbatch: error: glean: spool /nonexistent/spool/users"},
		{"test-only submits nothing", []string{"--glean", "--test-only", "--array=0-3", "calib.sh"}, nil, 0, "sbatch: Job "},
		{"dependency type glean cannot wait for", []string{"--dependency=singleton", "calib.sh"}, nil, 1, "sbatch: error: glean: --dependency=singleton: singleton is not supported for elastic jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.entries(t)
			r := e.run(t, true, inv{name: tc.name, args: tc.args, env: tc.env})
			if r.Code != tc.code || !strings.HasPrefix(r.Stderr, tc.msg) || r.Stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and %q", r.Code, r.Stdout, r.Stderr, tc.code, tc.msg)
			}
			if strings.HasPrefix(tc.msg, "sbatch: error: glean:") && strings.Count(r.Stderr, "\n") != 1 {
				t.Errorf("not one line: %q", r.Stderr)
			}
			if live := liveJobs(t); len(live) > 0 {
				t.Errorf("jobs left behind: %v", live)
			}
			if after := e.entries(t); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Errorf("spool changed: %v -> %v", before, after)
			}
			cancelAll(t)
		})
	}
}

// The shadow array is queued with the options plain sbatch would have
// queued for the same submission, from the command line, the script's
// directives and SBATCH_* variables alike.
func TestShadowMatchesPlainSbatch(t *testing.T) {
	e := setup(t)
	plainScript := "#!/bin/sh\n#SBATCH -J dirname\n#SBATCH -t 7 --mem=200\n#SBATCH --array=1,3,5-11:2%2\necho $SLURM_ARRAY_TASK_ID\n"
	elasticScript := strings.Replace(plainScript, "#!/bin/sh\n", "#!/bin/sh\n#SBATCH --glean=mode=fair\n", 1)
	e.writeFiles(t, map[string]string{"plain.sh": plainScript, "elastic.sh": elasticScript})
	for _, tc := range []struct {
		name string
		args []string // before the script
		env  []string
	}{
		{"directives", nil, nil},
		// (afterany: a held job of the test's own, so that the dependency
		// stays unfulfilled while both are read: one on a job that ends
		// meanwhile was cleared from the plain job before the shadow.)
		{"command line", []string{"-p", "batch", "-t", "9", "-c", "1", "-N", "1", "-n", "1", "--nice=5", "--array=0-9%3", "-J", "cli", "--dependency=afterany:BLOCKER"}, nil},
		{"environment", nil, []string{"SBATCH_TIMELIMIT=11", "SBATCH_PARTITION=pilot", "SBATCH_JOB_NAME=envname"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if i := slices.Index(tc.args, "--dependency=afterany:BLOCKER"); i >= 0 {
				blocker := e.run(t, false, inv{name: "blocker", args: []string{"--hold", "--parsable", "--wrap", "true"}})
				if blocker.Code != 0 {
					t.Fatalf("blocker: %+v", blocker)
				}
				tc.args = slices.Clone(tc.args)
				tc.args[i] = "--dependency=afterany:" + jobID(blocker.Stdout)
			}
			// The plain job waits as the shadow array does (a held job
			// shows OverSubscribe=OK, one behind its begin time NO).
			plain := e.run(t, false, inv{name: tc.name, args: append(append([]string{"--begin=now+365days", "--parsable"}, tc.args...), "plain.sh"), env: tc.env})
			elastic := e.run(t, true, inv{name: tc.name, args: append(append([]string{"--parsable"}, tc.args...), "elastic.sh"), env: tc.env})
			if plain.Code != 0 || elastic.Code != 0 {
				t.Fatalf("plain %+v elastic %+v", plain, elastic)
			}
			en, _ := e.readEntry(t, jobID(elastic.Stdout))
			p, s := showJob(t, jobID(plain.Stdout)), showJob(t, en.Shadow)
			for _, k := range []string{"JobName", "Partition", "TimeLimit", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "MinMemoryNode", "MinMemoryCPU",
				"ArrayTaskId", "QOS", "Account", "Nice", "Dependency", "WorkDir", "Features", "TRES", "ReqNodeList", "ExcNodeList", "OverSubscribe", "Reservation", "Requeue", "TimeMin"} {
				if p[k] != s[k] {
					t.Errorf("%s: plain sbatch %q, shadow array %q", k, p[k], s[k])
				}
			}
			if s["JobState"] != "PENDING" || !gated(t, s) || s["Priority"] == "0" || !strings.HasPrefix(s["UserId"], testUser) {
				t.Errorf("shadow array not pending for the user behind glean's begin time, unheld: %v", s)
			}
			cancelAll(t)
		})
	}
}

// --dependency and --begin: the anchor carries them (Slurm checks and
// shows them on the id) and the job waits for them in glean status.
func TestDependencyAndBegin(t *testing.T) {
	e := setup(t)
	e.startDaemon(t)
	e.writeFiles(t, map[string]string{"calib.sh": elasticJob})
	blocker := jobID(e.run(t, false, inv{name: "blocker", args: []string{"-H", "--parsable", "--wrap", "true"}}).Stdout)
	r := e.asUser(t, "sbatch", "--parsable", "--dependency=afterok:"+blocker, "--array=0-3", "calib.sh")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	dep := jobID(r.Stdout)
	if got := showJob(t, dep)["Dependency"]; !strings.HasPrefix(got, "afterok:"+blocker) {
		t.Errorf("anchor Dependency=%s", got)
	}
	rec := e.waitState(t, dep, spool.StateWaiting)
	if len(rec.Waiting) != 1 || !strings.Contains(rec.Waiting[0], "dependency afterok:"+blocker) {
		t.Errorf("waiting %v", rec.Waiting)
	}
	// The blocker completes: the job's tasks become claimable.
	cl.Run(t, "scontrol", "release", blocker)
	e.waitState(t, dep, spool.StateQueued)

	r = e.asUser(t, "sbatch", "--parsable", "--begin=now+1hour", "--glean=mode=scavenger", "calib.sh")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	begin := jobID(r.Stdout)
	rec = e.waitState(t, begin, spool.StateWaiting)
	if len(rec.Waiting) != 1 || !strings.HasPrefix(rec.Waiting[0], "begin ") {
		t.Errorf("waiting %v", rec.Waiting)
	}
	at, err := time.Parse(time.RFC3339, strings.TrimPrefix(rec.Waiting[0], "begin "))
	if err != nil || at.Sub(time.Now()) < 55*time.Minute || at.Sub(time.Now()) > 65*time.Minute {
		t.Errorf("begin %v (%v), want in an hour", at, err)
	}
}

// --mail-* go on the anchor only; --export decides the captured
// environment; --wait waits for the anchor like sbatch --wait.
func TestMailExportWait(t *testing.T) {
	e := setup(t)
	e.writeFiles(t, map[string]string{"calib.sh": elasticJob})
	r := e.run(t, true, inv{name: "mail", args: []string{"--parsable", "--mail-type=END", "--mail-user=someone@example.org", "--export=FOO,BAR=2", "calib.sh"},
		env: []string{"FOO=1", "SECRET=x", "SLURM_KEEP=k"}})
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	id := jobID(r.Stdout)
	en, dir := e.readEntry(t, id)
	a, s := showJob(t, id), showJob(t, en.Shadow)
	if a["MailUser"] != "someone@example.org" || a["MailType"] != "END" {
		t.Errorf("anchor mail: %s %s", a["MailUser"], a["MailType"])
	}
	if s["MailType"] != "NONE" && s["MailType"] != "" {
		t.Errorf("shadow array mails: %s", s["MailType"])
	}
	env, err := os.ReadFile(filepath.Join(dir, spool.EnvFile))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimRight(string(env), "\x00"), "\x00")
	sort.Strings(got)
	// SLURM_UMASK: the umask at submission, as sbatch passes it to slurmd.
	if strings.Join(got, " ") != "BAR=2 FOO=1 SLURM_CONF="+cl.Conf+" SLURM_KEEP=k SLURM_UMASK=0022" {
		t.Errorf("--export=FOO,BAR=2 captured %q", got)
	}
	r = e.run(t, true, inv{name: "none", args: []string{"--parsable", "--export=NONE", "calib.sh"}, env: []string{"FOO=1"}})
	_, dir = e.readEntry(t, jobID(r.Stdout))
	env, _ = os.ReadFile(filepath.Join(dir, spool.EnvFile))
	if strings.Contains(string(env), "FOO=") || !strings.Contains(string(env), "SLURM_CONF=") {
		t.Errorf("--export=NONE captured %q", env)
	}

	// --wait: the wrapper prints the id at once and returns when the anchor
	// ends, with sbatch --wait's code for a cancelled job (1).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `exec sbatch "$@"`, "sh", "--wait", "--glean=mode=scavenger", "calib.sh")
	cmd.Env = []string{"PATH=" + e.Wrappers + ":" + basePath, "SLURM_CONF=" + cl.Conf, "GLEAN_CONFIG=" + e.Config}
	cmd.Dir = e.Work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.UID), Gid: uint32(e.GID)}}
	var out syncBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitID string
	cl.WaitFor(t, 30*time.Second, "--wait to print the id", func() bool { waitID = jobID(out.String()); return waitID != "" })
	if _, err := e.slurmAsUser(t, "scancel", waitID); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("--wait on a cancelled job ended with %v, want exit 1", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The data-folder form derives the array from the folder; a partition the
// site marks elastic makes a plain submission elastic.
func TestDataFolderAndElasticPartition(t *testing.T) {
	e := setup(t)
	files := map[string]string{"plainjob.sh": jobScript}
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5", ".skip"} {
		files["data/"+n] = "x"
	}
	e.writeFiles(t, files)
	r := e.run(t, true, inv{name: "dir", args: []string{"--parsable", "--glean=dir=data,batch=2", "plainjob.sh"}})
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	en, dir := e.readEntry(t, jobID(r.Stdout))
	items, _ := os.ReadFile(filepath.Join(dir, spool.ItemsFile))
	if en.Tasks != 3 || en.Items == nil || en.Items.Count != 5 || string(items) != "s1\ns2\ns3\ns4\ns5\n" {
		t.Fatalf("entry %+v items %q", en.Items, items)
	}
	if got := showJob(t, en.Shadow)["ArrayTaskId"]; got != "0-2" {
		t.Errorf("shadow array %s, want 0-2", got)
	}
	elastic := filepath.Join(e.Dir, "elasticpart.toml")
	if err := e.writeConfig(elastic, `elastic = ["pilot"]`); err != nil {
		t.Fatal(err)
	}
	r = e.run(t, true, inv{name: "partition", args: []string{"--parsable", "-p", "pilot", "plainjob.sh"}, env: []string{"GLEAN_CONFIG=" + elastic}})
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	if en, _ := e.readEntry(t, jobID(r.Stdout)); en.Mode != "fair" || showJob(t, en.Anchor)["Partition"] != "glean" {
		t.Errorf("elastic partition: %+v", en)
	}
	// The same submission to a partition not marked elastic passes through.
	r = e.run(t, true, inv{name: "plain", args: []string{"--parsable", "-H", "-p", "batch", "plainjob.sh"}, env: []string{"GLEAN_CONFIG=" + elastic}})
	if r.Code != 0 || showJob(t, jobID(r.Stdout))["Partition"] != "batch" {
		t.Errorf("plain submission: %+v", r)
	}
}

// Entries the daemon refuses are kept aside with a reason the owner reads
// through glean status and glean show: a forged nonce, a hardlinked file.
func TestIntakeRejectionsVisible(t *testing.T) {
	e := setup(t)
	e.startDaemon(t)
	e.writeFiles(t, map[string]string{"calib.sh": elasticJob})
	r := e.asUser(t, "sbatch", "--parsable", "--glean=mode=scavenger", "calib.sh")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	real := jobID(r.Stdout)
	_, dir := e.readEntry(t, real)
	// As the user: copy the entry under a new id with a forged nonce.
	forgedID := spool.NewID(time.Now())
	data, _ := os.ReadFile(filepath.Join(dir, spool.EntryFile))
	var en spool.Entry
	json.Unmarshal(data, &en)
	en.ID, en.Nonce = forgedID, strings.Repeat("ab", 16)
	forged, _ := en.Encode()
	script, _ := os.ReadFile(filepath.Join(dir, spool.ScriptFile))
	tmp := filepath.Join(e.Dir, "forged")
	os.MkdirAll(tmp, 0o755)
	os.WriteFile(filepath.Join(tmp, "entry.json"), forged, 0o644)
	os.WriteFile(filepath.Join(tmp, "script"), script, 0o644)
	target := filepath.Join(filepath.Dir(dir), forgedID)
	if c := e.asUser(t, "/bin/sh", "-c", `mkdir "$1" && cp "$2/entry.json" "$2/script" "$1/"`, "sh", target, tmp); c.Code != 0 {
		t.Fatalf("writing the forged entry as the user: %+v", c)
	}
	var rej spool.Record
	cl.WaitFor(t, 30*time.Second, "the forged entry to be rejected", func() bool {
		for _, r := range e.status(t) {
			if r.ID == forgedID {
				rej = r
				return r.State == spool.StateRejected
			}
		}
		return false
	})
	if !strings.Contains(rej.Reason, "does not carry this entry's id and nonce") {
		t.Errorf("reason %q", rej.Reason)
	}
	if got := showJob(t, real)["JobState"]; got != "PENDING" {
		t.Errorf("the real job's anchor was touched: %s", got)
	}
	show := e.asUser(t, filepath.Join(e.Bin, "glean"), "show", forgedID)
	if show.Code != 0 || !regexp.MustCompile(`State:\s+rejected`).MatchString(show.Stdout) || !strings.Contains(show.Stdout, "nonce") {
		t.Errorf("glean show of the rejection:\n%s%s", show.Stdout, show.Stderr)
	}
	tab := e.asUser(t, filepath.Join(e.Bin, "glean"), "status")
	if !strings.Contains(tab.Stdout, "rejected: anchor job "+real) {
		t.Errorf("glean status:\n%s", tab.Stdout)
	}
}

// TestZZStopDaemon runs after this file's tests (tests run in source
// order) and stops gleand while the cluster is still up.
func TestZZStopDaemon(t *testing.T) { stopDaemon() }
