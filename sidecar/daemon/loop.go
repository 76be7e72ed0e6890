package daemon

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Loop runs rounds: on every tick (the periodic rescan, which alone keeps
// the system correct: fsnotify misses writes from other NFS clients and can
// overflow) and whenever the trigger fires. One goroutine, one select.
type Loop struct {
	Intake   *Intake
	Exec     *Executor // nil: intake only
	Spool    *spool.Spool
	Interval time.Duration // one round per interval (one scheduling cycle); 0: Rescan
	Rescan   time.Duration
	Watch    bool // use fsnotify as well
	// MinGap spaces the rounds a trigger (a spool event) starts: one
	// coming sooner after the last round waits for the rest of the gap,
	// so that a user writing into the spool cannot drive back-to-back
	// rounds. 0: DefaultMinGap, at most one interval.
	MinGap  time.Duration
	Log     *slog.Logger
	Now     func() time.Time
	OnRound func(Stats, error) // for tests; may be nil
	OnExec  func(ExecStats, error)
	// OnReport gets every round's outcome (sidecar/metrics); may be nil.
	OnReport func(RoundReport)
	// Started is when the process started: the first round logs how long
	// after it ended (a restart's time to recover).
	Started time.Time
	// Notify tells the service manager how the loop is doing
	// (sidecar/sdnotify under systemd; nil: nobody): READY=1 when the
	// first round has observed (the spool recovered, Slurm read or found
	// silent), a STATUS= line after every round, STOPPING=1 when ctx ends.
	Notify Notifier
	// Watchdog: send WATCHDOG=1 this often (half the unit's WatchdogSec;
	// 0: never). The ping has its own case in the loop's select, so a
	// daemon backing off from a silent slurmctld keeps pinging, and only a
	// round stuck for WatchdogSec (longer than its Slurm timeouts allow,
	// WorstRound) stops it.
	Watchdog time.Duration
	// Reload delivers reload requests (SIGHUP), handled between rounds by
	// Reloader (nil: no reloads): see reload.
	Reload   <-chan os.Signal
	Reloader Reloader

	trigger chan struct{}
	refused string // the last refused reload, for every later STATUS=
}

// DefaultMinGap is Loop.MinGap's default.
const DefaultMinGap = time.Second

// Trigger asks for a round now; bursts collapse into one.
func (l *Loop) Trigger() {
	select {
	case l.trigger <- struct{}{}:
	default:
	}
}

// Run runs until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	l.trigger = make(chan struct{}, 1)
	if l.Now == nil {
		l.Now = time.Now
	}
	var w *watcher
	if l.Watch {
		var err error
		if w, err = newWatcher(l.Spool, l.Trigger, l.Log); err != nil {
			l.Log.Warn("fsnotify unavailable; rescanning only", "err", err)
		} else {
			defer w.close()
		}
	}
	every := l.Rescan
	if l.Interval > 0 && l.Interval < every {
		every = l.Interval
	}
	gap := l.MinGap
	if gap <= 0 {
		gap = DefaultMinGap
	}
	gap = min(gap, every)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var ping <-chan time.Time
	if l.Watchdog > 0 && l.Notify != nil {
		wd := time.NewTicker(l.Watchdog)
		defer wd.Stop()
		ping = wd.C
	}
	l.Trigger() // a first round at once
	var (
		back    backoff
		last    time.Time        // when the last round started
		delayed <-chan time.Time // a triggered round waiting for the gap
		ready   bool             // READY=1 sent
	)
	for {
		select {
		case <-ctx.Done():
			l.notify(sdStopping)
			return nil
		case <-ping:
			l.notify(sdWatchdog)
			continue
		case <-l.Reload:
			if l.Reloader == nil {
				continue
			}
			if err := l.reload(l.Now()); err != nil {
				return err
			}
			continue
		case <-tick.C:
		case <-l.trigger:
			if wait := gap - l.Now().Sub(last); !last.IsZero() && wait > 0 {
				if delayed == nil {
					delayed = time.After(wait)
				}
				continue
			}
		case <-delayed:
		}
		delayed = nil
		if w != nil {
			w.addUsers() // new users' incoming directories
		}
		now := l.Now()
		if now.Before(back.until) {
			continue // Slurm is not answering: ask less often
		}
		last = now
		if ping != nil {
			// A round starting is the loop alive too: with the ping at its
			// end, the longest gap is one round (WorstRound), whatever the
			// ticker's phase.
			l.notify(sdWatchdog)
		}
		// One observation of Slurm for the whole round, taken when first
		// needed.
		var (
			st  Stats
			err error
			obs *Observation
		)
		if l.Exec != nil {
			obs = NewObservation(now, l.Exec.Snapshotter())
			st, err = l.Intake.Observe(ctx, obs)
		} else {
			st, err = l.Intake.Round(ctx, now)
		}
		if err != nil {
			l.Log.Warn("intake round", "err", err)
		}
		slurmDown := err != nil && !errors.Is(err, context.Canceled)
		var xs ExecStats
		if l.Exec != nil {
			if ping != nil {
				// Between the round's two long phases: one datagram.
				l.notify(sdWatchdog)
			}
			var xerr error
			xs, xerr = l.Exec.Observe(ctx, obs)
			if xerr != nil {
				l.Log.Warn("execution round", "err", xerr)
			}
			slurmDown = slurmDown || xs.SlurmDown
			if l.OnExec != nil {
				l.OnExec(xs, xerr)
			}
		}
		d, changed := back.next(slurmDown, every, now)
		if changed {
			if d > 0 {
				l.Log.Warn("Slurm is not answering; backing off", "next_round_in", d)
			} else {
				l.Log.Info("Slurm answers again")
			}
		}
		if l.OnReport != nil { // before the status line, so that metrics are never behind it
			l.OnReport(RoundReport{At: now, Took: l.Now().Sub(now), Intake: st, Exec: xs, SlurmDown: slurmDown,
				Active: l.Intake.Active()})
		}
		if l.Notify != nil {
			line := statusLine(now, l.Now().Sub(now), st, xs, d, l.Intake.Active())
			if l.refused != "" {
				line += "; " + l.refused
			}
			if !ready {
				line = sdReady + "\n" + line
				ready = true
			}
			if ping != nil {
				// A round that ends is the loop alive: without this, a
				// round begun just before the ticker's ping delayed it by
				// the whole round.
				line += "\n" + sdWatchdog
			}
			l.notify(line)
		}
		if l.OnRound != nil {
			l.OnRound(st, err)
		}
		if !l.Started.IsZero() {
			l.Log.Info("first round done", "since_start", l.Now().Sub(l.Started))
			l.Started = time.Time{}
		}
	}
}

