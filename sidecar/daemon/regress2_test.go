package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// recNotifier records what the loop tells systemd.
type recNotifier struct {
	mu   sync.Mutex
	msgs []string
}

func (n *recNotifier) Notify(state string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = append(n.msgs, state)
	return nil
}

// Review 2 finding: WATCHDOG=1 comes only from its own ticker (every
// WatchdogSec/2), never when a round ends. A round that starts just before
// a tick delays that ping by its whole length, so systemd sees a gap of
// WatchdogSec/2 + the round (+ more rounds when the select picks tick.C or
// the trigger first), not the round alone: with slurm.timeout = 60 s,
// WorstRound is 195 s < WatchdogSec 300 s (gleand does not warn), yet a
// silent slurmctld can leave 150 + 195 = 345 s between pings and systemd
// kills a working daemon. A round that ended proves the loop alive: it
// should ping (with its STATUS=), so that the gap is at most one round.
// Here the ticker is an hour: each finished round must still ping.
func TestLoopPingsWhenARoundEnds(t *testing.T) {
	fx := newFixture(t)
	n := &recNotifier{}
	rounds := make(chan struct{}, 1024)
	l := &Loop{Intake: fx.in, Spool: fx.s, Rescan: 20 * time.Millisecond, Log: fx.in.log,
		Notify: n, Watchdog: time.Hour,
		OnRound: func(Stats, error) { rounds <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = l.Run(ctx); close(stopped) }()
	deadline := time.After(20 * time.Second)
	for i := 0; i < 3; i++ {
		select {
		case <-rounds:
		case <-deadline:
			cancel()
			t.Fatal("no 3 rounds within 20 s")
		}
	}
	cancel()
	<-stopped
	n.mu.Lock()
	defer n.mu.Unlock()
	status, pings := 0, 0
	for _, m := range n.msgs {
		if strings.Contains(m, "STATUS=") {
			status++
		}
		if strings.Contains(m, "WATCHDOG=1") {
			pings++
		}
	}
	if status < 3 || pings < status {
		t.Errorf("%d rounds reported (STATUS=), %d WATCHDOG=1: a finished round does not refresh the watchdog; messages %q",
			status, pings, n.msgs)
	}
}

// Review 2 finding: completeMove's move-back case puts the old record
// (its entry active again) and then its control file, in two writes. A
// daemon that dies between them (the watchdog, an OOM kill, a failed
// control write) leaves A's control file saying "p1 moved to B" while B's
// entry says "moved to A". After the restart completeMoves redoes B's
// move, finds A's entry already active (MovedTo "") and skips A's control
// file: the agent is sent A -> B -> A ... forever without a task, while
// the policy counts p1 as A's pilot. Nothing else rewrites A's control
// file until A retires a pilot or ends.
func TestMoveBackRestartRewritesControl(t *testing.T) {
	fx, pl := newPool(t, map[string]string{"p1": "n1"})
	na, nb, rs, x := pl.na, pl.nb, pl.rs, pl.newX()
	ra, rb := pl.moveP1(t, fx, x)
	// The move back, as completeMove does it, up to the crash: B marked
	// (movePilot), A's entry active again and put; A's control not yet
	// rewritten.
	pilotOf(rb, "p1").MovedTo = na
	if err := rs.Put(rb); err != nil {
		t.Fatal(err)
	}
	pilotOf(ra, "p1").MovedTo = ""
	if err := rs.Put(ra); err != nil {
		t.Fatal(err)
	}
	// The restart: this daemon has completed no move yet.
	x.moved = nil
	x.completeMoves([]string{na, nb})
	wa, err := fx.s.OpenWork(fx.uid, pl.a)
	if err != nil {
		t.Fatal(err)
	}
	c, err := wa.Control()
	if err != nil {
		t.Fatal(err)
	}
	if to, ok := c.Move["p1"]; ok {
		t.Errorf("after the restart A's control file still sends p1 to %s, and B's sends it back to A", to)
	}
}

// Review 2 finding: finish now retries its own failed scancels (Cause
// job-ended) but not a pending pilot's give-way cancel that failed
// (recorded Cancelled with cause give-way before the scancel, which a
// stall or a busy slurmctld then skipped). While the job runs the
// policy's pending timeout catches such a pilot; once the job has ended
// the policy no longer sees it and finish skips it for its cause: it
// stays queued until Slurm starts it (its agent then stops at once), and
// the record is followed every round meanwhile.
func TestFinishCancelsAGiveWayPilotLeftPending(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 4)
	x, _ := modelExecutor(fx, m, m, 10*time.Second)
	e := fx.submit(t, 8, nil)
	m.round(t, fx.in, x)
	r := fx.record(e)
	if len(r.PilotJobs) == 0 {
		t.Fatal("no pilots submitted")
	}
	// The give-way cancel of the first (pending) pilot was recorded, and
	// its scancel skipped (errStalled) or failed.
	gave := r.PilotJobs[0].ID
	r.PilotJobs[0].Cancelled, r.PilotJobs[0].Cause = true, policy.CauseGiveWay.String()
	if err := fx.in.records.Put(r); err != nil {
		t.Fatal(err)
	}
	fx.finishTasks(t, e.ID, 8, "77")
	var asked []string
	for i := 0; i < 2; i++ {
		fx.now = fx.now.Add(time.Second)
		_, helper := m.round(t, fx.in, x)
		asked = append(asked, helper...)
	}
	if fx.record(e).State != spool.StateDone {
		t.Fatalf("state %s, want done", fx.record(e).State)
	}
	if !slices.Contains(asked, "cancel-pilot "+gave) {
		t.Errorf("the ended job's pending pilot %s (give-way cancel failed) is never cancelled: helper %q", gave, asked)
	}
}

