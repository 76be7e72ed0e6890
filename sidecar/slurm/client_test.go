package slurm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// fakeRunner answers by command line prefix ("squeue", "scontrol show
// config", ...; an error wins, then the longest matching output) and
// records the calls.
type fakeRunner struct {
	mu    sync.Mutex
	out   map[string]string
	err   map[string]error
	calls []string
}

func (f *fakeRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	line := strings.Join(argv, " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, line)
	for k, err := range f.err {
		if strings.HasPrefix(line, k) {
			return nil, err
		}
	}
	key := ""
	for k := range f.out {
		if strings.HasPrefix(line, k) && len(k) > len(key) {
			key = k
		}
	}
	if key == "" {
		return nil, fmt.Errorf("fake: unexpected command %q", line)
	}
	out := f.out[key]
	if argv[0] == "squeue" { // answer with the seal this call asked for
		_, seal, _ := strings.Cut(argv[len(argv)-1], sealMark)
		out = strings.ReplaceAll(out, sealEnd(testSeal), sealEnd(strings.TrimSuffix(seal, "\x1e")))
	}
	return []byte(out), nil
}

func (f *fakeRunner) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func fixtureRunner(t *testing.T) *fakeRunner {
	return &fakeRunner{out: map[string]string{
		"squeue":                            string(readFixture(t, "squeue.txt")),
		"sinfo":                             string(readFixture(t, "sinfo.txt")),
		strings.Join(PartitionsArgv(), " "): string(readFixture(t, "partitions.txt")),
		"scontrol show config":              string(readFixture(t, "config.txt")),
		"sbatch --parsable":                 "1234\n",
		"scancel":                           "",
		"scontrol update":                   "",
		"scontrol hold":                     "",
		"scontrol uhold":                    "",
		"scontrol release":                  "",
	}, err: map[string]error{}}
}

func TestSnapshotComplete(t *testing.T) {
	f := fixtureRunner(t)
	c := &Client{R: f}
	now := time.Unix(1795317700, 0)
	s := c.Snapshot(context.Background(), now)
	if !s.Complete || len(s.Problems) != 0 {
		t.Fatalf("incomplete: %v", s.Problems)
	}
	if !s.Time.Equal(now) || len(s.Jobs) != 10 || len(s.Nodes) != 25 || len(s.Partitions) != 3 ||
		s.Config.KillWait != 5*time.Second || s.DefaultPartition().Name != "batch" {
		t.Fatalf("snapshot = %+v", s)
	}
	// The config is read once and cached.
	c.Snapshot(context.Background(), now)
	if n := f.count("scontrol show config"); n != 1 {
		t.Errorf("config read %d times", n)
	}
	if n := f.count("squeue"); n != 2 {
		t.Errorf("squeue ran %d times", n)
	}
}

// hidingSlurm answers as Slurm does for a partition that is Hidden=YES,
// or whose AllowGroups leave out the caller: sinfo and scontrol show
// partition list it only with -a (--all) (sinfo(1), scontrol(1), 22.05).
type hidingSlurm struct {
	*fakeRunner
	hidden string
}

func (h hidingSlurm) Run(ctx context.Context, argv []string) ([]byte, error) {
	out, err := h.fakeRunner.Run(ctx, argv)
	all := slices.Contains(argv, "-a") || slices.Contains(argv, "--all")
	if err != nil || all || argv[0] != "sinfo" && !(argv[0] == "scontrol" && argv[len(argv)-1] == "partition") {
		return out, err
	}
	var keep []string
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if !strings.HasPrefix(l, "PartitionName="+h.hidden+" ") && !strings.Contains(l, "\x1f"+h.hidden+"\x1f") {
			keep = append(keep, l)
		}
	}
	return []byte(strings.Join(keep, "")), nil
}

// The pilot partition is usually hidden from users, or closed to every
// group but glean's: the snapshot still lists it, and its nodes as its
// members. Without -a, gleand found no pilot partition and its intake
// stalled.
func TestSnapshotShowsHiddenPartitions(t *testing.T) {
	f := hidingSlurm{fixtureRunner(t), "pilot"}
	s := (&Client{R: f}).Snapshot(context.Background(), time.Now())
	if !s.Complete {
		t.Fatalf("incomplete: %v", s.Problems)
	}
	if p := s.Partition("pilot"); p == nil || len(p.Nodes) != 24 {
		t.Fatalf("pilot partition %+v; partitions %+v", p, s.Partitions)
	}
	for _, n := range s.Nodes {
		if n.Name == "c1" && !slices.Contains(n.Partitions, "pilot") {
			t.Errorf("node c1 in %v, want pilot among them", n.Partitions)
		}
	}
}

