// Package pilotqueue checks on the loopback Slurm 22.05 what the simulator's
// Slurm-like model assumes about node releases and pending pilots:
//
//   - a running job shrunk with `scontrol update JobId= NumNodes=` gives its
//     node to a waiting job at the main scheduler's next run, as a job's end
//     does (_slurm_rpc_update_job calls queue_job_scheduler), not at its next
//     full run (sched_interval);
//   - a pilot queued in advance (pilot partition, PriorityTier 1, pinned with
//     --nodelist) to a node that frees is started by the main scheduler only
//     if no higher-tier job is left pending by that run: a pending job of the
//     batch partition that does not fit takes the partition's nodes (all of
//     them, here) out of that run (schedule() in job_scheduler.c: failed
//     partitions, avail_node_bitmap); a pending job pinned with --nodelist
//     takes out only its own nodes.
//
// The cluster runs the main scheduler's full pass only every 10 minutes and
// backfill every 10 minutes, so that whatever starts within a test started
// by the event-driven main scheduler (the log says which scheduler started
// each job).
package pilotqueue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/tests/slurmtest"
)

var cl *slurmtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(slurmtest.Main(m, slurmtest.Options{Nodes: 2, BFInterval: 600, SchedInterval: 600}, &cl))
}

// job is one submission of a scenario.
type job struct {
	name string
	args []string // sbatch options besides -J and --wrap
}

var (
	holdC1  = job{"R1", []string{"-p", "batch", "-N1", "-w", "c1", "-t", "10"}}
	holdC2  = job{"R2", []string{"-p", "batch", "-N1", "-w", "c2", "-t", "10"}}
	holdAll = job{"R", []string{"-p", "batch", "-N2", "-t", "10"}}
	pilotC1 = job{"P", []string{"-p", "pilot", "-N1", "-w", "c1", "-t", "2"}}
)

func TestNodeRelease(t *testing.T) {
	slurmtest.Need(t, cl)
	for _, tc := range []struct {
		name    string
		running []job    // started first, each waited for
		pending []job    // then submitted, in this order
		release []string // what frees a node: scancel R1, or the shrink of R
		starts  []string // jobs the main scheduler starts after the release
		waits   []string // jobs still pending once it has run twice
	}{
		{
			name:    "no regular job waits: the pilot starts",
			running: []job{holdC1, holdC2},
			pending: []job{pilotC1},
			release: []string{"scancel", "R1"},
			starts:  []string{"P"},
		},
		{
			name:    "a regular job that fits takes the node",
			running: []job{holdC1, holdC2},
			pending: []job{{"H", []string{"-p", "batch", "-N1", "-t", "5"}}, pilotC1},
			release: []string{"scancel", "R1"},
			starts:  []string{"H"},
			waits:   []string{"P"},
		},
		{
			name:    "a regular job that does not fit blocks the pilot",
			running: []job{holdC1, holdC2},
			pending: []job{{"H", []string{"-p", "batch", "-N2", "-t", "5"}}, pilotC1},
			release: []string{"scancel", "R1"},
			waits:   []string{"H", "P"},
		},
		{
			name:    "a regular job pinned to another node does not block the pilot",
			running: []job{holdC1, holdC2},
			pending: []job{{"H", []string{"-p", "batch", "-N1", "-w", "c2", "-t", "5"}}, pilotC1},
			release: []string{"scancel", "R1"},
			starts:  []string{"P"},
			waits:   []string{"H"},
		},
		{
			name:    "a shrink frees a node at once",
			running: []job{holdAll},
			pending: []job{{"H", []string{"-p", "batch", "-N1", "-t", "5"}}},
			release: []string{"shrink", "R"},
			starts:  []string{"H"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl.CancelAll(t)
			ids := map[string]string{}
			submit := func(j job) {
				ids[j.name] = cl.Submit(t, append(append([]string{}, j.args...), "-J", j.name, "-o", "/dev/null", "--wrap", "sleep 600")...)
			}
			for _, j := range tc.running {
				submit(j)
				cl.WaitFor(t, 30*time.Second, j.name+" running", func() bool { return cl.JobField(t, ids[j.name], "%T") == "RUNNING" })
			}
			for _, j := range tc.pending {
				submit(j)
			}
			// The submissions' own main-scheduler run left them pending.
			runs := mainCycles(t)
			cl.WaitFor(t, 30*time.Second, "a main scheduler run after the submissions", func() bool { return mainCycles(t) > runs })
			for _, j := range tc.pending {
				if st := cl.JobField(t, ids[j.name], "%T"); st != "PENDING" {
					t.Fatalf("%s is %s before the release", j.name, st)
				}
			}

			runs = mainCycles(t)
			released := time.Now()
			switch tc.release[0] {
			case "scancel":
				cl.Run(t, "scancel", ids[tc.release[1]])
			case "shrink":
				cl.Run(t, "scontrol", "update", "JobId="+ids[tc.release[1]], "NumNodes=1")
			}
			for _, name := range tc.starts {
				cl.WaitFor(t, 20*time.Second, name+" running", func() bool { return cl.JobField(t, ids[name], "%T") == "RUNNING" })
				after := time.Since(released)
				if by := startedBy(t, ids[name]); by != "sched" {
					t.Errorf("%s started by %q, want the main scheduler", name, by)
				}
				t.Logf("%s started %.1f s after the release, on %s, by the main scheduler", name, after.Seconds(), cl.JobField(t, ids[name], "%N"))
			}
			// One more run once the node is free for certain (the released
			// job no longer completing): a submission asks for one.
			cl.WaitFor(t, 30*time.Second, "the release done", func() bool {
				st := cl.JobField(t, ids[tc.release[1]], "%T")
				return st != "COMPLETING" && (tc.release[0] == "scancel" || cl.JobField(t, ids[tc.release[1]], "%D") == "1")
			})
			runs = mainCycles(t)
			cl.Submit(t, "-H", "-J", "nudge", "-o", "/dev/null", "--wrap", "true")
			cl.WaitFor(t, 30*time.Second, "a main scheduler run after the release", func() bool { return mainCycles(t) > runs })
			for _, name := range tc.waits {
				if st := cl.JobField(t, ids[name], "%T"); st != "PENDING" {
					t.Errorf("%s is %s after the release, want PENDING (started by %q)", name, st, startedBy(t, ids[name]))
				}
			}
			t.Logf("still pending: %v (reasons: %s)", tc.waits, reasons(t, ids, tc.waits))
		})
	}
}

func mainCycles(t *testing.T) int { t.Helper(); return cl.MainCycles(t) }

// startedBy says which scheduler started job id, from slurmctld's log:
// "sched" (the main scheduler), "backfill", or "".
func startedBy(t *testing.T, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cl.Dir, "log", "slurmctld.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, "sched: Allocate JobId="+id+" "):
			return "sched"
		case strings.Contains(line, "sched/backfill: _start_job: Started JobId="+id+" "):
			return "backfill"
		}
	}
	return ""
}

func reasons(t *testing.T, ids map[string]string, names []string) string {
	t.Helper()
	var out []string
	for _, n := range names {
		out = append(out, n+"="+cl.JobField(t, ids[n], "%r"))
	}
	return strings.Join(out, " ")
}
