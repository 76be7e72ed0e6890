package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

func rec(fields ...string) string {
	return strings.Join(fields, qFieldSep)
}

func TestParseQueue(t *testing.T) {
	seal := "abc123"
	end := qSealMark + seal + qRecEnd
	out := rec("75", "75", "N/A", "PENDING", "JobHeldAdmin", "glean", "alice", "1795323775", "(null)", "glean:x:y") + end +
		rec("76", "76", "N/A", "PENDING", "JobHeldAdmin", "batch", "alice", "N/A", "afterok:41(unfulfilled)", "evil\x1f\x1e\nforged"+qFieldSep+"x") + end +
		rec("80", "79", "3", "RUNNING", "None", "batch", "bob", "1795320000", "(null)", "(null)") + end +
		rec("79", "79", "4-9,11,13,...%2", "PENDING", "JobArrayTaskLimit", "batch", "bob", "N/A", "(null)", "(null)") + end
	jobs, err := ParseQueue(strings.NewReader(out), seal)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 {
		t.Fatalf("%d jobs: %+v", len(jobs), jobs)
	}
	if j := jobs["75"]; j.User != "alice" || j.Comment != "glean:x:y" || j.Start.Unix() != 1795323775 || j.Dependency != "" || j.Partition != "glean" || j.ArrayTask != "" {
		t.Errorf("75: %+v", j)
	}
	if j := jobs["76"]; !strings.HasPrefix(j.Comment, "evil") || j.Dependency != "afterok:41(unfulfilled)" || !j.Start.IsZero() {
		t.Errorf("76: %+v", j)
	}
	if j := jobs["80"]; j.ArrayID != "79" || j.ArrayTask != "3" || j.Comment != "" {
		t.Errorf("80: %+v", j)
	}
	if j := jobs["79"]; j.ArrayID != "79" || j.ArrayTask != "4-9,11,13,...%2" || j.State != "PENDING" {
		t.Errorf("79: %+v", j)
	}
	for _, bad := range []string{
		rec("75", "75", "N/A", "PENDING", "r", "p", "u", "0", "", "c"),                                                                              // no seal: truncated
		rec("x", "75", "N/A", "PENDING", "r", "p", "u", "0", "", "c") + end,                                                                         // bad id
		rec("75", "75", "N/A", "pending", "r", "p", "u", "0", "", "c") + end,                                                                        // bad state
		rec("75", "75", "N/A", "PENDING") + end,                                                                                                     // too few fields
		rec("75", "75", "N/A", "PENDING", "r", "p", "u", "0", "", "c") + end + rec("75", "75", "N/A", "PENDING", "r", "p", "u", "0", "", "c") + end, // duplicate
	} {
		if _, err := ParseQueue(strings.NewReader(bad), seal); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzParseQueue(f *testing.F) {
	seal := "s3a1"
	end := qSealMark + seal + qRecEnd
	f.Add(rec("75", "75", "N/A", "PENDING", "JobHeldAdmin", "glean", "alice", "1795323775", "(null)", "glean:x:y") + end)
	f.Add(rec("76", "N/A", "N/A", "CANCELLED", "None", "b", "u", "N/A", "afterok:1(failed)", "a\x1fb") + end + "junk")
	f.Add(rec("79", "79", "2-3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59,61,67,71,73,7...", "PENDING", "Priority", "b", "u", "N/A", "(null)", "(null)") + end)
	f.Fuzz(func(t *testing.T, out string) {
		jobs, err := ParseQueue(strings.NewReader(out), seal)
		if err != nil {
			return
		}
		for id, j := range jobs {
			if id != j.ID || j.ID == "" || j.State == "" {
				t.Fatalf("bad job %+v", j)
			}
		}
	})
}

func TestEvalDependency(t *testing.T) {
	jobs := map[string]QJob{
		"1": {ID: "1", ArrayID: "1", State: "COMPLETED"},
		"2": {ID: "2", ArrayID: "2", State: "FAILED"},
		"3": {ID: "3", ArrayID: "3", State: "RUNNING"},
		"4": {ID: "4", ArrayID: "4", State: "PENDING"},
		"6": {ID: "6", ArrayID: "5", State: "COMPLETED"},
		"7": {ID: "7", ArrayID: "5", State: "RUNNING"},
		"8": {ID: "8", ArrayID: "8", State: "SPECIAL_EXIT"}, // requeued, held: RequeueExitHold
		"9": {ID: "9", ArrayID: "9", State: "REVOKED"},      // a federation sibling that ran elsewhere
	}
	for _, tc := range []struct {
		dep  string
		want DepState
	}{
		{"", DepMet},
		{"afterany:8", DepWaiting}, // not ended: its owner may release it
		{"afterok:8", DepWaiting},
		{"afternotok:8", DepMet}, // as Slurm: SPECIAL_EXIT clears afternotok
		{"afterany:9", DepMet},
		{"afterok:1", DepMet},
		{"afterok:2", DepNever},
		{"afterok:3", DepWaiting},
		{"afternotok:2", DepMet},
		{"afternotok:1", DepNever},
		{"afterany:1:2", DepMet},
		{"afterany:3", DepWaiting},
		{"after:3", DepMet},
		{"after:4", DepWaiting},
		{"afterok:99", DepMet}, // purged
		{"afterok:1,afterok:3", DepWaiting},
		{"afterok:1,afterok:2", DepNever},
		{"afterok:2?afterok:1", DepMet},
		{"afterok:2?afterok:3", DepWaiting},
		{"afterok:5", DepWaiting}, // one array element still running
		{"singleton", DepNever},
		// With '?' each job is an alternative of its own (sbatch(1): "any
		// of the conditions (afterok:20 OR afterok:21 OR afterany:23)").
		{"afterok:2:1?afterany:3", DepMet},
		{"afterok:2:4?afterany:3", DepWaiting},
		{"afterok:2:2?afternotok:1", DepNever},
		{"AfterOK:1", DepMet}, // Slurm reads the type without regard to case
		{"1,4", DepWaiting},   // the old form: afterany
		{"afterok:1(failed)", DepNever},
		{"afterok:x", DepNever}, // no such syntax: the wrapper refuses it
	} {
		if got := EvalDependency(tc.dep, jobs); got != tc.want {
			t.Errorf("EvalDependency(%q) = %d, want %d", tc.dep, got, tc.want)
		}
	}
}

// fixtureSlurm answers a snapshot's commands with the outputs captured
// from Slurm 22.05 in sidecar/slurm/testdata (squeue's with the seal it
// was asked for); squeue prints the records of the files named.
type fixtureSlurm struct{ squeue, sinfo, parts, config []byte }

func newFixtureSlurm(t *testing.T, squeue ...string) fixtureSlurm {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "slurm", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f := fixtureSlurm{sinfo: read("sinfo.txt"), parts: read("partitions.txt"), config: read("config.txt")}
	for _, name := range squeue {
		f.squeue = append(f.squeue, read(name)...)
	}
	return f
}

func (f fixtureSlurm) Run(_ context.Context, argv []string) ([]byte, error) {
	switch line := strings.Join(argv, " "); {
	case argv[0] == "squeue":
		last := argv[len(argv)-1]
		seal := strings.TrimSuffix(last[strings.Index(last, "\x1d")+1:], "\x1e")
		return bytes.ReplaceAll(f.squeue, []byte("\x1dfixture\x1e"), []byte("\x1d"+seal+"\x1e")), nil
	case argv[0] == "sinfo":
		return f.sinfo, nil
	case line == strings.Join(slurm.PartitionsArgv(), " "):
		return f.parts, nil
	case line == strings.Join(slurm.ConfigArgv(), " "):
		return f.config, nil
	}
	return nil, fmt.Errorf("fixture Slurm: unexpected command %q", argv)
}

// A dependency on an array element ("afterok:3_1") is on that element:
// the job it runs as, or the array's pending record whose index list holds
// it, read through the round's snapshot from captured squeue output.
// Before, the queue model had no index, "3_1" matched no job and counted
// as a purged one: met at once.
func TestEvalDependencyArrayElements(t *testing.T) {
	obs := NewObservation(time.Now(), &slurm.Client{R: newFixtureSlurm(t, "squeue.txt", "squeue_cut.txt"), Ended: true})
	jobs, err := obs.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dep  string
		want DepState
	}{
		// squeue.txt: array 3 ("arr"): elements 0 and 1 run as jobs 4
		// and 5, elements 2-9 pend in record 3 ("2-9%2").
		{"afterok:3_0", DepWaiting},
		{"afterany:3_1", DepWaiting},
		{"afternotok:3_1", DepWaiting},
		{"afterok:3_5", DepWaiting},
		{"after:3_5", DepWaiting},
		{"after:3_1", DepMet},
		{"afterok:3_10", DepMet},  // no such element: Slurm drops the dependency
		{"afterok:4", DepWaiting}, // element 0 by its own id
		{"afterok:3_[0-1]", DepWaiting},
		{"after:3_[0,1]", DepMet},
		{"after:3_[1-2]", DepWaiting},
		{"after:3_[1-2]?afterok:3_2", DepMet}, // '?': element 1 started
		{"afterok:3_*", DepWaiting},
		{"afterany:3", DepWaiting},
		// squeue_cut.txt: array 11 pends with its list cut after 73
		// ("...,71,73,7..."); 4 is not in it.
		{"afterok:11_2", DepWaiting},
		{"afterok:11_4", DepMet},
		{"afterok:11_79", DepWaiting}, // maybe in the part Slurm cut: never met on a guess
		{"afternotok:11_5000", DepWaiting},
		// Array 12: element 2 runs as job 14, 3,...,79 pend, cut after "79,".
		{"afterok:12_2", DepWaiting},
		{"after:12_2", DepMet},
		{"afterok:12_78", DepMet},
		{"afterok:12_80", DepWaiting},
		{"after:12_80?after:12_2", DepMet},
	} {
		if got := EvalDependency(tc.dep, jobs); got != tc.want {
			t.Errorf("EvalDependency(%q) = %d, want %d (0 waiting, 1 met, 2 never)", tc.dep, got, tc.want)
		}
	}

	// A whole array waits for every element, and is judged on all of
	// them as Slurm does (test_job_array_complete/completed).
	arr := map[string]QJob{
		"5": {ID: "5", ArrayID: "5", ArrayTask: "2", State: "FAILED"},
		"6": {ID: "6", ArrayID: "5", ArrayTask: "0", State: "COMPLETED"},
		"7": {ID: "7", ArrayID: "5", ArrayTask: "1", State: "RUNNING"},
	}
	done := maps.Clone(arr)
	done["7"] = QJob{ID: "7", ArrayID: "5", ArrayTask: "1", State: "COMPLETED"}
	for _, tc := range []struct {
		dep           string
		running, done DepState // element 1 still running; completed
	}{
		{"afterok:5", DepWaiting, DepNever},
		{"afternotok:5", DepWaiting, DepMet}, // once all ended: one failed
		{"afterany:5", DepWaiting, DepMet},
		{"afterok:5_0", DepMet, DepMet},
		{"afterok:5_1", DepWaiting, DepMet},
		{"afternotok:5_1", DepWaiting, DepNever},
		{"afterok:5_2", DepNever, DepNever},
		{"afterok:5_[0-1]", DepWaiting, DepMet},
	} {
		if got := EvalDependency(tc.dep, arr); got != tc.running {
			t.Errorf("element 1 running: EvalDependency(%q) = %d, want %d", tc.dep, got, tc.running)
		}
		if got := EvalDependency(tc.dep, done); got != tc.done {
			t.Errorf("all ended: EvalDependency(%q) = %d, want %d", tc.dep, got, tc.done)
		}
	}
}

// Fakes for the intake: a queue the test edits, privileged actions that
// the fake queue obeys, a fixed node size.
type fakeSlurm struct {
	mu    sync.Mutex
	jobs  map[string]QJob
	held  []string
	calls []string
	fail  error
}

func (f *fakeSlurm) Jobs(context.Context) (map[string]QJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	out := map[string]QJob{}
	for k, v := range f.jobs {
		out[k] = v
	}
	return out, nil
}

func (f *fakeSlurm) Hold(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "hold "+id)
	j := f.jobs[id]
	j.Reason = "JobHeldAdmin"
	f.jobs[id] = j
	return nil
}

