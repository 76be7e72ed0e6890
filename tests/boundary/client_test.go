package boundary

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/slurm"
)

// The client's actions against the real controller: submit, reduce a time
// limit, hold and release, cancel with a signal; and a rejection carries
// the exit code and Slurm's message.
func TestClientActions(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	cli := client(c)

	id, err := cli.Submit(ctx, []string{"-N1", "-t", "10", "-J", "actions", "--wrap", "trap 'exit 0' USR1; sleep 300 & wait"})
	if err != nil || !slurm.ValidJobID(id) {
		t.Fatalf("submit: %q, %v", id, err)
	}
	c.WaitFor(t, 30*time.Second, "job running", func() bool { return c.JobField(t, id, "%T") == "RUNNING" })
	if err := cli.SetTimeLimit(ctx, id, 4*time.Minute+30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.JobField(t, id, "%l"); got != "4:00" {
		t.Fatalf("time limit after reduction to 4m30s = %s, want 4:00 (whole minutes, rounded down)", got)
	}
	// A signal reaches the batch script, which exits 0 on USR1.
	if err := cli.Cancel(ctx, id, "B:USR1"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(t, 30*time.Second, "job ended by its USR1 trap", func() bool { return c.JobField(t, id, "%T") == "" })
	if st := jobState(t, c.Run(t, "scontrol", "-o", "show", "job", id)); st != "COMPLETED" {
		t.Fatalf("job ended %s, want COMPLETED (it exits 0 on USR1)", st)
	}

	held, err := cli.Submit(ctx, []string{"-H", "-J", "held", "--wrap", "true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(t, 30*time.Second, "released job to finish", func() bool { return c.JobField(t, held, "%T") == "" })

	bad, err := cli.Submit(ctx, []string{"-p", "nosuchpart", "-J", "rejected", "--wrap", "true"})
	if err == nil {
		t.Fatalf("a job for a missing partition was accepted as %s", bad)
	}
	var ce *slurm.CmdError
	if !errors.As(err, &ce) || ce.ExitCode != 1 || !strings.Contains(ce.Stderr, "Invalid partition name specified") {
		t.Fatalf("rejection = %v, want exit 1 with Slurm's reason", err)
	}

	other, err := cli.Submit(ctx, []string{"-N1", "-t", "10", "-J", "hold", "--wrap", "sleep 300", "--begin", "now+1hour"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Hold(ctx, other, slurm.AdminHold); err != nil {
		t.Fatal(err)
	}
	if r := c.JobField(t, other, "%r"); r != "JobHeldAdmin" {
		t.Fatalf("after admin hold, reason %s", r)
	}
	if err := cli.Cancel(ctx, other, ""); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(t, 30*time.Second, "cancelled job gone", func() bool { return c.JobField(t, other, "%T") == "" })
}

func jobState(t *testing.T, show string) string {
	t.Helper()
	for _, f := range strings.Fields(show) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v
		}
	}
	t.Fatalf("no JobState in %q", show)
	return ""
}
