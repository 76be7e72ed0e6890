package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// benchCluster is a stateful fake Slurm for the executor: nodes n1..nN,
// all in the pilot partition; a pilot the executor submits runs at once
// on its node until it is cancelled.
type benchCluster struct {
	mu     sync.Mutex
	nodes  int
	pilots map[string]string // id -> node
	next   int
}

var (
	_ Actor       = (*benchCluster)(nil)
	_ Snapshotter = (*benchCluster)(nil)
)

func (c *benchCluster) SubmitPilots(_ context.Context, _ string, intents []spool.PilotJob) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, len(intents))
	for i, p := range intents {
		c.next++
		ids[i] = strconv.Itoa(100000 + c.next)
		c.pilots[ids[i]] = p.Node
	}
	return ids, nil
}

func (c *benchCluster) SignalPilot(ctx context.Context, r, id string) error {
	return c.CancelPilot(ctx, r, id)
}
func (c *benchCluster) CancelPendingPilot(context.Context, string, string) error { return nil }

func (c *benchCluster) CancelPilot(_ context.Context, _, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pilots, id)
	return nil
}

func (c *benchCluster) CancelPending(context.Context, string) error { return nil }
func (c *benchCluster) Release(context.Context, string) error       { return nil }
func (c *benchCluster) StartShadow(context.Context, string) error   { return nil }

func (c *benchCluster) Snapshot(_ context.Context, now time.Time) *cluster.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &cluster.Snapshot{Time: now, Complete: true, Config: cluster.SchedConfig{BackfillInterval: 30 * time.Second}}
	busy := map[string]bool{}
	for id, n := range c.pilots {
		busy[n] = true
		s.Jobs = append(s.Jobs, cluster.Job{ID: id, ArrayJobID: id, Name: "glean-pilot", Partition: "pilot",
			State: cluster.JobRunning, RawState: "RUNNING", Reason: "None", NumNodes: 1, Nodes: []string{n},
			TimeLimit: cluster.Unlimited, Start: now.Add(-time.Minute)})
	}
	p := cluster.Partition{Name: "pilot", MaxTime: cluster.Unlimited, Up: true, OverSubscribe: "NO"}
	for i := 1; i <= c.nodes; i++ {
		n := "n" + strconv.Itoa(i)
		st := cluster.NodeIdle
		if busy[n] {
			st = cluster.NodeAlloc
		}
		s.Nodes = append(s.Nodes, cluster.Node{Name: n, State: st, RawState: "idle", Partitions: []string{"pilot"}, CPUs: 4, MemoryMB: 1000})
		p.Nodes = append(p.Nodes, n)
	}
	s.Partitions = []cluster.Partition{p}
	return s
}

// running returns the pilots as "id node" pairs.
func (c *benchCluster) running() [][2]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][2]string
	for id, n := range c.pilots {
		out = append(out, [2]string{id, n})
	}
	return out
}

const (
	benchTasks = 100_000
	benchNodes = 100
)

// BenchmarkQueued100k: gleand's memory with one elastic job of 100,000
// queued tasks on a 100-node cluster (a fake Slurm; the spool on disk).
// Intake and executor rounds as gleand runs them; pilots on every node,
// one lease each (an agent's running task). Each op is one round. Figures:
// the live heap after a GC once the rounds ran (what gleand keeps), the
// largest heap in use seen right after a round (live + garbage), and the
// process's peak RSS (VmHWM, reset before the rounds; the test binary's
// own baseline included).
func BenchmarkQueued100k(b *testing.B) { benchMemory(b, 0, 0) }

// BenchmarkCommit1000: the same job half done (50,000 completed tasks on
// the journal, read back as a restarted gleand does), and 1,000 results
// to commit in each round: ns/op is one round that commits them.
func BenchmarkCommit1000(b *testing.B) { benchMemory(b, benchTasks/2, 1000) }