func (f *fakeSlurm) Cancel(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "cancel "+id)
	j := f.jobs[id]
	j.State = "CANCELLED"
	f.jobs[id] = j
	return nil
}

func (f *fakeSlurm) Release(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "release "+id)
	j := f.jobs[id]
	j.Reason = "None"
	f.jobs[id] = j
	return nil
}

// StartShadow is the Actor's (the execution path's fakes embed fakeSlurm).
func (f *fakeSlurm) StartShadow(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "start "+id)
	j := f.jobs[id]
	j.Reason, j.Start = "Priority", time.Time{}
	f.jobs[id] = j
	return nil
}

func (f *fakeSlurm) Largest(context.Context, string) (int, int64, error) { return 4, 1000, nil }

type fixture struct {
	s     *spool.Spool
	slurm *fakeSlurm
	in    *Intake
	uid   int
	user  string
	now   time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureLimits(t, func(lim *config.Limits) {
		lim.MaxJobsPerUser = 3
		lim.MaxTasksPerUser = 1000
	})
}

// newFixtureLimits is newFixture with the site's limits set by limits.
func newFixtureLimits(t testing.TB, limits func(*config.Limits)) *fixture {
	t.Helper()
	s := &spool.Spool{Dir: t.TempDir(), MaxEntryBytes: 1 << 20, MaxScriptBytes: 1 << 20}
	rs, err := s.Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	u, _ := user.Current()
	fx := &fixture{s: s, slurm: &fakeSlurm{jobs: map[string]QJob{}}, uid: os.Getuid(), user: u.Username, now: time.Now()}
	lim := config.Default().Limits
	limits(&lim)
	fx.in, err = NewIntake(Options{Spool: s, AnchorPartition: "glean", PilotPartition: "pilot", Limits: lim}, rs, fx.slurm, fx.slurm, fx.slurm,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

var nextJob = 100

// submit writes an entry and its anchor (and shadow) as the wrapper does.
func (fx *fixture) submit(t testing.TB, tasks int, mutate func(e *spool.Entry, anchor *QJob)) *spool.Entry {
	t.Helper()
	nextJob += 2
	e := &spool.Entry{
		Version: spool.EntryVersion, ID: spool.NewID(fx.now), Nonce: spool.NewNonce(), Submitted: fx.now, User: fx.user,
		Anchor: strconv.Itoa(nextJob), Name: "job", Mode: "scavenger", Script: "job.sh", ScriptSize: 10,
		Cwd: "/tmp", Export: "ALL", Tasks: tasks, Array: &spool.Array{Ranges: []spool.Range{{Start: 0, End: tasks - 1, Step: 1}}},
		Resources: spool.Resources{CPUsPerTask: 1, NTasks: 1, CPUs: 1},
	}
	anchor := QJob{ID: e.Anchor, ArrayID: e.Anchor, State: "PENDING", Reason: "JobHeldUser", Partition: "glean", User: fx.user,
		Comment: spool.Comment(e.ID, e.Nonce)}
	if mutate != nil {
		mutate(e, &anchor)
	}
	fx.slurm.mu.Lock()
	fx.slurm.jobs[anchor.ID] = anchor
	if e.Shadow != "" {
		// As the wrapper submits it: behind a begin time a year ahead.
		fx.slurm.jobs[e.Shadow] = QJob{ID: e.Shadow, ArrayID: e.Shadow, State: "PENDING", Reason: "BeginTime", Partition: "batch", User: fx.user,
			Start: fx.now.Add(365 * 24 * time.Hour), Comment: spool.ShadowComment(e.ID, e.Nonce)}
	}
	fx.slurm.mu.Unlock()
	if err := fx.s.EnsureUserDirs(fx.uid); err != nil {
		t.Fatal(err)
	}
	p, err := fx.s.Prepare(fx.uid, e.ID, []byte("#!/bin/sh\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(e); err != nil {
		t.Fatal(err)
	}
	return e
}

func (fx *fixture) round(t testing.TB) Stats {
	t.Helper()
	st, err := fx.in.Round(context.Background(), fx.now)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (fx *fixture) record(e *spool.Entry) *spool.Record {
	return fx.in.Get(spool.RecordName(fx.uid, e.ID))
}

func TestIntakeAccepts(t *testing.T) {
	fx := newFixture(t)
	e := fx.submit(t, 50, func(e *spool.Entry, _ *QJob) { e.Mode, e.Shadow = "fair", strconv.Itoa(nextJob+1) })
	if st := fx.round(t); st.Accepted != 1 {
		t.Fatalf("round: %+v", st)
	}
	r := fx.record(e)
	if r == nil || r.State != spool.StateQueued || r.Tasks.Pending != 50 || r.Entry == nil || r.User != fx.user {
		t.Fatalf("record %+v", r)
	}
	if got := strings.Join(fx.slurm.calls, ","); got != "hold "+e.Anchor || !r.ShadowUnheld {
		t.Errorf("Slurm actions %s, shadow unheld %v: want the anchor held and the shadow array left in its place, so recorded", got, r.ShadowUnheld)
	}
	data, err := os.ReadFile(filepath.Join(fx.s.Dir, spool.JobsDir, r.DirName(), spool.ScriptFile))
	if err != nil || string(data) != "#!/bin/sh\n" {
		t.Errorf("script copy: %q %v", data, err)
	}
	// Taken once: a second round does nothing more.
	if st := fx.round(t); st != (Stats{}) {
		t.Errorf("second round: %+v", st)
	}
	// A restarted daemon rebuilds its state from the records.
	rs, _ := fx.s.OpenRecords()
	defer rs.Close()
	in2, _ := NewIntake(fx.in.opt, rs, fx.slurm, fx.slurm, fx.slurm, fx.in.log)
	if st, _ := in2.Round(context.Background(), fx.now); st.Accepted != 0 {
		t.Errorf("after a restart the entry was taken in again: %+v", st)
	}

	// scancel of the anchor cancels the job and its shadow array.
	fx.slurm.Cancel(context.Background(), e.Anchor)
	fx.slurm.calls = nil
	if st := fx.round(t); st.Cancelled != 1 {
		t.Fatalf("after scancel: %+v", st)
	}
	if r := fx.record(e); r.State != spool.StateCancelled || !strings.Contains(r.Reason, "cancelled") {
		t.Errorf("record after scancel: %+v", r)
	}
	if got := strings.Join(fx.slurm.calls, ","); got != "cancel "+e.Shadow {
		t.Errorf("actions after scancel: %s", got)
	}
}

// A shadow array in SPECIAL_EXIT (its job ended with a RequeueExitHold
// code and was requeued, held until released) has not ended: when the
// user cancels the anchor, gleand cancels it too. Before, SPECIAL_EXIT
// counted as final and the held array stayed in the queue.
func TestCancelledAnchorCancelsRequeueHeldShadow(t *testing.T) {
	fx := newFixture(t)
	e := fx.submit(t, 4, func(e *spool.Entry, _ *QJob) { e.Mode, e.Shadow = "fair", strconv.Itoa(nextJob+1) })
	if st := fx.round(t); st.Accepted != 1 {
		t.Fatalf("round: %+v", st)
	}
	fx.slurm.mu.Lock()
	sh := fx.slurm.jobs[e.Shadow]
	sh.State, sh.Reason = "SPECIAL_EXIT", "JobHeldUser"
	fx.slurm.jobs[e.Shadow] = sh
	fx.slurm.mu.Unlock()
	fx.slurm.Cancel(context.Background(), e.Anchor)
	fx.slurm.calls = nil
	if st := fx.round(t); st.Cancelled != 1 {
		t.Fatalf("after scancel: %+v", st)
	}
	if got := strings.Join(fx.slurm.calls, ","); got != "cancel "+e.Shadow {
		t.Errorf("actions after scancel: %q, want the held shadow array cancelled", got)
	}
}

func TestIntakeRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tasks  int
		mutate func(e *spool.Entry, a *QJob)
		reason string
		// releases: the anchor is verified as the entry's, so it is
		// released to write the reason into the user's -o file.
		releases bool
	}{
		{"anchor not the user's", 1, func(e *spool.Entry, a *QJob) { a.User = "mallory" }, "is not yours", false},
		{"anchor without the nonce", 1, func(e *spool.Entry, a *QJob) { a.Comment = "glean:" + e.ID + ":0000" }, "does not carry this entry's id and nonce", false},
		{"anchor in another partition", 1, func(e *spool.Entry, a *QJob) { a.Partition = "batch" }, "not the anchor partition", false},
		{"anchor unknown", 1, func(e *spool.Entry, a *QJob) { a.ID = "999999" }, "not known to Slurm", false},
		{"impossible CPUs", 1, func(e *spool.Entry, a *QJob) { e.Resources = spool.Resources{CPUsPerTask: 8, NTasks: 1, CPUs: 8} }, "a task needs 8 CPUs", true},
		{"impossible memory", 1, func(e *spool.Entry, a *QJob) { e.Resources.MemMB = 5000 }, "needs 5000 MB", true},
		{"over the user's task cap", 1001, nil, "max_tasks_per_user", true},
		// Released by its owner before the intake: it cannot be held,
		// and a running job is not released again.
		{"anchor already running", 1, func(e *spool.Entry, a *QJob) { a.State, a.Reason = "RUNNING", "None" }, "is RUNNING: it was released before glean took the job in", false},
		{"anchor suspended", 1, func(e *spool.Entry, a *QJob) { a.State, a.Reason = "SUSPENDED", "None" }, "is SUSPENDED: it was released", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			e := fx.submit(t, tc.tasks, tc.mutate)
			if st := fx.round(t); st.Rejected != 1 {
				t.Fatalf("round: %+v", st)
			}
			r := fx.record(e)
			if r == nil || r.State != spool.StateRejected || !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("record %+v, want rejected with %q", r, tc.reason)
			}
			released := slices.Contains(fx.slurm.calls, "release "+e.Anchor)
			if released != tc.releases || slices.Contains(fx.slurm.calls, "cancel "+e.Anchor) {
				t.Errorf("actions %v: want the anchor released %v, never cancelled: glean acts on a job only once it is verified", fx.slurm.calls, tc.releases)
			}
			for _, c := range fx.slurm.calls {
				if strings.HasPrefix(c, "hold") {
					t.Errorf("a rejected entry's job was held: %v", fx.slurm.calls)
				}
			}
		})
	}
}

