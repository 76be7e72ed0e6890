package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// A shadow element that finds every task left running on pilots stands by
// for one of them (one element per task), and when that pilot hands its
// task back (gives way), takes and runs it: the job does not wait for new
// pilots, as it would not have without glean.
func TestShadowStandsByForAPilotsTask(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\necho ran on $SLURM_JOB_ID\n", nil, nil)
	f.runDaemon(t)
	w := f.work()
	if _, err := w.Take([]int{0}, spool.Lease{Attempt: "p1", Pilot: "1"}); err != nil {
		t.Fatal(err)
	}
	shadow := runAgent(t, context.Background(), f.agent("21", 1, func(o *Options) { o.Shadow = true }))
	claim := filepath.Join(w.Dir, spool.StandbyDir, "0")
	waitFor(t, "the element's standby claim on task 0", func() bool {
		data, err := os.ReadFile(claim)
		return err == nil && string(data) == "21"
	})
	// A second element finds the one pilot task claimed: nothing to wait for.
	if why := runAgent(t, context.Background(), f.agent("22", 1, func(o *Options) { o.Shadow = true }))(); why != EndNoWork {
		t.Errorf("second element ended %q, want %q", why, EndNoWork)
	}
	// The pilot gives way: its attempt is handed back.
	if err := w.Finish(spool.Result{Task: 0, Attempt: "p1", Pilot: "1", Outcome: spool.OutcomeHandedBack}); err != nil {
		t.Fatal(err)
	}
	// "no work" if it looked before the daemon committed its own result.
	if why := shadow(); why != EndFinished && why != EndNoWork {
		t.Errorf("standing element ended %q, want %q or %q", why, EndFinished, EndNoWork)
	}
	waitFor(t, "the completed attempt committed", func() bool {
		return slices.ContainsFunc(f.events(), func(ev spool.TaskEvent) bool { return ev.Reason == spool.ReasonCompleted })
	})
	runs := 0
	for _, ev := range f.events() {
		if ev.Reason == spool.ReasonCompleted {
			runs++
			if ev.Pilot != "21" {
				t.Errorf("task completed on %q, want the standing element 21", ev.Pilot)
			}
		}
	}
	if runs != 1 {
		t.Errorf("%d completed runs, want 1: %+v", runs, f.events())
	}
	if _, err := os.Stat(claim); !os.IsNotExist(err) {
		t.Errorf("standby claim left behind: %v", err)
	}
}

// When the pilot completes the task instead, the standing element ends
// without running anything.
func TestShadowStandbyEndsWithThePilotsTask(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\nexit 0\n", nil, nil)
	f.runDaemon(t)
	w := f.work()
	if _, err := w.Take([]int{0}, spool.Lease{Attempt: "p1", Pilot: "1"}); err != nil {
		t.Fatal(err)
	}
	shadow := runAgent(t, context.Background(), f.agent("23", 1, func(o *Options) { o.Shadow = true }))
	waitClaim(t, w, 0)
	if err := w.Finish(spool.Result{Task: 0, Attempt: "p1", Pilot: "1", Outcome: spool.OutcomeExited}); err != nil {
		t.Fatal(err)
	}
	if why := shadow(); why != EndFinished && why != EndNoWork {
		t.Errorf("standing element ended %q, want %q or %q", why, EndFinished, EndNoWork)
	}
	for _, ev := range f.events() {
		if ev.Pilot == "23" {
			t.Errorf("the standing element ran task %d", ev.Index)
		}
	}
}

