package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

// jobView is one elastic job as the CLI shows it: the daemon's record, or
// for an entry the daemon has not taken in yet, what its owner can read.
type jobView struct {
	*spool.Record
	Journal []spool.Event `json:"journal,omitempty"`
}

// loadJobs reads the daemon's records and the caller's own entries that are
// still waiting for intake (root sees everyone's).
func loadJobs(cfg config.Config) ([]*spool.Record, []error) {
	sp := &spool.Spool{Dir: cfg.Spool.Dir, MaxEntryBytes: cfg.Spool.MaxEntryBytes, MaxScriptBytes: cfg.Spool.MaxScriptBytes}
	var recs []*spool.Record
	var problems []error
	taken := map[string]bool{}
	if rs, err := sp.OpenRecords(); err == nil {
		// Everyone reads the public status; root the whole records. A
		// user's own entries (what `glean show` prints: paths, --export)
		// come from the user's own files.
		if os.Geteuid() == 0 {
			recs, problems = rs.List()
		} else {
			recs, problems = rs.ListStatus()
		}
		rs.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		problems = append(problems, err)
	}
	for _, r := range recs {
		taken[r.DirName()] = true
		if r.Entry == nil && r.UID == os.Getuid() && r.EntryDigest != "" {
			if read, err := sp.ReadIncoming(spool.Incoming{UID: r.UID, Name: r.ID}, spool.Limits{}); err == nil && read.Digest == r.EntryDigest {
				r.Entry = read.Entry
			}
		}
	}
	var incoming []spool.Incoming
	if os.Geteuid() == 0 {
		incoming, _ = sp.ScanIncoming()
	} else {
		uid := os.Getuid()
		names, _ := sp.ListOwnIncoming(uid)
		for _, n := range names {
			incoming = append(incoming, spool.Incoming{UID: uid, Name: n})
		}
	}
	for _, in := range incoming {
		if taken[spool.RecordName(in.UID, in.Name)] {
			continue
		}
		e, err := sp.ReadOwnEntry(in.UID, in.Name)
		if err != nil {
			continue // the daemon will reject it and say why
		}
		recs = append(recs, &spool.Record{ID: e.ID, UID: in.UID, User: userName(in.UID), Anchor: e.Anchor, Shadow: e.Shadow,
			Name: e.Name, Mode: e.Mode, State: spool.StateSubmitted, Submitted: e.Submitted,
			Tasks: spool.Counts{Total: e.Tasks, Pending: e.Tasks}, Entry: e})
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Submitted.Before(recs[j].Submitted) })
	return recs, problems
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// Status lists elastic jobs like squeue.
func Status(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("glean status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var users string
	var asJSON, all bool
	fs.StringVar(&users, "u", "", "only these users (comma-separated names or uids)")
	fs.StringVar(&users, "user", "", "only these users (comma-separated names or uids)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&all, "a", false, "include jobs that ended (cancelled, done, failed, rejected)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "glean status: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := config.Load(config.Path())
	if err != nil {
		fmt.Fprintf(stderr, "glean status: %v\n", err)
		return 1
	}
	recs, problems := loadJobs(cfg)
	for _, p := range problems {
		fmt.Fprintf(stderr, "glean status: warning: %v\n", p)
	}
	want := map[string]bool{}
	for _, u := range strings.Split(users, ",") {
		if u != "" {
			want[u] = true
		}
	}
	var out []*spool.Record
	for _, r := range recs {
		if len(want) > 0 && !want[r.User] && !want[strconv.Itoa(r.UID)] {
			continue
		}
		// Like squeue, ended jobs show for a while (a day) unless -a.
		if !all && !r.Active() && r.State != spool.StateSubmitted && !r.Ended.IsZero() && time.Since(r.Ended) > 24*time.Hour {
			continue
		}
		out = append(out, r)
	}
	if asJSON {
		views := make([]jobView, len(out))
		for i, r := range out {
			views[i] = jobView{Record: r}
		}
		return writeJSON(stdout, stderr, map[string]any{"jobs": views})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tUSER\tNAME\tMODE\tSTATE\tDONE\tRUN\tPEND\tFAIL\tPILOTS\tSUBMITTED")
	for _, r := range out {
		id := r.Anchor
		if id == "" {
			id = "-"
		}
		state := r.State
		switch {
		case r.State == spool.StateRejected:
			state += ": " + spool.OneLine(r.Reason, 60)
		case r.Active() && strings.HasPrefix(r.PilotTrouble, spool.PilotsRefused):
			state += " (pilots refused: glean show)"
		case r.Active() && r.PilotTrouble != "":
			state += " (pilots die at start: glean show)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", id, r.User, spool.OneLine(r.Name, 24), dash(r.Mode), state,
			r.Tasks.Done, r.Tasks.Running, r.Tasks.Pending, r.Tasks.Failed, r.Pilots, stamp(r.Submitted))
	}
	tw.Flush()
	return 0
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02T15:04:05")
}

// findJob finds a job by entry id, record name or anchor id. A rejected
// entry may name someone's anchor id too: the job that was taken in wins.
func findJob(recs []*spool.Record, id string) *spool.Record {
	var byAnchor *spool.Record
	for _, r := range recs {
		if r.ID == id || r.DirName() == id {
			return r
		}
		if r.Anchor == id && (byAnchor == nil || byAnchor.State == spool.StateRejected) {
			byAnchor = r
		}
	}
	return byAnchor
}

// Show prints everything glean knows about one job, rejections included.
func Show(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("glean show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: glean show [--json] <jobid>")
		return 2
	}
	cfg, err := config.Load(config.Path())
	if err != nil {
		fmt.Fprintf(stderr, "glean show: %v\n", err)
		return 1
	}
	recs, _ := loadJobs(cfg)
	r := findJob(recs, fs.Arg(0))
	if r == nil {
		fmt.Fprintf(stderr, "glean show: no elastic job %s (`glean status -a` lists them)\n", fs.Arg(0))
		return 1
	}
	v := jobView{Record: r}
	if rs, err := (&spool.Spool{Dir: cfg.Spool.Dir}).OpenRecords(); err == nil {
		v.Journal, _ = rs.ReadJournal(r.DirName())
		rs.Close()
	}
	if *asJSON {
		return writeJSON(stdout, stderr, v)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 1, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, spool.OneLine(v, 4096))
		}
	}
	line("JobId", dash(r.Anchor))
	line("Entry", r.ID)
	line("User", fmt.Sprintf("%s(%d)", r.User, r.UID))
	line("Name", r.Name)
	line("Mode", r.Mode)
	line("State", r.State)
	line("Reason", r.Reason)
	line("Waiting", strings.Join(r.Waiting, "; "))
	line("Tasks", fmt.Sprintf("total=%d done=%d running=%d pending=%d failed=%d", r.Tasks.Total, r.Tasks.Done, r.Tasks.Running, r.Tasks.Pending, r.Tasks.Failed))
	line("Pilots", strconv.Itoa(r.Pilots))
	if r.PilotTrouble != "" {
		line("PilotTrouble", r.PilotTrouble)
	}
	line("ShadowArray", r.Shadow)
	line("Submitted", stamp(r.Submitted))
	if !r.Accepted.IsZero() {
		line("Accepted", stamp(r.Accepted))
	}
	if !r.Ended.IsZero() {
		line("Ended", stamp(r.Ended))
	}
	if e := r.Entry; e != nil {
		if e.Array != nil {
			line("Array", e.Array.String())
		}
		line("Script", e.Script)
		line("WorkDir", e.Cwd)
		line("Output", e.Output)
		line("Error", e.Error)
		line("Export", e.Export)
		res := e.Resources
		line("PerTask", fmt.Sprintf("cpus=%d mem=%s time=%s gres=%s constraint=%s", res.CPUs, mb(res.MemMB, res.MemPerCPUMB), minutes(res.TimeLimit), dash(res.Gres), dash(res.Constraint)))
		line("Dependency", e.Dependency)
		line("Begin", e.Begin)
		if !e.Deadline.IsZero() {
			line("Deadline", stamp(e.Deadline))
		}
		if e.Items != nil {
			line("Items", fmt.Sprintf("%d in %s, %d per task", e.Items.Count, e.Items.Dir, e.Items.Batch))
		}
		line("Glean", e.Glean.Raw)
		if left, ok := r.BudgetLeft(); ok {
			line("Budget", fmt.Sprintf("%g node-hours of pilots, %.2f left (live pilots count their time limit)", e.Glean.Budget, left.Hours()))
		}
		if n := len(r.ProfileRuntimes); n > 0 {
			line("Profile", fmt.Sprintf("%s: %d task runtimes of the owner's last job with it", e.Glean.Profile, n))
		}
		var opts []string
		for _, o := range e.Options {
			if o.Value != "" {
				opts = append(opts, "--"+o.Name+"="+o.Value)
			} else {
				opts = append(opts, "--"+o.Name)
			}
		}
		line("Options", strings.Join(opts, " "))
	}
	for _, ev := range v.Journal {
		line("Event", stamp(ev.Time)+" "+ev.Event+" "+ev.Detail)
	}
	tw.Flush()
	return 0
}