func TestSnapshotIncomplete(t *testing.T) {
	f := fixtureRunner(t)
	f.err["sinfo"] = &CmdError{Argv: SinfoArgv(), ExitCode: 1, Stderr: "sinfo: error: Unable to contact slurm controller"}
	f.err["scontrol show config"] = errors.New("boom")
	f.out["squeue"] += rec(map[int]string{0: "50", 9: "1:xx"})
	s := (&Client{R: f}).Snapshot(context.Background(), time.Now())
	if s == nil || s.Complete {
		t.Fatalf("want incomplete, got %+v", s)
	}
	if len(s.Jobs) != 10 || len(s.Partitions) != 3 || s.Nodes != nil {
		t.Errorf("jobs %d partitions %d nodes %d: what could be read must be kept", len(s.Jobs), len(s.Partitions), len(s.Nodes))
	}
	want := []string{
		`squeue record 11: field TimeLimit: bad time "1:xx"`,
		`sinfo -a -h -N -o "%N\x1f%T\x1f%P\x1f%c\x1f%m\x1e": exit code 1: sinfo: error: Unable to contact slurm controller`,
		`scontrol: boom`,
	}
	if strings.Join(s.Problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(s.Problems, "\n"), strings.Join(want, "\n"))
	}
	// A failed config read is not cached: the next snapshot retries.
	delete(f.err, "scontrol show config")
	c := &Client{R: f}
	c.Snapshot(context.Background(), time.Now())
	if _, ok := c.cachedConfig(); !ok {
		t.Error("config not cached after a good read")
	}
}

func TestSnapshotCapsProblems(t *testing.T) {
	f := fixtureRunner(t)
	var b strings.Builder
	for i := range 200 {
		b.WriteString(rec(map[int]string{0: fmt.Sprint(100 + i), 6: "x"}))
	}
	f.out["squeue"] = b.String()
	s := (&Client{R: f}).Snapshot(context.Background(), time.Now())
	if s.Complete || len(s.Problems) != maxProblems+1 || s.Problems[maxProblems] != "... and 150 more problems" {
		t.Fatalf("%d problems, last %q", len(s.Problems), s.Problems[len(s.Problems)-1])
	}
}

func TestSubmit(t *testing.T) {
	f := fixtureRunner(t)
	c := &Client{R: f}
	id, err := c.Submit(context.Background(), []string{"-p", "pilot", "-t", "5", "job.sh"})
	if err != nil || id != "1234" || f.calls[0] != "sbatch --parsable -p pilot -t 5 job.sh" {
		t.Fatalf("%q %v %q", id, err, f.calls)
	}
	f.out["sbatch --parsable"] = "Submitted batch job 99\n"
	if _, err := c.Submit(context.Background(), nil); err == nil || !strings.Contains(err.Error(), `unexpected output "Submitted batch job 99"`) {
		t.Fatalf("%v", err)
	}
	f.err["sbatch"] = &CmdError{Argv: []string{"sbatch"}, ExitCode: 1, Stderr: "sbatch: error: invalid partition"}
	if _, err := c.Submit(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "invalid partition") {
		t.Fatalf("%v", err)
	}
}

func TestParseSubmitOutput(t *testing.T) {
	for in, want := range map[string]string{"1234": "1234", "1234\n": "1234", "1234;glean31100\n": "1234", " 7 ": "7"} {
		if got, err := ParseSubmitOutput([]byte(in)); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "abc", "12 34", "1234;", "1234;a b", "1234_5", "-1", "1234\n5678", "99999999999999999999"} {
		if got, err := ParseSubmitOutput([]byte(in)); err == nil {
			t.Errorf("%q: got %q, want error", in, got)
		}
	}
}