// An entry whose anchor Slurm no longer knows (scancelled while gleand
// was down longer than MinJobAge) is rejected, and its shadow array,
// verified by its own comment, is cancelled: it would pend for a year.
// One that is not the entry's (another comment) is left alone.
func TestIntakeRejectCancelsShadowOfPurgedAnchor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		comment func(e *spool.Entry) string
		cancels bool
	}{
		{"the entry's shadow array", func(e *spool.Entry) string { return spool.ShadowComment(e.ID, e.Nonce) }, true},
		{"another nonce", func(e *spool.Entry) string { return spool.ShadowComment(e.ID, spool.NewNonce()) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			e := fx.submit(t, 4, func(e *spool.Entry, _ *QJob) { e.Mode, e.Shadow = "fair", strconv.Itoa(nextJob+1) })
			fx.slurm.mu.Lock()
			delete(fx.slurm.jobs, e.Anchor)
			sh := fx.slurm.jobs[e.Shadow]
			sh.Comment = tc.comment(e)
			fx.slurm.jobs[e.Shadow] = sh
			fx.slurm.mu.Unlock()
			if st := fx.round(t); st.Rejected != 1 {
				t.Fatalf("round: %+v", st)
			}
			r := fx.record(e)
			if r == nil || r.State != spool.StateRejected || !strings.Contains(r.Reason, "not known to Slurm") {
				t.Fatalf("record %+v, want rejected: anchor not known", r)
			}
			want := []string(nil)
			if tc.cancels {
				want = []string{"cancel " + e.Shadow}
				if !strings.Contains(r.Reason, "shadow array "+e.Shadow+" is cancelled") {
					t.Errorf("reason %q does not say the shadow array is cancelled", r.Reason)
				}
			}
			if !slices.Equal(fx.slurm.calls, want) {
				t.Errorf("actions %q, want %q", fx.slurm.calls, want)
			}
			if fx.round(t); !slices.Equal(fx.slurm.calls, want) {
				t.Errorf("a second round acted again: %q", fx.slurm.calls)
			}
		})
	}
}