// failingSignal is the model's helper whose signal-pilot fails while fail
// is set (errStalled: an earlier call of the round, the intake's hold
// included, failed slowly).
type failingSignal struct {
	*slurmModel
	fail bool
}

func (f *failingSignal) SignalPilot(ctx context.Context, record, id string) error {
	if f.fail {
		f.ask("signal-pilot-skipped", id)
		return errStalled
	}
	return f.slurmModel.SignalPilot(ctx, record, id)
}

// Review 2 finding: a give-way signal that the round's stall skipped (or
// that failed) is recorded as sent (Cancelled, Signalled) and never tried
// again: the next rounds skip the pilot ("leaving already") until escalate
// scancels it a grace plus a margin later. The pilot's agent never hears
// of the give-way, so its tasks get no checkpoint time of their own
// (scancel: Slurm's KillWait only), and the regular job waits the whole
// grace for nothing. Now that the intake's slow hold stalls the executor
// too, one hung hold does this to every give-way of the round.
func TestGiveWaySignalRetriedAfterAStall(t *testing.T) {
	fx := newFixture(t)
	m := newModel(t, fx, 4)
	act := &failingSignal{slurmModel: m}
	x, _ := modelExecutor(fx, m, act, time.Minute)
	e := fx.submit(t, 40, nil)
	m.round(t, fx.in, x)
	for _, p := range fx.record(e).PilotJobs {
		m.start(p.ID)
	}
	m.regular["800"] = 4
	act.fail = true
	fx.now = fx.now.Add(time.Second)
	_, helper := m.round(t, fx.in, x)
	if !slices.ContainsFunc(helper, func(s string) bool { return strings.HasPrefix(s, "signal-pilot-skipped ") }) {
		t.Fatalf("give-way round: helper %q, want skipped signals", helper)
	}
	act.fail = false
	fx.now = fx.now.Add(time.Second)
	_, helper = m.round(t, fx.in, x)
	if !slices.ContainsFunc(helper, func(s string) bool { return strings.HasPrefix(s, "signal-pilot ") }) {
		t.Errorf("the round after the skipped give-way signals: helper %q, want the pilots signalled", helper)
	}
}

// modelExecutor is an executor on the Slurm model m (its snapshots) acting
// through act, scavenger by default, with a policy of this grace.
func modelExecutor(fx *fixture, m *slurmModel, act Actor, grace time.Duration) (*Executor, policy.Config) {
	pc := policy.DefaultConfig()
	pc.PilotPartition = "pilot"
	pc.Grace = grace
	pc.MinPilotTime = time.Minute
	x := NewExecutor(ExecOptions{Spool: fx.s, Policy: pc, DefaultMode: policy.Scavenger, Retries: 2, HeartbeatTimeout: time.Minute,
		PilotPartition: "pilot"}, fx.in, fx.in.records, act, &slurm.Client{R: m, Ended: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return x, pc
}

// Privileged calls that succeed slowly (a loaded slurmctld) stop for the
// round once they took roundBudget in all, so that a round stays within
// WorstRound and the watchdog; a slow failure stops them at once.
func TestStallBudget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		each      time.Duration
		fail      bool
		wantCalls int
	}{
		{"fast calls", 10 * time.Millisecond, false, 100},
		{"slow successes", 2 * time.Second, false, 30}, // 30 x 2 s = the 1-minute budget
		{"a slow failure", 6 * time.Second, true, 1},
		{"quick failures", time.Second, true, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			s := &stall{clock: func() time.Time { return now }}
			calls := 0
			for i := 0; i < 100; i++ {
				err := s.call(func() error {
					calls++
					now = now.Add(tc.each)
					if tc.fail {
						return errors.New("slurm_load_jobs error: Socket timed out")
					}
					return nil
				})
				if calls < i+1 && !errors.Is(err, errStalled) {
					t.Fatalf("call %d skipped with %v, want errStalled", i, err)
				}
			}
			if calls != tc.wantCalls {
				t.Errorf("%d calls reached Slurm, want %d", calls, tc.wantCalls)
			}
		})
	}
	if w := WorstRound(30 * time.Second); w >= 5*time.Minute {
		t.Errorf("WorstRound at the default timeout is %v, not under the unit's WatchdogSec=5min", w)
	}
}
