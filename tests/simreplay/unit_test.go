package simreplay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// These need no Slurm.

func TestCompress(t *testing.T) {
	w := &workload.Workload{Name: "w", Nodes: 4, Jobs: []workload.Job{
		{ID: 1, Submit: 3405 * time.Millisecond, Run: 7077 * time.Second, Limit: 7077 * time.Second, Nodes: 4},
		{ID: 2, Submit: 1241591 * time.Millisecond, Run: 12412 * time.Second, Limit: workload.Unlimited, Nodes: 7},
		{ID: 3, Run: 10 * time.Second, Limit: 30 * time.Second, Nodes: 1},
	}}
	c := Compress(w, 10)
	want := []workload.Job{
		// 7077 s / 10 = 707.7 s = 11.8 min: a 12-minute limit.
		{ID: 1, Submit: 341 * time.Millisecond, Run: 707700 * time.Millisecond, Limit: 12 * time.Minute, Nodes: 4},
		{ID: 2, Submit: 124159 * time.Millisecond, Run: 1241200 * time.Millisecond, Limit: workload.Unlimited, Nodes: 7},
		{ID: 3, Run: time.Second, Limit: time.Minute, Nodes: 1},
	}
	for i := range want {
		if c.Jobs[i] != want[i] {
			t.Errorf("job %d: %+v, want %+v", i+1, c.Jobs[i], want[i])
		}
	}
	if w.Jobs[0].Limit != 7077*time.Second {
		t.Error("Compress changed its input")
	}
}