func TestActions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		do   func(c *Client) error
		want string // command line run, or "error: ..." for a refusal that runs nothing
	}{
		{"cancel", func(c *Client) error { return c.Cancel(ctx, "12", "") }, "scancel 12"},
		{"cancel array element", func(c *Client) error { return c.Cancel(ctx, "12_3", "") }, "scancel 12_3"},
		{"signal", func(c *Client) error { return c.Cancel(ctx, "12", "USR1") }, "scancel --signal=USR1 12"},
		{"signal SIG prefix", func(c *Client) error { return c.Cancel(ctx, "12", "SIGTERM") }, "scancel --signal=TERM 12"},
		{"batch signal", func(c *Client) error { return c.Cancel(ctx, "12", "B:TERM") }, "scancel --signal=TERM --batch 12"},
		{"bad signal", func(c *Client) error { return c.Cancel(ctx, "12", "TERM --full") }, `error: scancel: unknown signal "TERM --full"`},
		{"numeric signal", func(c *Client) error { return c.Cancel(ctx, "12", "9") }, `error: scancel: unknown signal "9"`},
		{"empty batch signal", func(c *Client) error { return c.Cancel(ctx, "12", "B:") }, `error: scancel: unknown signal "B:"`},
		{"bad id", func(c *Client) error { return c.Cancel(ctx, "12 --user=bob", "") }, `error: scancel: bad job id "12 --user=bob"`},
		{"flag as id", func(c *Client) error { return c.Cancel(ctx, "-u", "") }, `error: scancel: bad job id "-u"`},
		{"empty id", func(c *Client) error { return c.Cancel(ctx, "", "") }, `error: scancel: bad job id ""`},
		{"time limit", func(c *Client) error { return c.SetTimeLimit(ctx, "12", 90*time.Minute+59*time.Second) },
			"scontrol update JobId=12 TimeLimit=90"},
		{"unlimited", func(c *Client) error { return c.SetTimeLimit(ctx, "12", cluster.Unlimited) },
			"scontrol update JobId=12 TimeLimit=UNLIMITED"},
		{"time limit too short", func(c *Client) error { return c.SetTimeLimit(ctx, "12", 59*time.Second) },
			"error: scontrol update: time limit 59s is under one minute"},
		{"time limit bad id", func(c *Client) error { return c.SetTimeLimit(ctx, "x", time.Hour) }, `error: scontrol update: bad job id "x"`},
		{"admin hold", func(c *Client) error { return c.Hold(ctx, "12", AdminHold) }, "scontrol hold 12"},
		{"user hold", func(c *Client) error { return c.Hold(ctx, "12", UserHold) }, "scontrol uhold 12"},
		{"bad hold kind", func(c *Client) error { return c.Hold(ctx, "12", HoldKind(7)) }, "error: scontrol hold: unknown hold kind 7"},
		{"hold bad id", func(c *Client) error { return c.Hold(ctx, "12_", UserHold) }, `error: scontrol uhold: bad job id "12_"`},
		{"release", func(c *Client) error { return c.Release(ctx, "12") }, "scontrol release 12"},
		{"release bad id", func(c *Client) error { return c.Release(ctx, "0") }, `error: scontrol release: bad job id "0"`},
		{"start now", func(c *Client) error { return c.StartNow(ctx, "12") }, "scontrol update JobId=12 StartTime=now"},
		{"start now bad id", func(c *Client) error { return c.StartNow(ctx, "12 StartTime=x") }, `error: scontrol update: bad job id "12 StartTime=x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fixtureRunner(t)
			err := tc.do(&Client{R: f})
			if refusal, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || err.Error() != refusal || len(f.calls) != 0 {
					t.Fatalf("err %v, calls %q; want refusal %q", err, f.calls, refusal)
				}
				return
			}
			if err != nil || len(f.calls) != 1 || f.calls[0] != tc.want {
				t.Fatalf("err %v, calls %q; want %q", err, f.calls, tc.want)
			}
		})
	}
}

func TestActionErrorNamesCommand(t *testing.T) {
	f := fixtureRunner(t)
	f.err["scontrol update"] = errors.New("Access/permission denied")
	err := (&Client{R: f}).SetTimeLimit(context.Background(), "12", time.Hour)
	if err == nil || err.Error() != "scontrol: Access/permission denied" {
		t.Fatalf("%v", err)
	}
}