// An entry of a uid below helper.min_uid is rejected at intake, saying
// so: glean-helper would refuse every pilot and the job would stay queued
// for ever. Its anchor is released (to write the reason into its -o) and
// its shadow array cancelled, except root's: glean never acts on those.
func TestIntakeRejectsBelowMinUID(t *testing.T) {
	for _, tc := range []struct {
		name string
		uid  int
		user string
		acts bool
	}{
		{"a system account", uidAlice, "alice", true},
		{"root", 0, "root", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := hostileFixture(t)
			fx.in.opt.MinUID = uidAlice + 1
			e := fx.submitAs(t, tc.uid, tc.user, func(e *spool.Entry, _ *QJob) { e.Mode, e.Shadow = "fair", strconv.Itoa(nextJob+1) })
			if st := fx.round(t); st.Rejected != 1 {
				t.Fatalf("round: %+v", st)
			}
			r := fx.record(e)
			want := fmt.Sprintf("uid %d is a system account: glean runs no pilots for uids below helper.min_uid (%d)", tc.uid, uidAlice+1)
			if r == nil || r.State != spool.StateRejected || !strings.Contains(r.Reason, want) {
				t.Fatalf("record %+v, want rejected with %q", r, want)
			}
			var acts []string
			if tc.acts {
				acts = []string{"cancel " + e.Shadow, "release " + e.Anchor}
			}
			if !slices.Equal(fx.slurm.calls, acts) {
				t.Errorf("actions %q, want %q", fx.slurm.calls, acts)
			}
		})
	}
}