func TestSettings(t *testing.T) {
	p, err := Settings([]byte(`SLURM_VERSION           = 22.05.8
KillWait                = 5 sec
MessageTimeout          = 10 sec
MinJobAge               = 600 sec
OverTimeLimit           = 0 min
SchedulerParameters     = bf_interval=1,sched_interval=1,bf_resolution=1,batch_sched_delay=2,bf_max_job_test=50
SchedulerType           = sched/backfill
SelectType              = select/linear
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.BFInterval != time.Second || p.BFResolution != time.Second || p.SchedInterval != time.Second ||
		p.BatchSchedDelay != 2*time.Second || p.BFMaxJobTest != 50 || p.BFWindow != 24*time.Hour ||
		p.LimitCheck != 30*time.Second || p.KillWait != 0 {
		t.Errorf("settings %+v", p)
	}
}

func TestReadLog(t *testing.T) {
	const log = `[2026-11-22T04:09:40.100] slurmctld version 22.05.8 started on cluster glean26000
[2026-11-22T04:10:10.237] sched/backfill: _attempt_backfill: beginning
[2026-11-22T04:10:10.237] sched/backfill: _attempt_backfill: no jobs to backfill
[2026-11-22T04:10:13.048] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=4294901759 usec=488
[2026-11-22T04:10:13.088] _slurm_rpc_submit_batch_job: JobId=2 InitPrio=4294901758 usec=419
[2026-11-22T04:10:14.038] sched/backfill: _start_job: Started JobId=1 in batch on c[1-4]
[2026-11-22T04:10:14.043] SchedulerParameters=default_queue_depth=100,max_rpc_cnt=0
[2026-11-22T04:10:40.529] debug:  sched: Running job scheduler for full queue.
[2026-11-22T04:10:40.530] debug:  sched: Running job scheduler for default depth.
[2026-11-22T04:10:44.238] sched/backfill: _attempt_backfill: beginning
[2026-11-22T04:10:58.201] _job_complete: JobId=1 WEXITSTATUS 0
[2026-11-22T04:10:58.202] _job_complete: JobId=1 done
[2026-11-22T04:10:58.744] sched: Allocate JobId=2 NodeList=c[1-6,24] #CPUs=7 Partition=batch
[2026-11-22T04:12:15.296] Time limit exhausted for JobId=2
a line without a time stamp
`
	got, err := ReadLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	times := got.Jobs
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("15:04:05.000", s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 11, 22, v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.Local)
	}
	want := map[string]LogTimes{
		"1": {Submit: at("04:10:13.048"), Start: at("04:10:14.038"), End: at("04:10:58.202")},
		"2": {Submit: at("04:10:13.088"), Start: at("04:10:58.744"), End: at("04:12:15.296")},
	}
	if len(times) != len(want) || !got.FirstSchedule.Equal(at("04:10:14.043")) || !got.Started.Equal(at("04:09:40.100")) {
		t.Fatalf("jobs %v, first schedule %v, started %v", times, got.FirstSchedule, got.Started)
	}
	if !slices.EqualFunc(got.Backfill, []time.Time{at("04:10:10.237"), at("04:10:44.238")}, time.Time.Equal) ||
		!slices.EqualFunc(got.FullRuns, []time.Time{at("04:10:40.529")}, time.Time.Equal) {
		t.Errorf("backfill passes %v, full runs %v", got.Backfill, got.FullRuns)
	}
	for id, w := range want {
		if g := times[id]; !g.Submit.Equal(w.Submit) || !g.Start.Equal(w.Start) || !g.End.Equal(w.End) {
			t.Errorf("job %s: %+v, want %+v", id, g, w)
		}
	}
	if _, err := ReadLog(strings.NewReader("[yesterday] _job_complete: JobId=1 done\n")); err == nil {
		t.Error("a bad time stamp was accepted")
	}
}

func TestBackfilled(t *testing.T) {
	rows := []Row{{ID: 1, Submit: 0, Slurm: 0}, {ID: 2, Submit: 1, Slurm: 50}, {ID: 3, Submit: 2, Slurm: 10}, {ID: 4, Submit: 3, Slurm: 60}}
	if got := backfilled(rows); len(got) != 1 || got[0] != 3 {
		t.Errorf("backfilled %v, want [3]", got)
	}
}

// The simulation's clock starts a whole number of seconds before a tick of
// slurmctld (the backfill thread's first pass, else the main scheduler's
// first run), at most a second before the origin.
func TestRunBase(t *testing.T) {
	origin := time.Unix(1000, 0)
	for _, tc := range []struct{ first, backfill, want time.Duration }{
		{0, 0, 0},
		{2300 * time.Millisecond, 0, -700 * time.Millisecond},
		{900 * time.Millisecond, 0, -100 * time.Millisecond},
		{-400 * time.Millisecond, 0, -400 * time.Millisecond},
		{900 * time.Millisecond, -31_750 * time.Millisecond, -750 * time.Millisecond},
		{900 * time.Millisecond, 1_010 * time.Millisecond, -990 * time.Millisecond},
	} {
		r := &Run{Origin: origin}
		if tc.first != 0 {
			r.FirstSchedule = origin.Add(tc.first)
		}
		if tc.backfill != 0 {
			r.Backfill = []time.Time{origin.Add(tc.backfill)}
		}
		if got := r.base().Sub(origin); got != tc.want {
			t.Errorf("first schedule at %v, first backfill pass at %v: base at %v, want %v", tc.first, tc.backfill, got, tc.want)
		}
	}
}

// Slurm's backfill passes are matched with the simulator's within a
// second, while the replay ran.
func TestMatchPasses(t *testing.T) {
	origin := time.Unix(1000, 0)
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	r := &Run{Origin: origin, Stopped: origin.Add(sec(100))}
	// base: 0.75 s before the origin, on the first pass's phase; the
	// passes at -30, 2, 32, 62.25 and 96 on its clock (131 is after the end).
	for _, p := range []float64{-30.75, 1.25, 31.25, 61.5, 95.25, 130.25} {
		r.Backfill = append(r.Backfill, origin.Add(sec(p)))
	}
	slurm, met, made := r.matchPasses([]time.Duration{sec(2), sec(32), sec(70), sec(96), sec(126)})
	if slurm != 4 || met != 3 || made != 4 {
		t.Errorf("%d passes in Slurm, %d met, %d made; want 4, 3, 4", slurm, met, made)
	}
}

// TestSavedRuns compares replays of thesis list 2 saved from the loopback
// Slurm (testdata/*.json, made with GLEAN_REPLAY_SAVE) with the simulator:
// a change to the model that breaks agreement with Slurm fails here, with
// no Slurm needed.
func TestSavedRuns(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved runs: %v", err)
	}
	w := loadList2(t)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var run Run
			if err := json.Unmarshal(data, &run); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(run.Name, w.Name+"/") || len(run.Records) > len(w.Jobs) {
				t.Fatalf("a run of %s with %d jobs, not of %s", run.Name, len(run.Records), w.Name)
			}
			jobs := *w
			jobs.Jobs = w.Jobs[:len(run.Records)]
			cmps := compareRun(t, Compress(&jobs, run.Factor), &run)
			checkAgreement(t, cmps[0])
		})
	}
}
