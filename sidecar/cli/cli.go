// Package cli holds the `glean` subcommands, so that cmd/glean stays wiring
// and tests can run a command in-process with its own output streams.
package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Version is set at build time (-ldflags "-X .../cli.Version=...").
var Version = "dev"

// command runs one subcommand; it returns the exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"showbf":         {"print the backfill windows: how long each node is free before a pending job needs it", Showbf},
		"status":         {"list elastic jobs like squeue: state, tasks done/running/pending/failed, pilots", Status},
		"show":           {"show everything about one elastic job, rejections included", Show},
		"cancel":         {"cancel an elastic job (as scancel on its id does)", Cancel},
		"sim":            {"simulate a workload in SLURM-only and glean's modes: utilization, turnaround, waits", Sim},
		"sbatch":         {"", Sbatch},        // hidden: the drop-in sbatch, run directly
		"sbatch-wrapper": {"", SbatchWrapper}, // hidden: what wrappers/sbatch's first line runs
		"version": {"print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) int {
			fmt.Fprintln(stdout, "glean", Version)
			return 0
		}},
	}
}

// Main dispatches to a subcommand and returns the process exit code:
// 0 success, 1 failure, 2 usage error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "glean: unknown command %q; run `glean help` for the list\n", args[0])
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: glean <command> [options]\n\ncommands:\n")
	for _, n := range names {
		if cmds[n].summary == "" {
			continue // hidden
		}
		fmt.Fprintf(&b, "  %-8s %s\n", n, cmds[n].summary)
	}
	io.WriteString(w, b.String())
}