func TestIntakeCapsJobs(t *testing.T) {
	fx := newFixture(t)
	for i := 0; i < 4; i++ {
		fx.submit(t, 1, nil)
	}
	if st := fx.round(t); st.Accepted != 3 || st.Rejected != 1 {
		t.Fatalf("4 entries with a cap of 3 jobs: %+v", st)
	}
}

// A round takes in at most limits.max_entries_per_round new entries of
// each user, the oldest first; the rest wait for later rounds. One user's
// flood of empty directories (a mkdir each, a rejection each) so cannot
// make a round long, nor keep another user's entry from its round.
func TestIntakeCapsEntriesPerRound(t *testing.T) {
	fx := hostileFixture(t)
	fx.in.opt.Limits.MaxEntriesPerRound = 4
	for i := range 10 {
		d := filepath.Join(fx.s.UserDir(uidAlice), spool.IncomingDir, fmt.Sprintf("x%02d", i))
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uidAlice, -1); err != nil {
			t.Fatal(err)
		}
	}
	e := fx.submitAs(t, uidBob, "bob", nil)
	// taken: how many of alice's have a record, which must be the first
	// ones by name (the oldest, for entry ids).
	taken := func() int {
		n, gap := 0, false
		for i := range 10 {
			r := fx.in.Get(spool.RecordName(uidAlice, recordID(fmt.Sprintf("x%02d", i))))
			switch {
			case r == nil:
				gap = true
			case gap || r.State != spool.StateRejected:
				t.Fatalf("x%02d: record %+v: want alice's rejected in the order of their names", i, r)
			default:
				n++
			}
		}
		return n
	}
	for i, want := range []Stats{
		{Accepted: 1, Rejected: 4, Deferred: 6}, // bob's entry in the first round
		{Rejected: 4, Deferred: 2},
		{Rejected: 2},
		{},
	} {
		if st := fx.round(t); st != want {
			t.Fatalf("round %d: %+v, want %+v", i+1, st, want)
		}
		if n := taken(); n != min(4*(i+1), 10) {
			t.Fatalf("round %d: %d of alice's 10 taken in", i+1, n)
		}
		if i == 0 && fx.record(e) == nil {
			t.Fatal("bob's entry not taken in with alice's flood")
		}
	}
}

