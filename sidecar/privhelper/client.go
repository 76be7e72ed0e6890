package privhelper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Client asks the helper over its socket. It implements gleand's
// daemon.Privileged (Hold, Cancel) and Release.
type Client struct {
	Socket  string
	Timeout time.Duration // per request, dial to answer; DefaultTimeout if zero
}

// DefaultTimeout bounds one request when Client.Timeout is zero; the
// helper runs squeue and then scontrol or scancel.
const DefaultTimeout = 75 * time.Second

// Hold puts job id on an admin hold.
func (c *Client) Hold(ctx context.Context, id string) error {
	return c.Do(ctx, Request{Op: OpHold, Job: id})
}

// Release releases job id's hold.
func (c *Client) Release(ctx context.Context, id string) error {
	return c.Do(ctx, Request{Op: OpRelease, Job: id})
}

// StartShadow lets shadow array id start from now, in its place in the
// queue.
func (c *Client) StartShadow(ctx context.Context, id string) error {
	return c.Do(ctx, Request{Op: OpStartShadow, Job: id})
}

// Cancel cancels job id (every array element).
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.Do(ctx, Request{Op: OpCancel, Job: id})
}

// CancelPending cancels a shadow array's pending elements.
func (c *Client) CancelPending(ctx context.Context, id string) error {
	return c.Do(ctx, Request{Op: OpCancelPending, Job: id})
}

// SubmitPilots submits pilots that record (jobs/<uid>.<id>) holds as
// intents, by their tokens (at most MaxPilotsPerRequest), and returns
// their job ids in the same order: "" for one whose sbatch failed, the
// error then says why. The helper takes each pilot's node and time limit
// from the record, not from the request.
func (c *Client) SubmitPilots(ctx context.Context, record string, intents []spool.PilotJob) ([]string, error) {
	tokens := make([]string, len(intents))
	for i, p := range intents {
		tokens[i] = p.Token
	}
	jobs, err := c.Ask(ctx, Request{Op: OpSubmitPilots, Record: record, Tokens: tokens})
	if len(jobs) != len(tokens) {
		if err == nil {
			err = fmt.Errorf("privileged helper (%s): submit-pilots: %d ids for %d tokens", c.Socket, len(jobs), len(tokens))
		}
		jobs = make([]string, len(tokens))
	}
	return jobs, err
}

// CancelPilot cancels pilot id of record (TERM to all, KILL after KillWait).
func (c *Client) CancelPilot(ctx context.Context, record, id string) error {
	return c.Do(ctx, Request{Op: OpCancelPilot, Record: record, Job: id})
}

// SignalPilot sends TERM to pilot id's batch shell (its agent) alone: the
// agent stops its tasks within the grace, hands them back and exits.
func (c *Client) SignalPilot(ctx context.Context, record, id string) error {
	return c.Do(ctx, Request{Op: OpSignalPilot, Record: record, Job: id})
}

// CancelPendingPilot cancels pilot id of record only if it is still
// pending (one that started meanwhile goes on).
func (c *Client) CancelPendingPilot(ctx context.Context, record, id string) error {
	return c.Do(ctx, Request{Op: OpCancelPendingPilot, Record: record, Job: id})
}

// Do sends one request and waits for its answer. A refusal is a
// *Refusal (IsRefusal); every error names the helper, the op and the job.
func (c *Client) Do(ctx context.Context, req Request) error {
	_, err := c.Ask(ctx, req)
	return err
}

// Ask is Do, returning the job ids the answer carries (submit-pilots),
// also with an error when some failed.
func (c *Client) Ask(ctx context.Context, req Request) ([]string, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wrap := func(err error) error {
		return fmt.Errorf("privileged helper (%s): %s %s%s: %w", c.Socket, req.Op, req.Job, req.Record, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return nil, wrap(fmt.Errorf("%w (is glean-helper running?)", err))
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, wrap(err)
	}
	// A helper that refuses may answer and close before reading all of
	// the request: its answer, if any, says more than the write error.
	_, werr := conn.Write(append(data, '\n'))
	line, err := readLine(conn, MaxResponseBytes)
	if err != nil && werr != nil {
		return nil, wrap(werr)
	}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			cause := ctx.Err()
			if cause == nil {
				cause = context.DeadlineExceeded // the connection's deadline is the context's
			}
			return nil, wrap(fmt.Errorf("no answer within %v: %w", timeout, cause))
		}
		return nil, wrap(fmt.Errorf("bad answer: %w", err))
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, wrap(fmt.Errorf("bad answer: %w", err))
	}
	switch {
	case resp.OK:
		return resp.Jobs, nil
	case resp.Refused:
		return nil, wrap(&Refusal{Reason: resp.Error})
	default:
		return resp.Jobs, wrap(fmt.Errorf("failed: %s", resp.Error))
	}
}

// RequestTimeout is how long the helper gives one request when each Slurm
// command may take slurmTimeout (it runs squeue, then scontrol or
// scancel). The client should wait a little longer, to read the answer.
func RequestTimeout(slurmTimeout time.Duration) time.Duration {
	return 2*slurmTimeout + 10*time.Second
}
