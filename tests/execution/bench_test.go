package execution

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Issue 5's benchmarks on the loopback cluster. They run once per op (each
// op is one elastic job) and report figures with b.ReportMetric; nothing
// here asserts a speed. Run them alone:
//
//	go test -run XXX -bench . ./tests/execution

const (
	dispatchTasks  = 150
	dispatchPilots = 8
	dispatchTask   = 2 * time.Second
)

// BenchmarkDispatch: 150 tasks of 2 s on 8 pilots (the cluster's other 16
// nodes drained). Efficiency is the ideal makespan (150 x 2 s / 8) over
// the actual one, from the first task's start to the last one's end
// (whole tasks cap it at 37.5/38 = 98.7 %); the per-task overhead is each
// pilot's busy span beyond its tasks' nominal 2 s, per task (the take,
// the fork and exec of the script, the result); busy efficiency is the
// nominal task time over those spans (no start stagger, no tail); the gap
// is what the journal shows between one attempt's end and the next one's
// start on the same pilot; spawn is spawnBaseline.
func BenchmarkDispatch(b *testing.B) {
	e := setup(b)
	drained := "c[" + strconv.Itoa(dispatchPilots+1) + "-" + strconv.Itoa(cl.Nodes) + "]"
	cl.Run(b, "scontrol", "update", "nodename="+drained, "state=drain", "reason=BenchmarkDispatch")
	b.Cleanup(func() { cl.Resume(b, drained) })
	e.WriteFile(b, "dispatch.sh", "#!/bin/sh\nsleep "+strconv.Itoa(int(dispatchTask/time.Second))+"\n", 0o755)
	e.WriteFile(b, "dispatch/.keep", "", 0o644)
	var eff, busy, makespan, overhead, gapMed, gapMax, inRun, pilots, spawn float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		spawn += spawnBaseline(b)
		b.StartTimer()
		anchor := e.Sbatch(b, "", "--glean=mode=scavenger", "--array=0-"+strconv.Itoa(dispatchTasks-1),
			"-o", "dispatch/%a.out", "dispatch.sh")
		r := e.WaitState(b, anchor, 5*time.Minute, spool.StateDone, spool.StateFailed)
		if r.State != spool.StateDone || r.Tasks.Done != dispatchTasks {
			b.Fatalf("record %s %+v", r.State, r.Tasks)
		}
		evs := e.TaskEvents(b, anchor)
		m := dispatchFigures(b, evs)
		logPilots(b, r, evs)
		b.Logf("job %s: %d pilots, makespan %v, efficiency %.1f %%, overhead %.1f ms/task, gap median %.1f ms max %.1f ms, in-run mean %.1f ms (p50 %.1f, p90 %.1f, max %.1f)",
			anchor, m.pilots, m.makespan.Round(time.Millisecond), m.eff, m.overhead, m.gapMed, m.gapMax, m.inRun, m.inRunP[0], m.inRunP[1], m.inRunP[2])
		eff += m.eff
		busy += m.busy
		makespan += m.makespan.Seconds()
		overhead += m.overhead
		gapMed += m.gapMed
		gapMax = max(gapMax, m.gapMax)
		inRun += m.inRun
		pilots += float64(m.pilots)
		cl.CancelAll(b) // the anchor, once it ran
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(eff/n, "eff_%")
	b.ReportMetric(busy/n, "busy_eff_%")
	b.ReportMetric(makespan/n, "makespan_s")
	b.ReportMetric(overhead/n, "overhead_ms/task")
	b.ReportMetric(gapMed/n, "gap_median_ms")
	b.ReportMetric(gapMax, "gap_max_ms")
	b.ReportMetric(inRun/n, "in_run_ms/task")
	b.ReportMetric(pilots/n, "pilots")
	b.ReportMetric(spawn/n, "spawn_ms")
}

type dispatch struct {
	pilots         int
	makespan       time.Duration
	eff            float64    // %
	busy           float64    // %: the tasks' nominal time over the pilots' busy spans
	overhead       float64    // ms per task: busy spans beyond the nominal task time
	gapMed, gapMax float64    // ms: end -> next start on a pilot
	inRun          float64    // ms per task: recorded runtime beyond the nominal
	inRunP         [3]float64 // its p50, p90, max
}