func TestIntakeRejectsHostileFiles(t *testing.T) {
	fx := newFixture(t)
	e := fx.submit(t, 1, nil)
	dir := fx.s.IncomingPath(fx.uid, e.ID)
	os.Rename(filepath.Join(dir, spool.EntryFile), filepath.Join(dir, "x"))
	os.Symlink("x", filepath.Join(dir, spool.EntryFile))
	bad := filepath.Join(fx.s.UserDir(fx.uid), spool.IncomingDir, "not-an-id")
	os.Mkdir(bad, 0o750)
	if st := fx.round(t); st.Rejected != 2 {
		t.Fatalf("round: %+v", st)
	}
	if r := fx.record(e); r == nil || !strings.Contains(r.Reason, "symlink") {
		t.Fatalf("symlinked entry: %+v", r)
	}
	if len(fx.slurm.calls) != 0 {
		t.Errorf("actions on unverified entries: %v", fx.slurm.calls)
	}
}

func TestIntakeWaits(t *testing.T) {
	fx := newFixture(t)
	fx.slurm.jobs["5"] = QJob{ID: "5", ArrayID: "5", State: "RUNNING", User: "x", Partition: "batch"}
	e := fx.submit(t, 1, func(e *spool.Entry, a *QJob) { e.Dependency = "afterok:5" })
	fx.round(t)
	if r := fx.record(e); r.State != spool.StateWaiting || len(r.Waiting) != 1 || !strings.HasPrefix(r.Waiting[0], "dependency") {
		t.Fatalf("record %+v", r)
	}
	fx.slurm.jobs["5"] = QJob{ID: "5", ArrayID: "5", State: "COMPLETED", User: "x", Partition: "batch"}
	if st := fx.round(t); st.Released != 1 {
		t.Fatalf("round after the dependency finished: %+v", st)
	}
	if r := fx.record(e); r.State != spool.StateQueued {
		t.Fatalf("record %+v", r)
	}
}