func benchMemory(b *testing.B, done, perRound int) {
	fx := newFixtureLimits(b, func(*config.Limits) {})
	e := fx.submit(b, benchTasks, nil)
	if st := fx.round(b); st.Accepted != 1 {
		b.Fatalf("intake: %+v", st)
	}
	name := spool.RecordName(fx.uid, e.ID)
	r := fx.in.Get(name)
	rs, err := fx.s.OpenRecords()
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	if done > 0 {
		seedJournal(b, filepath.Join(fx.s.Dir, spool.JobsDir, r.DirName(), spool.JournalFile), fx.now, done)
	}
	sl := &benchCluster{nodes: benchNodes, pilots: map[string]string{}}
	pc := policy.DefaultConfig()
	pc.PilotPartition, pc.MaxPendingPilots = "pilot", benchNodes
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2,
		HeartbeatTimeout: time.Hour, PilotPartition: "pilot"}, fx.in, rs, sl, sl, slog.New(slog.NewTextHandler(io.Discard, nil)))
	w, err := fx.s.OpenWork(fx.uid, e.ID)
	if err != nil {
		b.Fatal(err)
	}
	now := fx.now
	ctx := context.Background()
	step := func() {
		now = now.Add(time.Millisecond) // leases stay fresh however many rounds run
		if _, err := fx.in.Round(ctx, now); err != nil {
			b.Fatal(err)
		}
		if _, err := x.Round(ctx, now); err != nil {
			b.Fatal(err)
		}
	}
	// Warm up: pilots on every node, each running one task.
	step()
	next := done
	for _, p := range sl.running() {
		writeLease(b, w, next, p[0], p[1], now)
		next++
	}
	step()
	if got := len(sl.running()); got != benchNodes {
		b.Fatalf("%d pilots running, want %d", got, benchNodes)
	}
	pilots := sl.running()

	runtime.GC()
	resetPeakRSS()
	var peak uint64
	var ms runtime.MemStats
	committed := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for k := 0; k < perRound && next < benchTasks; k++ {
			p := pilots[k%len(pilots)]
			writeResult(b, w, next, p[0], p[1], now)
			next++
			committed++
		}
		b.StartTimer()
		step()
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		b.StartTimer()
	}
	b.StopTimer()
	hwm := peakRSS()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if r := fx.in.Get(name); r.Tasks.Done != done+committed {
		b.Fatalf("record %+v, want %d done", r.Tasks, done+committed)
	}
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "live_heap_MB")
	b.ReportMetric(float64(peak)/(1<<20), "peak_heap_MB")
	b.ReportMetric(float64(hwm)/(1<<20), "peak_RSS_MB")
	runtime.KeepAlive(x)
}

// seedJournal appends n completed task events (tasks 0..n-1) as the
// daemon writes them; the executor reads them back at its first round.
func seedJournal(b *testing.B, path string, now time.Time, n int) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	for i := 0; i < n; i++ {
		ev := spool.TaskEvent{Index: i, Attempt: fmt.Sprintf("%016x", i), Pilot: strconv.Itoa(90000 + i%benchNodes),
			Node: "n" + strconv.Itoa(1+i%benchNodes), Start: now.Add(-time.Hour), End: now.Add(-time.Hour + time.Duration(60+i%60)*time.Second),
			Reason: spool.ReasonCompleted, Final: true}
		line, _ := json.Marshal(spool.Event{Time: now, Event: "task", Task: &ev})
		bw.Write(append(line, '\n'))
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// writeLease and writeResult write an agent's files for task directly
// (no fsync: the disk is not what is measured).
func writeLease(b *testing.B, w *spool.Work, task int, pilot, node string, now time.Time) {
	data, _ := json.Marshal(spool.Lease{Version: 1, Task: task, Attempt: "a" + strconv.Itoa(task), Pilot: pilot, Node: node,
		PID: 1, Started: now})
	if err := os.WriteFile(w.LeasePath(task), data, 0o640); err != nil {
		b.Fatal(err)
	}
}

func writeResult(b *testing.B, w *spool.Work, task int, pilot, node string, now time.Time) {
	a := "r" + strconv.Itoa(task)
	data, _ := json.Marshal(spool.Result{Version: 1, Task: task, Attempt: a, Pilot: pilot, Node: node,
		Start: now.Add(-time.Minute), End: now, Outcome: spool.OutcomeExited})
	if err := os.WriteFile(filepath.Join(w.Dir, spool.ResultsDir, strconv.Itoa(task)+"."+a), data, 0o640); err != nil {
		b.Fatal(err)
	}
}

func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's VmHWM in bytes (0 if unknown).
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
