package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

func TestExpandPattern(t *testing.T) {
	v := PatternVars{ArrayJob: "4242", Task: "7", Job: "555", Name: "calib", User: "ann", Node: "n01"}
	for _, tc := range []struct{ name, in, want string }{
		{"default", "slurm-%A_%a.out", "slurm-4242_7.out"},
		{"job id", "out-%j.txt", "out-555.txt"},
		{"name user node", "%x.%u.%N", "calib.ann.n01"},
		{"percent", "100%%-%a", "100%-7"},
		{"zero pad", "r-%4a-%3A", "r-0007-4242"},
		{"pad ignored on names", "%5x", "calib"},
		{"step, rank, node index", "%J.%s.%n.%t", "555.batch.0.0"},
		{"unknown stays", "%q-%a", "%q-7"},
		{"trailing percent", "out%", "out%"},
		{"trailing width", "out%3", "out%3"},
		{"backslash disables", `out\_%a`, "out_%a"},
		{"summary", "slurm-%A_%a.out", "slurm-4242_7.out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExpandPattern(tc.in, v); got != tc.want {
				t.Errorf("ExpandPattern(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTaskPaths(t *testing.T) {
	arr := &spool.Array{Ranges: []spool.Range{{Start: 0, End: 3, Step: 1}}}
	v := PatternVars{ArrayJob: "9", Task: "2", Job: "77"}
	for _, tc := range []struct {
		name string
		e    spool.Entry
		want OutputPaths
	}{
		{"array default", spool.Entry{Cwd: "/w", Array: arr}, OutputPaths{Out: "/w/slurm-9_2.out", Err: "/w/slurm-9_2.out"}},
		{"single default", spool.Entry{Cwd: "/w"}, OutputPaths{Out: "/w/slurm-9.out", Err: "/w/slurm-9.out"}},
		{"-o -e -i", spool.Entry{Cwd: "/w", Array: arr, Output: "/abs/o-%a", Error: "e-%j", Input: "in/%a"},
			OutputPaths{Out: "/abs/o-2", Err: "/w/e-77", In: "/w/in/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TaskPaths(&Job{Entry: &tc.e}, v); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEstimateAndFits(t *testing.T) {
	s := time.Second
	if got := Estimate(3, nil); got != 3*time.Minute {
		t.Errorf("-t 3, no history: %v", got)
	}
	if got := Estimate(3, []time.Duration{s}); got != s+s/4+10*s {
		t.Errorf("-t 3, tasks of 1 s: %v (learned, not the generous -t)", got)
	}
	if got := Estimate(1, []time.Duration{2 * time.Minute}); got != time.Minute {
		t.Errorf("-t 1, tasks of 2 min: %v (at most the -t)", got)
	}
	if got := Estimate(0, nil); got != 0 {
		t.Errorf("no history: %v", got)
	}
	var rt []time.Duration
	for i := 1; i <= 100; i++ {
		rt = append(rt, time.Duration(i)*s)
	}
	// p95 of 1..100 s is 95 s; x1.25 + 10 s.
	if got, want := Estimate(0, rt), time.Duration(95*1.25*float64(s))+10*s; got != want {
		t.Errorf("p95 estimate %v, want %v", got, want)
	}
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name       string
		end        time.Time
		grace, est time.Duration
		want       bool
	}{
		{"no end", time.Time{}, time.Minute, time.Hour, true},
		{"no estimate", now.Add(time.Second), time.Minute, 0, true},
		{"fits", now.Add(10 * time.Minute), time.Minute, 9 * time.Minute, true},
		{"into the grace", now.Add(10 * time.Minute), time.Minute, 9*time.Minute + s, false},
	} {
		if got := Fits(now, tc.end, tc.grace, tc.est); got != tc.want {
			t.Errorf("%s: Fits = %v", tc.name, got)
		}
	}
}

func TestPacking(t *testing.T) {
	node := Capacity{CPUs: 8, MemMB: 1000}
	for _, tc := range []struct {
		name    string
		r       spool.Resources
		running int
		want    bool
	}{
		{"first always", spool.Resources{CPUs: 64}, 0, true},
		{"cpus fit", spool.Resources{CPUs: 2}, 3, true},
		{"cpus full", spool.Resources{CPUs: 2}, 4, false},
		{"mem full", spool.Resources{CPUs: 1, MemMB: 300}, 3, false},
		{"mem per cpu", spool.Resources{CPUs: 2, MemPerCPUMB: 100}, 3, true},
		{"mem per cpu full", spool.Resources{CPUs: 2, MemPerCPUMB: 200}, 2, false},
		{"exclusive", spool.Resources{CPUs: 1, Exclusive: true}, 1, false},
	} {
		if got := CanStart(node, TaskDemand(tc.r), tc.running); got != tc.want {
			t.Errorf("%s: CanStart = %v", tc.name, got)
		}
	}
	env := map[string]string{"SLURM_CPUS_ON_NODE": "1", "SLURM_MEM_PER_NODE": "10"}
	if c := NodeCapacity(func(k string) string { return env[k] }); c.CPUs != 1 || c.MemMB != 10 {
		t.Errorf("bounded by the allocation: %+v", c)
	}
	if c := NodeCapacity(func(string) string { return "" }); c.CPUs < 1 || c.MemMB <= 10 {
		t.Errorf("node facts: %+v", c)
	}
}

type fakeRunner struct {
	out  string
	err  error
	argv []string
}

func (f *fakeRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	f.argv = argv
	return []byte(f.out), f.err
}

func TestAllocationEnd(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	ctx := context.Background()
	if got, _ := AllocationEnd(ctx, env("SLURM_JOB_END_TIME", "1700000000", "SLURM_JOB_ID", "5"), &fakeRunner{out: "1"}); !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("SLURM_JOB_END_TIME: %v", got)
	}
	r := &fakeRunner{out: "1700000123\n"}
	if got, _ := AllocationEnd(ctx, env("SLURM_JOB_ID", "5"), r); !got.Equal(time.Unix(1700000123, 0)) || strings.Join(r.argv, " ") != "squeue -h -j 5 -o %e" {
		t.Errorf("squeue: %v %q", got, r.argv)
	}
	for _, out := range []string{"N/A", "UNLIMITED", ""} {
		if got, err := AllocationEnd(ctx, env("SLURM_JOB_ID", "5"), &fakeRunner{out: out}); !got.IsZero() || err != nil {
			t.Errorf("%q: %v %v", out, got, err)
		}
	}
	if got, err := AllocationEnd(ctx, env("SLURM_JOB_ID", "5"), &fakeRunner{err: errors.New("boom")}); !got.IsZero() || err == nil {
		t.Errorf("failing squeue: %v %v", got, err)
	}
	if got, err := AllocationEnd(ctx, env(), nil); !got.IsZero() || err != nil {
		t.Errorf("outside Slurm: %v %v", got, err)
	}
}

// Learn reads the end and KillWait; a KillWait given is not asked for.
func TestLearn(t *testing.T) {
	env := func(k string) string { return map[string]string{"SLURM_JOB_ID": "5"}[k] }
	asked := 0
	read := func(err error) func(context.Context) (time.Duration, error) {
		return func(context.Context) (time.Duration, error) { asked++; return 5 * time.Second, err }
	}
	for _, tc := range []struct {
		name     string
		killWait time.Duration
		runErr   error
		readErr  error
		want     Limits
		asked    int
		err      bool
	}{
		{"both from Slurm", 0, nil, nil, Limits{End: time.Unix(1700000123, 0), KillWait: 5 * time.Second}, 1, false},
		{"KillWait given", 9 * time.Second, nil, nil, Limits{End: time.Unix(1700000123, 0), KillWait: 9 * time.Second}, 0, false},
		{"squeue fails", 0, errors.New("boom"), nil, Limits{KillWait: 5 * time.Second}, 1, true},
		{"scontrol fails", 0, nil, errors.New("boom"), Limits{End: time.Unix(1700000123, 0), KillWait: 5 * time.Second}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = 0
			got, err := Learn(env, &fakeRunner{out: "1700000123\n", err: tc.runErr}, tc.killWait, read(tc.readErr))(context.Background())
			if got != tc.want || asked != tc.asked || (err != nil) != tc.err {
				t.Errorf("got %+v, %v (asked %d)", got, err, asked)
			}
		})
	}
}

func TestParseJobArg(t *testing.T) {
	uid, id, err := ParseJobArg("1000.0190abcdef01-abcd1234")
	if err != nil || uid != 1000 || id != "0190abcdef01-abcd1234" {
		t.Errorf("got %d %q %v", uid, id, err)
	}
	for _, bad := range []string{"", "1000", "x.0190abcdef01-abcd1234", "-1.0190abcdef01-abcd1234", "1000.../etc", "01.0190abcdef01-abcd1234"} {
		if _, _, err := ParseJobArg(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLoadJobRefusesAnotherUID(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\n", []string{"A=1", "B=x=y"}, nil)
	if _, err := LoadJob(f.sp, f.uid, f.id, f.uid+1); err == nil {
		t.Error("a job of another uid was loaded")
	}
	j := f.job()
	if len(j.Env) != 2 || j.Env[1] != "B=x=y" || string(j.Script) != "#!/bin/sh\n" {
		t.Errorf("job %+v", j)
	}
	// A record whose uid field disagrees with its name.
	other := *f.rec
	other.UID = f.uid + 1
	data, err := json.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(f.sp.Dir, spool.JobsDir, f.rec.DirName(), spool.StatusFile)
	good, _ := os.ReadFile(status)
	if err := os.WriteFile(status, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecord(f.sp, f.uid, f.id, f.uid); err == nil {
		t.Error("a record naming another uid was accepted")
	}
	if err := os.WriteFile(status, good, 0o644); err != nil {
		t.Fatal(err)
	}
	// The owner's entry changed after the daemon took it in: its digest
	// no longer matches the record's.
	entry := filepath.Join(f.sp.IncomingPath(f.uid, f.id), spool.EntryFile)
	e := *f.rec.Entry
	e.Export = "ALL,EXTRA=1"
	changed, _ := e.Encode()
	if err := os.WriteFile(entry, changed, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadJob(f.sp, f.uid, f.id, f.uid); err == nil || !strings.Contains(err.Error(), "changed since glean took the job in") {
		t.Errorf("an entry changed after intake: %v", err)
	}
}

// The daemon's job.json carries the user's whole entry and is private
// (0600); status.json, what everyone may read, has no entry, no pilot
// tokens, and names the entry's digest.
func TestRecordPrivateStatusPublic(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\n", []string{"SECRET=s3cr3t"}, func(e *spool.Entry) { e.Export = "ALL,TOKEN=hunter2" })
	f.rec.PilotJobs = []spool.PilotJob{{ID: "77", Token: "feedface"}}
	if err := f.recs.Put(f.rec); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.sp.Dir, spool.JobsDir, f.rec.DirName())
	for file, mode := range map[string]os.FileMode{spool.RecordFile: 0o600, spool.StatusFile: 0o644} {
		if st, err := os.Stat(filepath.Join(dir, file)); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %o", file, st.Mode(), err, mode)
		}
	}
	pub := readFile(t, filepath.Join(dir, spool.StatusFile))
	for _, secret := range []string{"hunter2", "feedface", f.cwd, `"entry"`} {
		if strings.Contains(pub, secret) {
			t.Errorf("status.json shows %q:\n%s", secret, pub)
		}
	}
	if !strings.Contains(pub, f.rec.EntryDigest) || !strings.Contains(readFile(t, filepath.Join(dir, spool.RecordFile)), "hunter2") {
		t.Errorf("status.json lacks the digest, or job.json the entry")
	}
	if j := f.job(); j.Entry.Export != "ALL,TOKEN=hunter2" {
		t.Errorf("the agent's entry %+v", j.Entry)
	}
}

func TestSummarize(t *testing.T) {
	arr := &spool.Array{Ranges: []spool.Range{{Start: 0, End: 29, Step: 1}}}
	entry := &spool.Entry{Anchor: "4242", Name: "calib", Cwd: "/w", Array: arr}
	var evs []spool.TaskEvent
	for i := 0; i < 25; i++ {
		evs = append(evs, spool.TaskEvent{Index: i, Reason: spool.ReasonFailed, Exit: 3, Final: true})
	}
	evs = append(evs, spool.TaskEvent{Index: 25, Reason: spool.ReasonFailed, Exit: 137, Final: true},
		spool.TaskEvent{Index: 26, Reason: spool.ReasonHandBack},
		spool.TaskEvent{Index: 26, Reason: spool.ReasonCompleted, Final: true})
	rec := &spool.Record{Anchor: "4242", Name: "calib", State: spool.StateFailed, Reason: "26 tasks failed",
		Tasks: spool.Counts{Total: 30, Done: 4, Failed: 26}, Exit: 137}
	s := Summarize(rec, entry, evs, "ann", "4242", "n0")
	if s.Exit != 137 || s.Path != "/w/slurm-4242_summary.out" {
		t.Errorf("exit %d path %q", s.Exit, s.Path)
	}
	for _, want := range []string{"elastic job 4242 (calib): failed", "reason: 26 tasks failed", "30 total, 4 done, 26 failed",
		"failed tasks (26, first 20)", "task 0: exit code 3", "task outputs: /w/slurm-4242_%a.out", "exit code 137"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("summary lacks %q:\n%s", want, s.Text)
		}
	}
	if strings.Contains(s.Text, "task 20:") || strings.Contains(s.Text, "task 26:") {
		t.Errorf("summary lists too much:\n%s", s.Text)
	}

	entry.Output = "logs/%x-%a.log"
	for _, tc := range []struct {
		state string
		exit  int
		want  int
	}{{spool.StateDone, 0, 0}, {spool.StateFailed, 0, 1}, {spool.StateCancelled, 0, 1}, {spool.StateFailed, 3, 3}, {spool.StateRejected, 0, 1}} {
		rec := &spool.Record{Anchor: "1", Name: "calib", State: tc.state, Exit: tc.exit}
		s := Summarize(rec, entry, nil, "ann", "1", "n0")
		if s.Exit != tc.want || s.Path != "/w/logs/calib-summary.log" {
			t.Errorf("%s exit %d: got exit %d path %q", tc.state, tc.exit, s.Exit, s.Path)
		}
	}
	// Written, appending.
	dir := t.TempDir()
	entry = &spool.Entry{Anchor: "5", Name: "x", Cwd: dir}
	for i := 0; i < 2; i++ {
		if err := WriteSummary(Summarize(&spool.Record{State: spool.StateDone}, entry, nil, "u", "5", "n"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, filepath.Join(dir, "slurm-5_summary.out")); strings.Count(got, "exit code 0") != 2 {
		t.Errorf("summary file %q", got)
	}
}

// With pty=yes the task's stdout is a terminal and its output still
// reaches the output file.
func TestPTY(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\nif [ -t 1 ]; then echo tty; else echo notty; fi\n", nil, func(e *spool.Entry) { e.Glean.PTY = true })
	runAgent(t, context.Background(), f.agent("19", 1, nil))()
	got := readFile(t, filepath.Join(f.cwd, "slurm-"+testAnchor+"_0.out"))
	if strings.TrimSpace(got) != "tty" {
		t.Errorf("output %q", got)
	}
	if res := f.results(); len(res) != 1 || res[0].Outcome != spool.OutcomeExited || res[0].Exit != 0 {
		t.Errorf("results %+v", res)
	}
}

func TestSubmissionUmask(t *testing.T) {
	if m := submissionUmask([]string{"SLURM_UMASK=0027"}); m != 0o027 {
		t.Errorf("%o", m)
	}
	if m := submissionUmask(nil); m != 0o022 {
		t.Errorf("default %o", m)
	}
	f := newFixture(t, 1, "#!/bin/sh\necho hi\n", []string{"SLURM_UMASK=0077"}, nil)
	runAgent(t, context.Background(), f.agent("20", 1, nil))()
	st, err := os.Stat(filepath.Join(f.cwd, "slurm-"+testAnchor+"_0.out"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("output file mode %v %v, want 0600 from SLURM_UMASK=0077", st.Mode(), err)
	}
}

// The agent estimates a task as the daemon does when it sizes pilots: from
// the job's runtimes, or its profile's until it has some (else a pilot
// sized for the profile's tasks would not start one).
func TestEstimateFromProfile(t *testing.T) {
	a := &Agent{job: &Job{Entry: &spool.Entry{Resources: spool.Resources{TimeLimit: 60}},
		Record: &spool.Record{ProfileRuntimes: []time.Duration{60 * time.Second, 80 * time.Second}}}, hist: newHistory()}
	if got, want := a.estimate(), 110*time.Second; got != want {
		t.Errorf("from the profile: %v, want %v", got, want)
	}
	a.hist.runtimes = []time.Duration{20 * time.Second}
	if got, want := a.estimate(), 35*time.Second; got != want {
		t.Errorf("from its own: %v, want %v", got, want)
	}
	a.job.Record.ProfileRuntimes, a.hist.runtimes = nil, nil
	if got, want := a.estimate(), time.Hour; got != want {
		t.Errorf("from nothing: %v, want the -t %v", got, want)
	}
}
