package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// maxProblems caps Snapshot.Problems: broken output can reject thousands of
// records each round, and the count says as much as the list.
const maxProblems = 50

// Client reads and acts on Slurm through R. It is safe for concurrent use
// if R is.
type Client struct {
	R Runner
	// Ended: Snapshot lists the jobs that ended within MinJobAge too
	// (squeue -t all), with their final states, so that one snapshot also
	// answers for anchors that were cancelled and for dependencies (gleand).
	Ended bool

	mu      sync.Mutex
	cfg     cluster.SchedConfig
	haveCfg bool
}

// Snapshot observes the cluster with one squeue, one sinfo and one
// scontrol show partition, run concurrently, plus the cached scheduler
// config (read first if the cache is empty). It never returns nil: what
// could not be read or parsed is listed in Problems and makes Complete
// false, and what could be read is kept.
func (c *Client) Snapshot(ctx context.Context, now time.Time) *cluster.Snapshot {
	s := &cluster.Snapshot{Time: now}
	var (
		wg    sync.WaitGroup
		probs [4][]error // one slot per goroutine; each also writes its own field of s
	)
	read := func(slot int, argv []string, parse func(io.Reader) []error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := c.R.Run(ctx, argv)
			if err != nil {
				probs[slot] = []error{commandError(argv, err)}
				return
			}
			probs[slot] = parse(bytes.NewReader(out))
		}()
	}
	seal := NewSeal()
	argv := SqueueArgv(seal)
	if c.Ended {
		argv = SqueueAllArgv(seal)
	}
	read(0, argv, func(r io.Reader) (errs []error) { s.Jobs, errs = ParseSqueue(r, seal); return })
	read(1, SinfoArgv(), func(r io.Reader) (errs []error) { s.Nodes, errs = ParseSinfo(r); return })
	read(2, PartitionsArgv(), func(r io.Reader) (errs []error) { s.Partitions, errs = ParsePartitions(r); return })
	if cfg, ok := c.cachedConfig(); ok {
		s.Config = cfg
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if s.Config, err = c.Config(ctx); err != nil {
				probs[3] = []error{err}
			}
		}()
	}
	wg.Wait()

	var all []error
	for _, p := range probs {
		all = append(all, p...)
	}
	for i, err := range all {
		if i == maxProblems {
			s.Problems = append(s.Problems, fmt.Sprintf("... and %d more problems", len(all)-maxProblems))
			break
		}
		s.Problems = append(s.Problems, err.Error())
	}
	s.Complete = len(all) == 0
	return s
}

// Config reads the scheduler config and caches it for Snapshot. A config
// that could not be read or parsed entirely is returned with the error but
// not cached, so that the next Snapshot tries again.
func (c *Client) Config(ctx context.Context) (cluster.SchedConfig, error) {
	argv := ConfigArgv()
	out, err := c.R.Run(ctx, argv)
	if err != nil {
		return cluster.SchedConfig{}, commandError(argv, err)
	}
	cfg, err := ParseConfig(bytes.NewReader(out))
	if err == nil {
		c.mu.Lock()
		c.cfg, c.haveCfg = cfg, true
		c.mu.Unlock()
	}
	return cfg, err
}

func (c *Client) cachedConfig() (cluster.SchedConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg, c.haveCfg
}

// Submit runs sbatch --parsable with args and returns the new job's id.
// args are passed as they are: the caller builds them.
func (c *Client) Submit(ctx context.Context, args []string) (string, error) {
	argv := append([]string{"sbatch", "--parsable"}, args...)
	out, err := c.R.Run(ctx, argv)
	if err != nil {
		return "", commandError(argv, err)
	}
	return ParseSubmitOutput(out)
}