func mb(mem, perCPU int64) string {
	switch {
	case mem > 0:
		return fmt.Sprintf("%dM", mem)
	case perCPU > 0:
		return fmt.Sprintf("%dM/cpu", perCPU)
	}
	return "-"
}

func minutes(m int) string {
	if m == 0 {
		return "partition-default"
	}
	return slurm.FormatTimeLimit(time.Duration(m) * time.Minute)
}

// Cancel cancels an elastic job: it scancels the anchor (and the shadow
// array) as the caller, exactly what `scancel <id>` does; the daemon sees
// the anchor end and stops the job.
func Cancel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("glean cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 1 {
		fmt.Fprintln(stderr, "usage: glean cancel <jobid>...")
		return 2
	}
	cfg, err := config.Load(config.Path())
	if err != nil {
		fmt.Fprintf(stderr, "glean cancel: %v\n", err)
		return 1
	}
	recs, _ := loadJobs(cfg)
	client := &slurm.Client{R: &slurm.Exec{Timeout: cfg.Slurm.Timeout.Duration}}
	code := 0
	for _, id := range fs.Args() {
		r := findJob(recs, id)
		switch {
		case r == nil:
			fmt.Fprintf(stderr, "glean cancel: no elastic job %s\n", id)
			code = 1
			continue
		case os.Geteuid() != 0 && r.UID != os.Getuid():
			fmt.Fprintf(stderr, "glean cancel: job %s belongs to %s, not to you\n", id, r.User)
			code = 1
			continue
		case !r.Active() && r.State != spool.StateSubmitted:
			fmt.Fprintf(stderr, "glean cancel: job %s has already ended (%s)\n", id, r.State)
			code = 1
			continue
		}
		for _, j := range []string{r.Anchor, r.Shadow} {
			if j == "" {
				continue
			}
			if err := client.Cancel(ctx, j, ""); err != nil {
				fmt.Fprintf(stderr, "glean cancel: %v\n", err)
				code = 1
			}
		}
	}
	return code
}
