package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/shirou/gopsutil/v3/cpu"
	"github.com/shirou/gopsutil/v3/mem"
)

// history is what the journal says about the job's tasks so far.
type history struct {
	attempts map[int]int     // committed attempts per task
	resume   map[int]bool    // the task has a complete save to resume from (see add)
	killed   map[int]bool    // the task's last committed attempt ended by an expected kill (not its own failure)
	runtimes []time.Duration // of completed attempts
	// unfinished is the longest run of an attempt that did not complete
	// (spool.JobTaskEstimate).
	unfinished time.Duration
}

func newHistory() *history {
	return &history{attempts: map[int]int{}, resume: map[int]bool{}, killed: map[int]bool{}}
}

func (h *history) add(evs []spool.TaskEvent) {
	for _, ev := range evs {
		h.attempts[ev.Index]++
		if ev.Reason == spool.ReasonDuplicate {
			continue // a second end of a finished task says nothing about the next attempt
		}
		h.killed[ev.Index] = spool.ExpectedKill(ev.Reason)
		// A save on TERM (exit 99) is complete; it stays the task's until
		// an attempt fails by itself (then the directory is emptied) or
		// completes. A later attempt killed before it saved (lost, given
		// way during its start-up) leaves it as it was.
		h.resume[ev.Index] = ev.Checkpointed || h.resume[ev.Index] && h.killed[ev.Index]
		if ev.Reason == spool.ReasonCompleted && !ev.Start.IsZero() && ev.End.After(ev.Start) {
			h.runtimes = append(h.runtimes, ev.End.Sub(ev.Start))
		} else if ev.Reason != spool.ReasonCompleted {
			h.unfinished = max(h.unfinished, ev.RunTime())
		}
	}
}

// Estimate is how long a task is expected to run (spool.TaskEstimate:
// learned from the job's completed runtimes, at most its -t).
func Estimate(timeLimitMin int, runtimes []time.Duration) time.Duration {
	return spool.TaskEstimate(timeLimitMin, runtimes)
}

// estimate is how long the job's next task is expected to run, as the
// daemon reckons it when it sizes pilots (spool.JobTaskEstimate): from the
// job's own runtimes, or its profile's until it has some.
func (a *Agent) estimate() time.Duration {
	return spool.JobTaskEstimate(a.job.Entry.Resources.TimeLimit, a.hist.runtimes, a.job.Record.ProfileRuntimes, a.hist.unfinished)
}

// Fits reports whether a task estimated to run est, started at now,
// ends before the allocation's end minus the grace. An unknown end or
// estimate fits.
func Fits(now, end time.Time, grace, est time.Duration) bool {
	return end.IsZero() || est <= 0 || !now.Add(est).After(end.Add(-grace))
}

// Capacity is what the agent may use on its node.
type Capacity struct {
	CPUs  int
	MemMB int64 // 0: unknown (memory is not checked)
}

// NodeCapacity reads the node's CPUs and memory (gopsutil), bounded by
// the allocation (SLURM_CPUS_ON_NODE, SLURM_MEM_PER_NODE) when set.
func NodeCapacity(getenv func(string) string) Capacity {
	var c Capacity
	if n, err := cpu.Counts(true); err == nil {
		c.CPUs = n
	}
	if vm, err := mem.VirtualMemory(); err == nil {
		c.MemMB = int64(vm.Total >> 20)
	}
	if n, err := strconv.Atoi(getenv("SLURM_CPUS_ON_NODE")); err == nil && n > 0 && (c.CPUs == 0 || n < c.CPUs) {
		c.CPUs = n
	}
	if m, err := strconv.ParseInt(getenv("SLURM_MEM_PER_NODE"), 10, 64); err == nil && m > 0 && (c.MemMB == 0 || m < c.MemMB) {
		c.MemMB = m
	}
	c.CPUs = max(c.CPUs, 1)
	return c
}

// Demand is one task's share of the node.
type Demand struct {
	CPUs      int
	MemMB     int64
	Exclusive bool // the whole node
}

// TaskDemand is what one task of the entry needs: --cpus-per-task x
// --ntasks CPUs (1 if absent), --mem or --mem-per-cpu x CPUs, the whole
// node with --exclusive.
func TaskDemand(r spool.Resources) Demand {
	d := Demand{CPUs: max(r.CPUs, 1), Exclusive: r.Exclusive}
	switch {
	case r.MemMB > 0:
		d.MemMB = r.MemMB
	case r.MemPerCPUMB > 0:
		d.MemMB = r.MemPerCPUMB * int64(d.CPUs)
	}
	return d
}

// CanStart says whether one more task of demand d fits beside running
// ones of the same demand. A node too small for one task still runs it
// alone: plain Slurm would not have started it at all, but refusing would
// leave the task to wait forever.
func CanStart(c Capacity, d Demand, running int) bool {
	if running == 0 {
		return true
	}
	if d.Exclusive {
		return false
	}
	if (running+1)*d.CPUs > c.CPUs {
		return false
	}
	return c.MemMB <= 0 || d.MemMB <= 0 || int64(running+1)*d.MemMB <= c.MemMB
}

// Runner runs one Slurm command (sidecar/slurm.Exec satisfies it).
type Runner interface {
	Run(ctx context.Context, argv []string) ([]byte, error)
}

// AllocationEnd is when the running job's allocation ends:
// SLURM_JOB_END_TIME where Slurm sets it (23.02 and later; 22.05 sets it
// only for prolog and epilog), else `squeue -h -j $SLURM_JOB_ID -o %e`
// (epoch seconds: the runner sets SLURM_TIME_FORMAT=%s). The zero time
// means no known end (no Slurm job, or an unlimited one).
func AllocationEnd(ctx context.Context, getenv func(string) string, r Runner) (time.Time, error) {
	if t, ok := epoch(getenv("SLURM_JOB_END_TIME")); ok {
		return t, nil
	}
	id := getenv("SLURM_JOB_ID")
	if id == "" || r == nil {
		return time.Time{}, nil
	}
	out, err := r.Run(ctx, []string{"squeue", "-h", "-j", id, "-o", "%e"})
	if err != nil {
		return time.Time{}, fmt.Errorf("the allocation's end: %w", err)
	}
	s := strings.TrimSpace(string(out))
	if t, ok := epoch(s); ok {
		return t, nil
	}
	switch strings.ToUpper(s) {
	case "", "N/A", "UNLIMITED", "UNKNOWN", "NONE", "INFINITE":
		return time.Time{}, nil
	}
	return time.Time{}, errors.New("the allocation's end: squeue printed " + strconv.Quote(s))
}

// Learn returns an Options.Learn that reads the allocation's end
// (AllocationEnd) and, unless killWait is known (> 0), Slurm's KillWait
// with readKillWait (`scontrol show config`), concurrently.
func Learn(getenv func(string) string, r Runner, killWait time.Duration,
	readKillWait func(context.Context) (time.Duration, error)) func(context.Context) (Limits, error) {
	return func(ctx context.Context) (Limits, error) {
		l := Limits{KillWait: killWait}
		var kerr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			if l.KillWait <= 0 && readKillWait != nil {
				l.KillWait, kerr = readKillWait(ctx)
			}
		}()
		end, err := AllocationEnd(ctx, getenv, r)
		<-done
		l.End = end
		if kerr != nil {
			kerr = fmt.Errorf("KillWait: %w", kerr)
		}
		return l, errors.Join(err, kerr)
	}
}

func epoch(s string) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}
