package boundary

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// synthetic builds squeue and sinfo output in the daemon's formats for a
// 1,000-node partition with 5,000 running and 5,000 pending jobs.
func synthetic(now time.Time) (squeue, sinfo []byte) {
	const nodes = 1000
	var q, n bytes.Buffer
	t := now.Unix()
	for i := 1; i <= nodes; i++ {
		state := "allocated"
		if i%10 == 0 {
			state = "idle"
		}
		fmt.Fprintf(&n, "c%d\x1f%s\x1fbatch*\x1f1\x1f1000\x1e\n", i, state)
	}
	for i := 0; i < 5000; i++ {
		node := i%900 + 1 + i%900/9 // skip every tenth node (idle)
		fmt.Fprintf(&q, "%d\x1f%d\x1fN/A\x1fRUNNING\x1fNone\x1fbatch\x1f1\x1fc%d\x1f(null)\x1f1:00:00\x1f%d\x1f%d\x1f%d\x1f%d\x1fu%d\x1fjob%d\x1f(null)\x1dbench\x1e\n",
			1000+i, 1000+i, node, t-600, t-60, t+int64(i%3600), 100000-i, i%50, i)
	}
	for i := 0; i < 5000; i++ {
		start, sched := "N/A", "(null)"
		if i%2 == 0 {
			start, sched = fmt.Sprint(t+int64(60+i%7200)), fmt.Sprintf("c[%d-%d]", i%990+1, i%990+4)
		}
		fmt.Fprintf(&q, "%d\x1f%d\x1fN/A\x1fPENDING\x1fPriority\x1fbatch\x1f4\x1f\x1f%s\x1f2:00:00\x1f%d\x1f%s\x1fN/A\x1f%d\x1fu%d\x1fpend%d\x1fa comment\x1dbench\x1e\n",
			10000+i, 10000+i, sched, t-30, start, 50000-i, i%50, i)
	}
	return q.Bytes(), n.Bytes()
}

// BenchmarkParseAndWindows10k: parse a 10,000-job squeue output (and the
// node list) and compute the backfill windows, as one daemon round does.
func BenchmarkParseAndWindows10k(b *testing.B) {
	now := time.Unix(1795317652, 0)
	q, n := synthetic(now)
	part := cluster.Partition{Name: "batch", Default: true, Up: true, MaxTime: cluster.Unlimited}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		jobs, errs := slurm.ParseSqueue(bytes.NewReader(q), "bench")
		nodes, nerrs := slurm.ParseSinfo(bytes.NewReader(n))
		if len(errs)+len(nerrs) > 0 || len(jobs) != 10000 {
			b.Fatalf("parse: %d jobs, errors %v %v", len(jobs), errs, nerrs)
		}
		s := &cluster.Snapshot{Time: now, Nodes: nodes, Jobs: jobs, Partitions: []cluster.Partition{part}, Complete: true}
		if _, err := policy.BackfillWindows(s, now, policy.WindowOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot1000Held: wall time of one full snapshot (every Slurm
// call of a round) against the 24-node cluster holding 1,000 held jobs.
func BenchmarkSnapshot1000Held(b *testing.B) {
	if cl == nil {
		b.Skip(slurmtest.UnavailableReason())
	}
	ids := strings.Fields(cl.Run(b, "squeue", "-h", "-o", "%A"))
	if len(ids) > 0 {
		cl.Run(b, "scancel", ids...)
	}
	// One array of 1,000 held elements would be one squeue line; real
	// queues hold separate jobs, so submit them one by one.
	for i := len(strings.Fields(cl.Run(b, "squeue", "-h", "-t", "PD", "-o", "%A"))); i < 1000; i++ {
		cl.Submit(b, "-H", "-J", "held", "--wrap", "true")
	}
	c := client(cl)
	ctx := context.Background()
	if _, err := c.Config(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := c.Snapshot(ctx, time.Now())
		if !s.Complete || len(s.Jobs) < 1000 {
			b.Fatalf("snapshot: complete=%v jobs=%d problems=%v", s.Complete, len(s.Jobs), s.Problems)
		}
	}
	b.StopTimer()
	cl.CancelAll(b)
}