// ParseSubmitOutput parses what sbatch --parsable prints: "1234" or
// "1234;cluster". It returns the job id.
func ParseSubmitOutput(out []byte) (string, error) {
	s := strings.TrimSpace(string(out))
	id, clusterName, federated := strings.Cut(s, ";")
	if !ValidJobID(id) || strings.Contains(id, "_") ||
		federated && (clusterName == "" || strings.Trim(clusterName, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != "") {
		return "", fmt.Errorf("sbatch: unexpected output %s, want a job id", quote(s))
	}
	return id, nil
}

// ValidJobID reports whether id is a job id ("123") or an array element
// ("123_4"), the only forms glean passes to scancel and scontrol.
func ValidJobID(id string) bool {
	base, task, isTask := strings.Cut(id, "_")
	if !isTask {
		return validID(base)
	}
	_, ok := parseDigits(task, 9)
	return ok && validID(base)
}

// knownSignals are the signal names scancel accepts that glean may send.
var knownSignals = []string{"HUP", "INT", "QUIT", "ABRT", "KILL", "USR1", "USR2", "ALRM", "TERM",
	"CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU"}

// Cancel runs scancel on job id. signal "" cancels the job (CONT, TERM,
// then KILL after KillWait); a name such as "TERM" or "SIGUSR1" only sends
// that signal to every step and the batch shell; "B:TERM" (sbatch's
// --signal notation) sends it to the batch shell alone, which lets a pilot
// drain while the job keeps running. Note that scancel exits 0 for an
// unknown job id (22.05), so no error does not prove the job existed.
func (c *Client) Cancel(ctx context.Context, id, signal string) error {
	if !ValidJobID(id) {
		return fmt.Errorf("scancel: bad job id %s", quote(id))
	}
	argv := []string{"scancel"}
	if signal != "" {
		name, batch := strings.CutPrefix(signal, "B:")
		name = strings.TrimPrefix(name, "SIG")
		if !slices.Contains(knownSignals, name) {
			return fmt.Errorf("scancel: unknown signal %s", quote(signal))
		}
		argv = append(argv, "--signal="+name)
		if batch {
			argv = append(argv, "--batch")
		}
	}
	return c.run(ctx, append(argv, id))
}

// CancelPending cancels the pending elements of a job (an array's
// elements not yet started); running ones go on.
func (c *Client) CancelPending(ctx context.Context, id string) error {
	if !ValidJobID(id) {
		return fmt.Errorf("scancel: bad job id %s", quote(id))
	}
	return c.run(ctx, []string{"scancel", "--state=PENDING", id})
}

// SetTimeLimit sets a job's time limit to d, in whole minutes rounded down.
// Less than a minute is refused, since Slurm would read 0 as no limit. Only
// an operator may raise a limit.
func (c *Client) SetTimeLimit(ctx context.Context, id string, d time.Duration) error {
	if !ValidJobID(id) {
		return fmt.Errorf("scontrol update: bad job id %s", quote(id))
	}
	if d < time.Minute {
		return fmt.Errorf("scontrol update: time limit %v is under one minute", d)
	}
	return c.run(ctx, []string{"scontrol", "update", "JobId=" + id, "TimeLimit=" + FormatTimeLimit(d)})
}

// HoldKind says who may release a hold.
type HoldKind int

const (
	AdminHold HoldKind = iota // scontrol hold: priority 0, only an operator releases it (JobHeldAdmin)
	UserHold                  // scontrol uhold: the owner may release it (JobHeldUser)
)

// Hold keeps a pending job from starting.
func (c *Client) Hold(ctx context.Context, id string, kind HoldKind) error {
	verb := "hold"
	switch kind {
	case AdminHold:
	case UserHold:
		verb = "uhold"
	default:
		return fmt.Errorf("scontrol hold: unknown hold kind %d", kind)
	}
	if !ValidJobID(id) {
		return fmt.Errorf("scontrol %s: bad job id %s", verb, quote(id))
	}
	return c.run(ctx, []string{"scontrol", verb, id})
}

// StartNow lets a pending job start from now: its begin time (sbatch
// --begin) is moved to now. Unlike a release, it keeps the job's place in
// the queue: under priority/basic a release gives the job a new, lowest
// priority, even a job that was not held (measured on Slurm 22.05). An
// array's pending elements all move; the call fails if some element is no
// longer pending.
func (c *Client) StartNow(ctx context.Context, id string) error {
	if !ValidJobID(id) {
		return fmt.Errorf("scontrol update: bad job id %s", quote(id))
	}
	return c.run(ctx, []string{"scontrol", "update", "JobId=" + id, "StartTime=now"})
}

// Release releases a held job, whichever kind of hold it has.
func (c *Client) Release(ctx context.Context, id string) error {
	if !ValidJobID(id) {
		return fmt.Errorf("scontrol release: bad job id %s", quote(id))
	}
	return c.run(ctx, []string{"scontrol", "release", id})
}

func (c *Client) run(ctx context.Context, argv []string) error {
	_, err := c.R.Run(ctx, argv)
	return commandError(argv, err)
}

// commandError makes sure an error names its command; a *CmdError already
// does.
func commandError(argv []string, err error) error {
	var ce *CmdError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("%s: %w", argv[0], err)
}