// The daemon commits results once a round (one scheduling cycle, 30 s by
// default): the standing element waits through that, past its idle
// timeout, and takes the task once the hand-back is committed.
func TestShadowStandbyWaitsForTheCommit(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\nexit 0\n", nil, nil)
	w := f.work()
	if _, err := w.Take([]int{0}, spool.Lease{Attempt: "p1", Pilot: "1"}); err != nil {
		t.Fatal(err)
	}
	a := f.agent("24", 1, func(o *Options) { o.Shadow = true })
	ended := make(chan string, 1)
	go func() { why, _ := a.Run(context.Background()); ended <- why }()
	waitClaim(t, w, 0)
	if err := w.Finish(spool.Result{Task: 0, Attempt: "p1", Pilot: "1", Outcome: spool.OutcomeHandedBack}); err != nil {
		t.Fatal(err)
	}
	// No daemon yet: the result waits for its commit for 5 idle timeouts.
	select {
	case why := <-ended:
		t.Fatalf("the element ended %q before the hand-back was committed", why)
	case <-time.After(5 * a.opt.Idle):
	}
	f.runDaemon(t)
	select {
	case why := <-ended:
		if why != EndFinished && why != EndNoWork {
			t.Errorf("ended %q, want %q or %q", why, EndFinished, EndNoWork)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the element did not end after the commit")
	}
	waitFor(t, "the element's completed attempt committed", func() bool {
		return slices.ContainsFunc(f.events(), func(ev spool.TaskEvent) bool {
			return ev.Pilot == "24" && ev.Reason == spool.ReasonCompleted
		})
	})
}

// An element whose tasks cannot be started gives up (EndFailed) as any
// agent does; it does not stand by for a pilot's task it could not run,
// holding its node and the one claim a working element would need.
func TestShadowThatCannotStartTasksDoesNotStandBy(t *testing.T) {
	f := newFixture(t, maxNotStart+1, "#!/bin/sh\nexit 0\n", nil, func(e *spool.Entry) { e.Output = "/nonexistent/dir/out-%a" })
	w := f.work()
	last := maxNotStart
	if _, err := w.Take([]int{last}, spool.Lease{Attempt: "p1", Pilot: "1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type end struct {
		why string
		err error
	}
	ended := make(chan end, 1)
	go func() {
		why, err := f.agent("25", 1, func(o *Options) { o.Shadow = true }).Run(ctx)
		ended <- end{why, err}
	}()
	var e end
	select {
	case e = <-ended:
	case <-time.After(20 * time.Second):
		cancel()
		e = <-ended
		t.Errorf("the element did not give up within 20 s (it ended %q when stopped)", e.why)
	}
	if e.why != EndFailed || e.err == nil {
		t.Errorf("ended %q, %v; want %q and an error", e.why, e.err, EndFailed)
	}
	if _, err := os.Stat(filepath.Join(w.Dir, spool.StandbyDir, strconv.Itoa(last))); !os.IsNotExist(err) {
		t.Errorf("a standby claim on the pilot's task is left: %v", err)
	}
}

// Once the pilot's task is done and nothing is left to take or stand by
// for (the job's last other task runs on another element), the standing
// element leaves at once, not after its idle timeout: the plain element
// would have ended, and the node may be wanted by the next job queued there.
func TestShadowLeavesAtOnceAfterStandingBy(t *testing.T) {
	f := newFixture(t, 2, "#!/bin/sh\nexit 0\n", nil, nil)
	f.runDaemon(t)
	w := f.work()
	if _, err := w.Take([]int{0}, spool.Lease{Attempt: "p1", Pilot: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Take([]int{1}, spool.Lease{Attempt: "s1", Pilot: "30", Shadow: true}); err != nil {
		t.Fatal(err)
	}
	shadow := runAgent(t, context.Background(), f.agent("25", 1, func(o *Options) { o.Shadow, o.Idle = true, time.Hour }))
	waitClaim(t, w, 0)
	if err := w.Finish(spool.Result{Task: 0, Attempt: "p1", Pilot: "1", Outcome: spool.OutcomeExited}); err != nil {
		t.Fatal(err)
	}
	if why := shadow(); why != EndNoWork {
		t.Errorf("ended %q, want %q", why, EndNoWork)
	}
}

// runDaemon commits results as gleand does until the test ends.
func (f *fixture) runDaemon(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	f.commit(ctx, &wg)
}

// waitClaim waits for a standby claim on task.
func waitClaim(t *testing.T, w *spool.Work, task int) {
	t.Helper()
	waitFor(t, "a standby claim on task "+strconv.Itoa(task), func() bool {
		_, err := os.Stat(filepath.Join(w.Dir, spool.StandbyDir, strconv.Itoa(task)))
		return err == nil
	})
}
