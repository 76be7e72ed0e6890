package submit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/privhelper"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// runAs runs a command as uid:gid with stdin and returns what it printed.
func runAs(t *testing.T, uid, gid int, stdin, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{"PATH=" + basePath, "SLURM_CONF=" + cl.Conf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// ask sends a raw request line to glean-helper as the glean user.
func (e *env) ask(t *testing.T, line string) privhelper.Response {
	t.Helper()
	out, errs, code := runAs(t, e.GleanUID, e.GleanGID, line, filepath.Join(e.Bin, "rawclient"), e.Helper)
	var resp privhelper.Response
	if code != 0 || strings.Contains(errs, "dial") || json.Unmarshal([]byte(out), &resp) != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("request %q: exit %d, answer %q, stderr %q", line, code, out, errs)
	}
	return resp
}

func procUIDs(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if u, ok := strings.CutPrefix(l, "Uid:"); ok {
			return strings.Join(strings.Fields(u), " ")
		}
	}
	return ""
}

// gleand runs as glean, which cannot hold a job itself; its intake puts
// the anchor and the shadow array on an admin hold through glean-helper
// (root), which refuses what the daemon did not record, a job another
// user dressed up as a recorded anchor, malformed requests and every uid
// but glean's.
func TestHelperPrivilegeSeparation(t *testing.T) {
	e := setup(t)
	e.startDaemon(t)
	g := itoa(e.GleanUID)
	if got := procUIDs(t, daemonProc.Process.Pid); got != strings.Repeat(g+" ", 3)+g {
		t.Errorf("gleand runs with uids %q, want glean's %s", got, g)
	}
	if got := procUIDs(t, helperProc.Process.Pid); got != "0 0 0 0" {
		t.Errorf("glean-helper runs with uids %q, want root", got)
	}
	for path, want := range map[string]os.FileMode{filepath.Dir(e.Helper): os.ModeDir | privhelper.DirMode, e.Helper: os.ModeSocket | privhelper.SocketMode} {
		st, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if st.Mode() != want || sys.Uid != 0 || int(sys.Gid) != e.GleanGID {
			t.Errorf("%s: %v %d:%d, want %v root:glean", path, st.Mode(), sys.Uid, sys.Gid, want)
		}
	}

	// gleand will not run as root unless told to.
	if out, err := exec.Command(filepath.Join(e.Bin, "gleand"), "-config", e.Config).CombinedOutput(); err == nil || !strings.Contains(string(out), "not root") {
		t.Errorf("gleand as root: %v %s", err, out)
	}

	// Intake: the anchor admin-held through the helper (it stays held
	// until the job ends); the shadow array, never held, is then let start
	// by the execution round, in its place in the queue.
	// Tasks that take a while, so that the shadow array's elements (which
	// run tasks too) are still running when the anchor is cancelled below.
	e.writeFiles(t, map[string]string{"calib-slow.sh": elasticJob + "sleep 120\n"})
	r := e.asUser(t, "sbatch", "--parsable", "--array=0-9", "calib-slow.sh")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	anchor := jobID(r.Stdout)
	en, _ := e.readEntry(t, anchor)
	e.waitState(t, anchor, spool.StateQueued)
	if got := showJob(t, anchor)["Reason"]; got != "JobHeldAdmin" {
		t.Errorf("anchor %s: reason %s after intake, want JobHeldAdmin", anchor, got)
	}
	if log := e.helperLog(t); !strings.Contains(log, "msg=done peer_uid="+g) || !strings.Contains(log, "op=hold job="+anchor+" ") {
		t.Errorf("the helper did not log holding %s for uid %s:\n%s", anchor, g, log)
	}
	cl.WaitFor(t, 10*time.Second, "the helper to let the shadow array start", func() bool {
		return strings.Contains(e.helperLog(t), "op=start-shadow job="+en.Shadow+" ")
	})
	if log := e.helperLog(t); strings.Contains(log, "job="+en.Shadow+" ") && (strings.Contains(log, "op=hold job="+en.Shadow+" ") || strings.Contains(log, "op=release job="+en.Shadow+" ")) {
		t.Errorf("the helper held or released the shadow array %s:\n%s", en.Shadow, log)
	}

	// glean itself is no Slurm operator: scontrol refuses it (Slurm 22.05
	// says "Invalid user id" and slurmctld logs a security violation).
	plain := jobID(e.run(t, false, inv{name: "plain", args: []string{"--parsable", "--begin=now+1hour", "--wrap", "true"}}).Stdout)
	for _, args := range [][]string{{"hold", plain}, {"release", anchor}} {
		out, errs, code := runAs(t, e.GleanUID, e.GleanGID, "", "scontrol", args...)
		if code == 0 || !strings.Contains(out+errs, "Invalid user id") {
			t.Errorf("scontrol %v as glean: exit %d, %q %q; want access denied", args, code, out, errs)
		}
	}
	ctld, _ := os.ReadFile(filepath.Join(cl.Dir, "log", "slurmctld.log"))
	if n := strings.Count(string(ctld), "Security violation, JOB_UPDATE RPC from uid "+g); n < 2 {
		t.Errorf("slurmctld logged %d security violations by uid %s, want 2", n, g)
	}
	if got := showJob(t, anchor)["Reason"]; got != "JobHeldAdmin" {
		t.Errorf("anchor %s after glean's scontrol release", got)
	}

	refused := func(name, line, want string) {
		t.Helper()
		if resp := e.ask(t, line); resp.OK || !resp.Refused || !strings.Contains(resp.Error, want) {
			t.Errorf("%s: answer %+v, want a refusal containing %q", name, resp, want)
		}
	}
	// A job the daemon never recorded (the user's own plain job).
	refused("not recorded", `{"op":"hold","job":"`+plain+`"}`+"\n", "job "+plain+" is not a job glean recorded")
	if got := showJob(t, plain)["Reason"]; got == "JobHeldAdmin" {
		t.Errorf("the unrecorded job was held")
	}

	// A record naming gleantest's job, and a job by root imitating that
	// anchor: same partition, name and comment (with the recorded nonce).
	// This is what a reused job id, or a daemon that was tricked, would
	// look like. The owner gives it away.
	fake := &spool.Entry{ID: spool.NewID(time.Now()), Nonce: spool.NewNonce()}
	imitation := cl.Submit(t, "-H", "-p", "glean", "-J", "calib", "--comment="+spool.Comment(fake.ID, fake.Nonce), "--wrap", "true")
	fake.Anchor = imitation
	e.plantRecord(t, &spool.Record{ID: fake.ID, UID: e.UID, User: testUser, Anchor: imitation, State: spool.StateQueued, Entry: fake})
	refused("imitation", `{"op":"cancel","job":"`+imitation+`"}`+"\n", "job "+imitation+" belongs to root, not to "+testUser)
	refused("imitation", `{"op":"release","job":"`+imitation+`"}`+"\n", "belongs to root")
	if st := showJob(t, imitation); st["JobState"] != "PENDING" || st["Reason"] != "JobHeldUser" {
		t.Errorf("the imitation was touched: %s %s", st["JobState"], st["Reason"])
	}

	// Malformed requests.
	refused("not JSON", "hold "+anchor+"\n", "malformed request")
	refused("unknown field", `{"op":"cancel","job":"`+anchor+`","user":"root"}`+"\n", `unknown field "user"`)
	refused("unknown op", `{"op":"scancel","job":"`+anchor+`"}`+"\n", `unknown op "scancel"`)
	refused("bad id", `{"op":"cancel","job":"`+anchor+` -u gleantest"}`+"\n", "bad job id")
	refused("too long", `{"op":"cancel","job":"`+anchor+`","x":"`+strings.Repeat("x", privhelper.MaxRequestBytes)+"\"}\n", "over")
	if st := showJob(t, anchor); st["JobState"] != "PENDING" || st["Reason"] != "JobHeldAdmin" {
		t.Errorf("the anchor was touched: %s %s", st["JobState"], st["Reason"])
	}

	// Another uid: root reaches the socket and is refused by SO_PEERCRED;
	// the test user cannot even reach it.
	err := (&privhelper.Client{Socket: e.Helper, Timeout: 30 * time.Second}).Cancel(context.Background(), anchor)
	if !privhelper.IsRefusal(err) || !strings.Contains(err.Error(), "uid 0 is not the daemon's user") {
		t.Errorf("root as a client: %v", err)
	}
	if out, errs, code := runAs(t, e.UID, e.GID, `{"op":"cancel","job":"`+anchor+`"}`+"\n", filepath.Join(e.Bin, "rawclient"), e.Helper); code != 2 || !strings.Contains(errs, "permission denied") {
		t.Errorf("the test user reached the helper: exit %d %q %q", code, out, errs)
	}
	if log := e.helperLog(t); !strings.Contains(log, "peer_uid=0 peer_pid=") || !strings.Contains(log, "uid 0 is not the daemon") {
		t.Errorf("the refusal of uid 0 is not logged:\n%s", log)
	}
	if got := showJob(t, anchor)["JobState"]; got != "PENDING" {
		t.Errorf("anchor %s", got)
	}

	// The daemon's own cancel of the shadow array goes through too.
	if out, err := e.slurmAsUser(t, "scancel", anchor); err != nil {
		t.Fatalf("scancel: %v %s", err, out)
	}
	e.waitState(t, anchor, spool.StateCancelled)
	// Its elements (running agents since the release) end as CANCELLED.
	cl.WaitFor(t, 30*time.Second, "the shadow array to be cancelled", func() bool {
		return showJob(t, en.Shadow)["JobState"] == "CANCELLED"
	})
	if log := e.helperLog(t); !strings.Contains(log, "op=cancel job="+en.Shadow+" ") {
		t.Errorf("the helper did not cancel the shadow array:\n%s", log)
	}
}

func (e *env) helperLog(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.Dir, "glean-helper.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// plantRecord writes a record into the daemon's records as the daemon
// would (owner glean) and removes it when the test ends.
func (e *env) plantRecord(t *testing.T, r *spool.Record) {
	t.Helper()
	r.Version = spool.RecordVersion
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.Spool, spool.JobsDir, r.DirName())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, spool.RecordFile)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dir, p} {
		if err := os.Lchown(f, e.GleanUID, e.GleanGID); err != nil {
			t.Fatal(err)
		}
	}
}