func dispatchFigures(b *testing.B, evs []spool.TaskEvent) dispatch {
	b.Helper()
	byPilot := map[string][]spool.TaskEvent{}
	var first, last time.Time
	var runtime time.Duration
	n := 0
	for _, ev := range evs {
		if ev.Reason != spool.ReasonCompleted {
			b.Logf("attempt not completed: %+v", ev)
			continue
		}
		n++
		byPilot[ev.Pilot] = append(byPilot[ev.Pilot], ev)
		if first.IsZero() || ev.Start.Before(first) {
			first = ev.Start
		}
		if ev.End.After(last) {
			last = ev.End
		}
		runtime += ev.End.Sub(ev.Start)
	}
	if n != dispatchTasks {
		b.Fatalf("%d completed attempts, want %d", n, dispatchTasks)
	}
	var gaps, over []float64
	var spans time.Duration
	for _, l := range byPilot {
		slices.SortFunc(l, func(x, y spool.TaskEvent) int { return x.Start.Compare(y.Start) })
		for k := range l {
			over = append(over, ms(l[k].End.Sub(l[k].Start)-dispatchTask))
			if k > 0 {
				gaps = append(gaps, ms(l[k].Start.Sub(l[k-1].End)))
			}
		}
		spans += l[len(l)-1].End.Sub(l[0].Start)
	}
	slices.Sort(gaps)
	slices.Sort(over)
	d := dispatch{pilots: len(byPilot), makespan: last.Sub(first)}
	ideal := dispatchTasks * dispatchTask / dispatchPilots
	d.eff = 100 * ideal.Seconds() / d.makespan.Seconds()
	d.overhead = ms(spans-dispatchTasks*dispatchTask) / dispatchTasks
	d.busy = 100 * float64(dispatchTasks*dispatchTask) / float64(spans)
	d.inRun = ms(runtime-dispatchTasks*dispatchTask) / dispatchTasks
	d.inRunP = [3]float64{over[len(over)/2], over[len(over)*9/10], over[len(over)-1]}
	if len(gaps) > 0 {
		d.gapMed, d.gapMax = gaps[len(gaps)/2], gaps[len(gaps)-1]
	}
	return d
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkPilotStart: pilot start latency on the idle 24-node cluster, in
// scheduling cycles (bf_interval). Per node: from the elastic job's sbatch
// (the user's: the idle node is there to be seen from then on) to Slurm's
// allocation of a pilot on it (slurmctld's log, in ms), counting any pilot
// the daemon cancelled as pending too long and submitted again; from the
// first pilot's submission on it (the record's Submitted: when its sbatch
// returned) to that allocation (negative: Slurm allocated it before
// sbatch returned); and from the sbatch to the node's first task (the
// journal). Per pilot: its own submission to its allocation.
func BenchmarkPilotStart(b *testing.B) {
	e := setup(b)
	cycle := cl.BFInterval(b)
	e.WriteFile(b, "pstart.sh", "#!/bin/sh\nsleep 2\n", 0o755)
	e.WriteFile(b, "pstart/.keep", "", 0o644)
	var seen, fromSbatch, firstTask, perPilot []float64 // in cycles
	submitted := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sbatch := time.Now()
		anchor := e.Sbatch(b, "", "--glean=mode=scavenger", "--array=0-"+strconv.Itoa(4*cl.Nodes-1), "-o", "pstart/%a.out", "pstart.sh")
		done := e.WaitState(b, anchor, 2*time.Minute, spool.StateDone, spool.StateFailed)
		alloc := allocations(b)
		firstOn := map[string]time.Time{}
		for _, ev := range e.TaskEvents(b, anchor) {
			if t, ok := firstOn[ev.Pilot]; !ok || ev.Start.Before(t) {
				firstOn[ev.Pilot] = ev.Start
			}
		}
		type node struct{ seen, running, task time.Time }
		nodes := map[string]*node{}
		earliest := func(t *time.Time, v time.Time) {
			if !v.IsZero() && (t.IsZero() || v.Before(*t)) {
				*t = v
			}
		}
		for _, p := range done.PilotJobs {
			submitted++
			n := nodes[p.Node]
			if n == nil {
				n = &node{}
				nodes[p.Node] = n
			}
			earliest(&n.seen, p.Submitted)
			at, ok := alloc[p.ID]
			if !ok {
				b.Logf("pilot %s on %s never started (cancelled: %v %s)", p.ID, p.Node, p.Cancelled, p.Cause)
				continue
			}
			perPilot = append(perPilot, float64(at.Sub(p.Submitted))/float64(cycle))
			earliest(&n.running, at)
			earliest(&n.task, firstOn[p.ID])
		}
		for name, n := range nodes {
			if n.running.IsZero() {
				b.Logf("node %s: no pilot started", name)
				continue
			}
			seen = append(seen, float64(n.running.Sub(n.seen))/float64(cycle))
			fromSbatch = append(fromSbatch, float64(n.running.Sub(sbatch))/float64(cycle))
			if !n.task.IsZero() {
				firstTask = append(firstTask, float64(n.task.Sub(sbatch))/float64(cycle))
			}
		}
		cl.CancelAll(b)
	}
	b.StopTimer()
	b.Logf("bf_interval %v; %d nodes, %d pilots submitted, %d started", cycle, len(seen), submitted, len(perPilot))
	b.ReportMetric(float64(submitted)/float64(len(seen)), "pilots/node")
	for _, m := range []struct {
		name string
		v    []float64
	}{{"submitted_to_running", seen}, {"sbatch_to_running", fromSbatch}, {"sbatch_to_first_task", firstTask}, {"pilot_submit_to_running", perPilot}} {
		slices.Sort(m.v)
		if len(m.v) == 0 {
			b.Fatalf("no %s figures", m.name)
		}
		b.ReportMetric(m.v[len(m.v)/2], m.name+"_median_cycles")
		b.ReportMetric(m.v[len(m.v)-1], m.name+"_max_cycles")
	}
}

