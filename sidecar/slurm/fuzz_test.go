package slurm

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// Fuzz targets: no parser may panic, and whatever a parser accepts must be
// sane. More seeds live in testdata/fuzz/<FuzzName>/.

func addFixture(f *testing.F, name string) {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

func FuzzParseSqueue(f *testing.F) {
	addFixture(f, "squeue.txt")
	addFixture(f, "squeue_cut.txt")
	f.Add([]byte(rec(nil)))
	f.Add([]byte(rec(map[int]string{9: "1:xx"}) + rec(map[int]string{0: "2", 7: "c[1-3],g[01-02]"})))
	f.Add([]byte(rec(map[int]string{15: "n\x1e\n77\x1fx"})))
	f.Add([]byte("\x1e\n\x1e\n"))
	f.Add([]byte(sealEnd(testSeal) + sealEnd(testSeal)))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, errs := ParseSqueue(bytes.NewReader(data), testSeal)
		if len(jobs)+len(errs) > bytes.Count(data, []byte(sealEnd(testSeal)))+1 {
			t.Fatalf("%d jobs + %d errors from %d records", len(jobs), len(errs), bytes.Count(data, []byte(sealEnd(testSeal))))
		}
		seen := map[string]bool{}
		for _, j := range jobs {
			if !validID(j.ID) || !validID(j.ArrayJobID) || seen[j.ID] {
				t.Fatalf("bad or duplicate id: %+v", j)
			}
			seen[j.ID] = true
			if j.NumNodes < 0 || j.TimeLimit < 0 || j.Priority < 0 || j.Partition == "" || j.User == "" || j.RawState == "" {
				t.Fatalf("insane job: %+v", j)
			}
			for _, n := range append(j.Nodes, j.SchedNodes...) {
				if n == "" {
					t.Fatalf("empty node name: %+v", j)
				}
			}
			for _, tm := range []time.Time{j.Submit, j.Start, j.End} {
				if !tm.IsZero() && tm.Unix() <= 0 {
					t.Fatalf("bad time: %+v", j)
				}
			}
		}
		for _, err := range errs {
			if !strings.HasPrefix(err.Error(), "squeue record ") {
				t.Fatalf("error without record number: %v", err)
			}
		}
	})
}

func FuzzParseSinfo(f *testing.F) {
	addFixture(f, "sinfo.txt")
	addFixture(f, "sinfo_states.txt")
	f.Add([]byte("c1\x1fidle~\x1fbatch*\x1f4+\x1f1000\x1e\nc1\x1fidle~\x1fpilot\x1f4\x1f1000\x1e\n"))
	f.Add([]byte("c1\x1fmixed+drain$\x1fn/a\x1f4\x1f1\x1e\ntrunc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, _ := ParseSinfo(bytes.NewReader(data))
		names := map[string]bool{}
		for _, n := range nodes {
			if n.Name == "" || names[n.Name] || n.CPUs < 0 || n.MemoryMB < 0 || n.State.String() == "invalid" {
				t.Fatalf("insane node: %+v", n)
			}
			names[n.Name] = true
			for _, p := range n.Partitions {
				if p == "" || strings.HasSuffix(p, "*") {
					t.Fatalf("bad partition: %+v", n)
				}
			}
		}
	})
}

func FuzzParsePartitions(f *testing.F) {
	addFixture(f, "partitions.txt")
	f.Add([]byte("PartitionName=p Default=NO DefaultTime=1:00:00 MaxTime=2-00:00:00 Nodes=n[01-03] PriorityTier=3 State=DOWN\n"))
	f.Add([]byte("PartitionName= Default=YES MaxTime=INFINITE Nodes=(null) PriorityTier=99999 State=UP\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parts, _ := ParsePartitions(bytes.NewReader(data))
		for _, p := range parts {
			if p.Name == "" || p.MaxTime < 0 || p.DefaultTime < 0 || p.PriorityTier < 0 {
				t.Fatalf("insane partition: %+v", p)
			}
			for _, n := range p.Nodes {
				if n == "" {
					t.Fatalf("empty node name: %+v", p)
				}
			}
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	addFixture(f, "config.txt")
	f.Add([]byte("SchedulerParameters = bf_window=2880,bf_interval=-1,bf_resolution=x\nKillWait = 99999999999 min\nOverTimeLimit = UNLIMITED\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _ := ParseConfig(bytes.NewReader(data))
		for _, d := range []time.Duration{cfg.BackfillInterval, cfg.BackfillResolution, cfg.BackfillWindow,
			cfg.KillWait, cfg.OverTimeLimit, cfg.MinJobAge, cfg.MessageTimeout} {
			if d < 0 {
				t.Fatalf("negative duration: %+v", cfg)
			}
		}
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"", "c1", "c[1-24]", "n[01-10]", "a[1,3-5]b", "r[1-2]n[1-3],g1", "c[1-", "c[0-999999999]",
		"a[1-1000]b[1-1000]", "c[[1]]", "x]", "c[001-002,010]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandHostlist(s)
		if err != nil {
			if names != nil {
				t.Fatalf("names and error")
			}
			return
		}
		if len(names) > MaxHostlist {
			t.Fatalf("%d names", len(names))
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[], \n") {
				t.Fatalf("bad name %q from %q", n, s)
			}
		}
		// A plain list of names expands to itself.
		if !strings.ContainsAny(s, "[]") && s != "" && strings.Join(names, ",") != s {
			t.Fatalf("%q expanded to %q", s, names)
		}
	})
}

func FuzzParseTimeLimit(f *testing.F) {
	for _, s := range []string{"5", "10:00", "1:00:00", "2-00:00:00", "1-2", "1-2:30", "UNLIMITED", "INFINITE", "1:xx",
		"999999999-23:59:59", "-1", "1::", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimeLimit(s)
		if err != nil {
			return
		}
		if d < 0 || d%time.Second != 0 && d != cluster.Unlimited {
			t.Fatalf("ParseTimeLimit(%q) = %v", s, d)
		}
		// Whole minutes survive a round trip through FormatTimeLimit.
		if d >= time.Minute && d != cluster.Unlimited {
			m := d.Truncate(time.Minute)
			if back, err := ParseTimeLimit(FormatTimeLimit(d)); err != nil || back != m {
				t.Fatalf("round trip of %v: %v %v", d, back, err)
			}
		}
	})
}

func FuzzParseSubmitOutput(f *testing.F) {
	for _, s := range []string{"1234\n", "1234;cluster\n", "", "Submitted batch job 1", "1;", "0", "12_3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		id, err := ParseSubmitOutput(out)
		if err == nil && (!validID(id) || !ValidJobID(id)) {
			t.Fatalf("accepted id %q from %q", id, out)
		}
	})
}

func FuzzParseDependency(f *testing.F) {
	for _, s := range []string{"afterok:5", "afterok:5_1", "afterok:5_[1-3,7]?afterany:6", "after:5+10:6(failed)", "5,6_*", "singleton", "afterok:5_[0-9:3]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDependency(s)
		if err != nil {
			return
		}
		if len(d.Conds) == 0 {
			t.Fatalf("%q: no condition", s)
		}
		for _, c := range d.Conds {
			if !slices.Contains(depTypes, c.Type) || (c.Job == "") != (c.Type == "singleton") || c.Job != "" && !validID(c.Job) || c.Minute < 0 {
				t.Fatalf("%q: bad condition %+v", s, c)
			}
		}
	})
}
