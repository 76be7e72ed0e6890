package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/policy"
	"github.com/glean-hpc/glean/sidecar/slurm"
)

// Showbf prints the backfill windows of a partition: per node how long it is
// free before a running job ends or a pending job's reservation needs it,
// and the list "k nodes for t, starting now" (what Moab's showbf shows and
// Slurm has no command for).
func Showbf(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("glean showbf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		part    string
		asJSON  bool
		timeout time.Duration
	)
	fs.StringVar(&part, "p", "", "partition (default: the cluster's default partition)")
	fs.StringVar(&part, "partition", "", "partition (default: the cluster's default partition)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "time limit for each Slurm command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "glean showbf: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	// Slurm's clients retry a missing config for a minute: say so at once.
	if conf := os.Getenv("SLURM_CONF"); conf != "" {
		if _, err := os.Stat(conf); err != nil {
			fmt.Fprintf(stderr, "glean showbf: SLURM_CONF=%s: %v; point it at the cluster's slurm.conf\n", conf, err)
			return 1
		}
	}
	client := &slurm.Client{R: &slurm.Exec{Timeout: timeout}}
	now := time.Now()
	snap := client.Snapshot(ctx, now)
	if len(snap.Partitions) == 0 && !snap.Complete {
		for _, p := range snap.Problems {
			fmt.Fprintf(stderr, "glean showbf: cannot read the cluster: %s\n", p)
		}
		return 1
	}
	if part != "" && snap.Partition(part) == nil {
		var names []string
		for _, p := range snap.Partitions {
			names = append(names, p.Name)
		}
		fmt.Fprintf(stderr, "glean showbf: -p %s: no such partition (the cluster has: %s)\n", part, strings.Join(names, ", "))
		return 2
	}
	w, err := policy.BackfillWindows(snap, now, policy.WindowOptions{Partition: part})
	if err != nil {
		fmt.Fprintf(stderr, "glean showbf: %v\n", err)
		for _, p := range snap.Problems {
			fmt.Fprintf(stderr, "glean showbf: %s\n", p)
		}
		return 1
	}
	if asJSON {
		return writeJSON(stdout, stderr, showbfJSON(snap, w))
	}
	writeShowbf(stdout, snap, w)
	if !snap.Complete {
		for _, p := range snap.Problems {
			fmt.Fprintf(stderr, "glean showbf: warning: %s\n", p)
		}
		return 1
	}
	return 0
}

func writeShowbf(out io.Writer, snap *cluster.Snapshot, w policy.Windows) {
	fmt.Fprintf(out, "partition %s at %s (one scheduling cycle: bf_interval=%s)\n\n",
		w.Partition, w.Now.Format(time.RFC3339), snap.Config.BackfillInterval)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tFREE_FOR\tFREE_AT\tUNTIL\tCLAIMED_BY")
	for _, n := range w.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, n.State, policy.FormatDuration(n.FreeFor),
			clock(n.FreeAt, "never"), clock(n.Until, "-"), dash(n.ClaimedBy))
	}
	tw.Flush()
	fmt.Fprintln(out, "\nwindows starting now:")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODES\tDURATION\t")
	for _, win := range w.Windows {
		fmt.Fprintf(tw, "%d\t%s\t\n", win.Nodes, policy.FormatDuration(win.Duration))
	}
	if len(w.Windows) == 0 {
		fmt.Fprintln(tw, "0\t-\t")
	}
	tw.Flush()
}

func clock(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return t.Format("2006-01-02T15:04:05")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// seconds renders a duration for JSON: whole seconds, -1 for unlimited.
func seconds(d time.Duration) int64 {
	if d == cluster.Unlimited {
		return -1
	}
	return int64(d / time.Second)
}

func epoch(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

type showbfNode struct {
	Node      string `json:"node"`
	State     string `json:"state"`
	FreeFor   int64  `json:"free_for_s"` // -1 = unlimited
	FreeAt    int64  `json:"free_at"`    // epoch; 0 = never
	Until     int64  `json:"until"`      // epoch; 0 = no claim
	ClaimedBy string `json:"claimed_by,omitempty"`
}

type showbfWindow struct {
	Nodes    int   `json:"nodes"`
	Duration int64 `json:"duration_s"` // -1 = unlimited
}

type showbfOut struct {
	Partition  string         `json:"partition"`
	Now        int64          `json:"now"`
	BFInterval int64          `json:"bf_interval_s"`
	Complete   bool           `json:"complete"`
	Problems   []string       `json:"problems,omitempty"`
	Nodes      []showbfNode   `json:"nodes"`
	Windows    []showbfWindow `json:"windows"`
}

func showbfJSON(snap *cluster.Snapshot, w policy.Windows) showbfOut {
	o := showbfOut{Partition: w.Partition, Now: w.Now.Unix(), BFInterval: seconds(snap.Config.BackfillInterval),
		Complete: snap.Complete, Problems: snap.Problems, Nodes: []showbfNode{}, Windows: []showbfWindow{}}
	for _, n := range w.Nodes {
		o.Nodes = append(o.Nodes, showbfNode{n.Node, n.State.String(), seconds(n.FreeFor), epoch(n.FreeAt), epoch(n.Until), n.ClaimedBy})
	}
	for _, win := range w.Windows {
		o.Windows = append(o.Windows, showbfWindow{win.Nodes, seconds(win.Duration)})
	}
	return o
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "glean: writing JSON: %v\n", err)
		return 1
	}
	return 0
}