// A failed squeue postpones everything: nothing is rejected or cancelled.
func TestIntakeFailsClosed(t *testing.T) {
	fx := newFixture(t)
	e := fx.submit(t, 1, nil)
	fx.slurm.fail = io.ErrUnexpectedEOF
	if _, err := fx.in.Round(context.Background(), fx.now); err == nil {
		t.Fatal("no error")
	}
	if fx.record(e) != nil || len(fx.slurm.calls) != 0 {
		t.Fatalf("acted without seeing Slurm: %+v %v", fx.record(e), fx.slurm.calls)
	}
	fx.slurm.fail = nil
	if st := fx.round(t); st.Accepted != 1 {
		t.Fatalf("retry: %+v", st)
	}
}

// The loop takes an entry in on the periodic rescan alone (watching off),
// and on the trigger.
func TestLoopRescans(t *testing.T) {
	fx := newFixture(t)
	rounds := make(chan Stats, 16)
	l := &Loop{Intake: fx.in, Spool: fx.s, Rescan: 20 * time.Millisecond, Watch: false, Log: fx.in.log,
		OnRound: func(st Stats, _ error) { rounds <- st }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	e := fx.submit(t, 1, nil)
	deadline := time.After(10 * time.Second)
	awaitAccepted(t, rounds, deadline, "entry not taken in by the rescan", nil)
	cancel()
	<-done
	if r := fx.record(e); r == nil || r.State != spool.StateQueued {
		t.Fatalf("%+v", r)
	}
}

// With watching on, an entry is taken in at once, long before the rescan.
func TestLoopWatches(t *testing.T) {
	fx := newFixture(t)
	if err := fx.s.EnsureUserDirs(fx.uid); err != nil {
		t.Fatal(err)
	}
	rounds, stop := fx.watchingLoop()
	defer stop()
	<-rounds // the first round, at start
	fx.submit(t, 1, nil)
	deadline := time.After(10 * time.Second)
	awaitAccepted(t, rounds, deadline, "entry not taken in through fsnotify", nil)
}

// awaitAccepted waits for a round that takes in one entry; at the
// deadline it runs onTimeout (if any: what lets the loop stop) and fails.
func awaitAccepted(t *testing.T, rounds <-chan Stats, deadline <-chan time.Time, why string, onTimeout func()) {
	t.Helper()
	for {
		select {
		case st := <-rounds:
			if st.Accepted == 1 {
				return
			}
		case <-deadline:
			if onTimeout != nil {
				onTimeout()
			}
			t.Fatal(why)
		}
	}
}

// watchingLoop runs the intake loop with fsnotify and a rescan an hour
// away, and sends each round's stats; stop ends it.
func (fx *fixture) watchingLoop() (rounds chan Stats, stop func()) {
	rounds = make(chan Stats, 16)
	l := &Loop{Intake: fx.in, Spool: fx.s, Rescan: time.Hour, Watch: true, Log: fx.in.log,
		OnRound: func(st Stats, _ error) { rounds <- st }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	return rounds, func() { cancel(); <-done }
}

// Spool events (a user writing into incoming/ without a pause) start a
// round at most once per MinGap: triggers every millisecond for 400 ms
// with a 50 ms gap make at most 9 rounds, not hundreds.
func TestLoopSpacesTriggeredRounds(t *testing.T) {
	fx := newFixture(t)
	var rounds atomic.Int32
	first := make(chan struct{})
	l := &Loop{Intake: fx.in, Spool: fx.s, Rescan: time.Hour, MinGap: 50 * time.Millisecond, Log: fx.in.log,
		OnRound: func(Stats, error) {
			if rounds.Add(1) == 1 {
				close(first)
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	<-first // the round at start
	pace := time.NewTicker(time.Millisecond)
	defer pace.Stop()
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); <-pace.C {
		l.Trigger()
	}
	n := rounds.Load() - 1
	cancel()
	<-done
	if n < 1 || n > 400/50+1 {
		t.Errorf("%d rounds for a trigger every millisecond for 400 ms with a 50 ms gap; want 1 to 9", n)
	}
}

// recordedFirst is Privileged that, like the root helper, acts only on a
// job some record on disk names (with the entry's nonce), and can fail
// holds.
type recordedFirst struct {
	*fakeSlurm
	rs       *spool.Records
	failHold bool
	unknown  []string
}

func (p *recordedFirst) recorded(id string) bool {
	recs, _ := p.rs.FindJob(id, os.Getuid())
	for _, r := range recs {
		if r.Entry != nil && r.Entry.Nonce != "" {
			return true
		}
	}
	p.unknown = append(p.unknown, id)
	return false
}

func (p *recordedFirst) Hold(ctx context.Context, id string) error {
	if !p.recorded(id) || p.failHold {
		return fmt.Errorf("refused: hold %s", id)
	}
	return p.fakeSlurm.Hold(ctx, id)
}

func (p *recordedFirst) Release(ctx context.Context, id string) error {
	if !p.recorded(id) {
		return fmt.Errorf("refused: release %s", id)
	}
	return p.fakeSlurm.Release(ctx, id)
}

func (p *recordedFirst) Cancel(ctx context.Context, id string) error {
	if !p.recorded(id) {
		return fmt.Errorf("refused: cancel %s", id)
	}
	return p.fakeSlurm.Cancel(ctx, id)
}

// The daemon records a job before it asks for a hold or a cancel, so
// that the helper, which acts only on recorded jobs, accepts; a hold
// that fails leaves an accepting record that the next round (or a
// restarted daemon) takes in again.
func TestIntakeRecordsBeforeActing(t *testing.T) {
	fx := newFixture(t)
	rs, err := fx.s.OpenRecords()
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	p := &recordedFirst{fakeSlurm: fx.slurm, rs: rs, failHold: true}
	fx.in.priv = p
	e := fx.submit(t, 5, func(e *spool.Entry, _ *QJob) { e.Mode, e.Shadow = "fair", strconv.Itoa(nextJob+1) })
	if st := fx.round(t); st.Accepted != 0 {
		t.Fatalf("accepted although the hold failed: %+v", st)
	}
	r, err := rs.Get(spool.RecordName(fx.uid, e.ID))
	if err != nil || r.State != spool.StateAccepting {
		t.Fatalf("record after a failed hold: %+v %v", r, err)
	}
	// A daemon restarted now takes the entry in again.
	p.failHold = false
	in2, _ := NewIntake(fx.in.opt, rs, fx.slurm, p, fx.slurm, fx.in.log)
	if st, _ := in2.Round(context.Background(), fx.now); st.Accepted != 1 {
		t.Fatalf("restarted: %+v", st)
	}
	if r := in2.Get(spool.RecordName(fx.uid, e.ID)); r == nil || r.State != spool.StateQueued {
		t.Fatalf("record %+v", r)
	}
	// A rejection that releases the verified anchor (and cancels the
	// shadow array) records it first.
	e2 := fx.submit(t, 1, func(e *spool.Entry, _ *QJob) {
		e.Resources.MemMB = 5000
		e.Mode, e.Shadow = "fair", strconv.Itoa(nextJob+1)
	})
	if st, _ := in2.Round(context.Background(), fx.now); st.Rejected != 1 {
		t.Fatalf("round: %+v", st)
	}
	if !slices.Contains(fx.slurm.calls, "release "+e2.Anchor) || fx.slurm.jobs[e2.Shadow].State != "CANCELLED" {
		t.Errorf("the rejected job: actions %v; want its anchor released and its shadow array %s cancelled", fx.slurm.calls, e2.Shadow)
	}
	// The anchor is cancelled: the follow-up cancels the shadow array.
	fx.slurm.Cancel(context.Background(), e.Anchor)
	if st, _ := in2.Round(context.Background(), fx.now); st.Cancelled != 1 {
		t.Fatalf("round: %+v", st)
	}
	if j := fx.slurm.jobs[e.Shadow]; j.State != "CANCELLED" {
		t.Errorf("shadow %s", j.State)
	}
	if len(p.unknown) != 0 {
		t.Errorf("asked to act on jobs no record named: %v", p.unknown)
	}
}

// A filesystem hiccup is retried next round; a bad entry is rejected.
func TestTransientReadErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("open entry.json: %w", syscall.ESTALE), true},
		{fmt.Errorf("read: %w", syscall.EIO), true},
		{fmt.Errorf("open: %w", syscall.EMFILE), true},
		{spool.ErrSymlink, false},
		{spool.ErrBadJSON, false},
		{errors.New("unknown key \"x\""), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// finishTasks writes, as pilot's agent on n1, an exit-0 result for tasks
// 0..n-1 of entry id (for the daemon to commit).
func (fx *fixture) finishTasks(t testing.TB, id string, n int, pilot string) {
	t.Helper()
	work, err := fx.s.OpenWork(fx.uid, id)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := spool.Result{Task: i, Attempt: fmt.Sprintf("a%d", i), Pilot: pilot, Node: "n1", Outcome: spool.OutcomeExited,
			Start: fx.now.Add(-time.Second), End: fx.now}
		if err := work.Finish(r); err != nil {
			t.Fatal(err)
		}
	}
}

// An incoming directory removed and made again is watched again: its old
// descriptor, still watched, would never see the new one's entries (no
// event comes while it is open), and they would wait for the rescan.
func TestLoopWatchesIncomingMadeAgain(t *testing.T) {
	fx := newFixture(t)
	if err := fx.s.EnsureUserDirs(fx.uid); err != nil {
		t.Fatal(err)
	}
	rounds, stop := fx.watchingLoop()
	defer stop()
	<-rounds // the first round, at start: incoming watched
	incoming := filepath.Join(fx.s.UserDir(fx.uid), spool.IncomingDir)
	if err := os.Remove(incoming); err != nil {
		t.Fatal(err)
	}
	if err := fx.s.EnsureUserDirs(fx.uid); err != nil {
		t.Fatal(err)
	}
	// Another user's first directory: an event on users/, so a round.
	if err := os.Mkdir(fx.s.UserDir(fx.uid+1), 0o770); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	select {
	case <-rounds:
	case <-deadline:
		t.Fatal("no round for a new directory in users/")
	}
	fx.submit(t, 1, nil)
	awaitAccepted(t, rounds, deadline, "an entry in the incoming directory made again not taken in through fsnotify", nil)
}