// RoundReport is one round's outcome.
type RoundReport struct {
	At        time.Time
	Took      time.Duration
	Intake    Stats
	Exec      ExecStats
	SlurmDown bool // Slurm did not answer (whole): the loop backs off
	Active    int  // elastic jobs not ended
}

// backoff spaces the rounds while Slurm does not answer: one interval,
// doubling up to maxBackoff (or ceiling, if set); the first answer resets
// it. The spool and `glean status` (which reads the spool) are
// unaffected. The holds on pilots that die at start use it too.
type backoff struct {
	delay   time.Duration
	until   time.Time
	ceiling time.Duration // 0: maxBackoff
}

const maxBackoff = 30 * time.Second

// next records a round's outcome and returns the new delay and whether it
// changed from none to some or back.
func (b *backoff) next(failed bool, interval time.Duration, now time.Time) (time.Duration, bool) {
	was := b.delay > 0
	if !failed {
		b.delay, b.until = 0, time.Time{}
		return 0, was
	}
	b.delay = min(max(2*b.delay, interval), cmp.Or(b.ceiling, maxBackoff))
	b.until = now.Add(b.delay)
	return b.delay, !was
}

// watcher feeds fsnotify events on users/ and every users/<uid>/incoming
// into the trigger. It only watches directories it checked to be real
// directories owned by their uid; events are wake-ups, never data.
type watcher struct {
	w     *fsnotify.Watcher
	spool *spool.Spool
	// watched: the incoming directories watched, by uid, each through
	// the descriptor it was checked on (/proc/self/fd/<n>), kept open.
	// Its path could lead onto a mount the user made there since (a FUSE
	// server that never answers would block the watch, and the round).
	watched map[int]*os.File
	log     *slog.Logger
	done    chan struct{}
}

func newWatcher(s *spool.Spool, trigger func(), log *slog.Logger) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{w: fw, spool: s, watched: map[int]*os.File{}, log: log, done: make(chan struct{})}
	if err := fw.Add(filepath.Join(s.Dir, spool.UsersDir)); err != nil {
		fw.Close()
		return nil, err
	}
	go func() {
		defer close(w.done)
		for {
			select {
			case _, ok := <-fw.Events:
				if !ok {
					return
				}
				trigger()
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				log.Warn("fsnotify", "err", err) // an overflow: the rescan catches up
				trigger()
			}
		}
	}()
	w.addUsers()
	return w, nil
}

func (w *watcher) addUsers() {
	uids := w.spool.UserIDs()
	for uid, d := range w.watched {
		if _, ok := slices.BinarySearch(uids, uid); !ok { // users/<uid> is gone
			w.unwatch(uid, d)
		}
	}
	for _, uid := range uids {
		if d := w.watched[uid]; d != nil {
			// A directory removed (and perhaps made again) sends no
			// event while its descriptor is open: its link count says.
			var st syscall.Stat_t
			if syscall.Fstat(int(d.Fd()), &st) == nil && st.Nlink > 0 {
				continue
			}
			w.unwatch(uid, d)
		}
		d, err := w.spool.OpenIncoming(uid)
		if err != nil {
			continue // the round's scan says why
		}
		if err := w.w.Add("/proc/self/fd/" + strconv.Itoa(int(d.Fd()))); err != nil {
			d.Close()
			w.log.Debug("watch", "uid", strconv.Itoa(uid), "err", err)
			continue
		}
		w.watched[uid] = d
	}
}

func (w *watcher) unwatch(uid int, d *os.File) {
	_ = w.w.Remove("/proc/self/fd/" + strconv.Itoa(int(d.Fd())))
	d.Close()
	delete(w.watched, uid)
}

func (w *watcher) close() {
	w.w.Close()
	<-w.done
	for _, d := range w.watched {
		d.Close()
	}
}