var allocLine = regexp.MustCompile(`^\[([0-9T:.-]+)\] (?:sched: Allocate|sched/backfill: _start_job: Started) JobId=([0-9]+) `)

// allocations reads slurmctld's log: when each job was allocated its
// nodes (by the main scheduler or backfill), to the millisecond.
func allocations(b *testing.B) map[string]time.Time {
	b.Helper()
	f, err := os.Open(filepath.Join(cl.Dir, "log", "slurmctld.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	out := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := allocLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if t, err := time.ParseInLocation("2006-01-02T15:04:05.000", m[1], time.Local); err == nil {
			out[m[2]] = t
		}
	}
	return out
}

// logPilots logs each pilot's timeline relative to the first task's start:
// submitted, allocated (slurmctld), first task, last end, tasks run.
func logPilots(b *testing.B, r *spool.Record, evs []spool.TaskEvent) {
	b.Helper()
	alloc := allocations(b)
	type span struct {
		first, last time.Time
		n           int
	}
	spans := map[string]*span{}
	var t0 time.Time
	for _, ev := range evs {
		s := spans[ev.Pilot]
		if s == nil {
			s = &span{first: ev.Start, last: ev.End}
			spans[ev.Pilot] = s
		}
		s.n++
		if ev.Start.Before(s.first) {
			s.first = ev.Start
		}
		if ev.End.After(s.last) {
			s.last = ev.End
		}
		if t0.IsZero() || ev.Start.Before(t0) {
			t0 = ev.Start
		}
	}
	off := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Sub(t0).Round(time.Millisecond).String()
	}
	for _, p := range r.PilotJobs {
		s := spans[p.ID]
		if s == nil {
			s = &span{}
		}
		b.Logf("pilot %s %s: submitted %s allocated %s first task %s last end %s, %d tasks",
			p.ID, p.Node, off(p.Submitted), off(alloc[p.ID]), off(s.first), off(s.last), s.n)
	}
}

// spawnBaseline is the machine's own cost of a task's processes at this
// moment: the wall time of the task script with "sleep 0" (fork and exec
// of sh and of sleep, their exits), run by 8 workers at once as the 8
// agents run theirs, in ms per run. It is what no agent can save.
func spawnBaseline(b *testing.B) float64 {
	b.Helper()
	script := filepath.Join(b.TempDir(), "zero.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	const runs = 5
	var mu sync.Mutex
	var total time.Duration
	var wg sync.WaitGroup
	for w := 0; w < dispatchPilots; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < runs; k++ {
				t0 := time.Now()
				if err := exec.Command(script).Run(); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				total += time.Since(t0)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ms(total) / (dispatchPilots * runs)
}
