package slurm

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

func TestParsePartitionsFixture(t *testing.T) {
	parts, errs := ParsePartitions(bytes.NewReader(readFixture(t, "partitions.txt")))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(parts) != 3 {
		t.Fatalf("got %+v", parts)
	}
	batch, pilot, glean := parts[0], parts[1], parts[2]
	if batch.Name != "batch" || !batch.Default || !batch.Up || batch.PriorityTier != 10 || batch.MaxTime != cluster.Unlimited ||
		batch.DefaultTime != 0 || len(batch.Nodes) != 24 || batch.Nodes[23] != "c24" || batch.OverSubscribe != "NO" {
		t.Errorf("batch = %+v", batch)
	}
	if pilot.Name != "pilot" || pilot.Default || pilot.PriorityTier != 1 {
		t.Errorf("pilot = %+v", pilot)
	}
	if glean.Name != "glean" || len(glean.Nodes) != 1 || glean.Nodes[0] != "g1" || glean.OverSubscribe != "FORCE:64" {
		t.Errorf("glean = %+v", glean)
	}
}

func TestParsePartitionsBad(t *testing.T) {
	good := "PartitionName=p Default=NO DefaultTime=1:00:00 MaxTime=2-00:00:00 Nodes=n[01-03] PriorityTier=3 State=DOWN\n"
	tests := []struct{ line, want string }{
		{"PartitionName=q Default=NO MaxTime=1:xx Nodes=a PriorityTier=1 State=UP", `partitions record 2: field MaxTime: bad time "1:xx"`},
		{"PartitionName=q Default=NO MaxTime=1 Nodes=a[ PriorityTier=1 State=UP", `partitions record 2: field Nodes: bad hostlist "a[": unclosed '['`},
		{"PartitionName=q Default=MAYBE MaxTime=1 Nodes=a PriorityTier=1 State=UP", `partitions record 2: field Default: bad flag "MAYBE"`},
		{"PartitionName=q Default=NO MaxTime=1 Nodes=a PriorityTier=-1 State=UP", `partitions record 2: field PriorityTier: bad number "-1"`},
		{"PartitionName=q Default=NO MaxTime=1 Nodes=a PriorityTier=1", `partitions record 2: field State: missing`},
		{"PartitionName=q Default=NO MaxTime=1 Nodes=a PriorityTier=1 State=UP DefaultTime=x", `partitions record 2: field DefaultTime: bad time "x"`},
		{"garbage", `partitions record 2: field PartitionName: missing`},
	}
	for _, tc := range tests {
		parts, errs := ParsePartitions(strings.NewReader(good + "\n" + tc.line + "\n" + strings.Replace(good, "=p ", "=r ", 1)))
		if len(errs) != 1 || errs[0].Error() != tc.want {
			t.Errorf("%q: errs %v, want %s", tc.line, errs, tc.want)
		}
		if len(parts) != 2 || parts[1].Name != "r" {
			t.Fatalf("%q: parts %+v", tc.line, parts)
		}
	}
	parts, _ := ParsePartitions(strings.NewReader(good))
	p := parts[0]
	if p.Up || p.MaxTime != 48*time.Hour || p.DefaultTime != time.Hour || strings.Join(p.Nodes, ",") != "n01,n02,n03" {
		t.Errorf("p = %+v", p)
	}
}

func TestParseConfigFixture(t *testing.T) {
	cfg, err := ParseConfig(bytes.NewReader(readFixture(t, "config.txt")))
	if err != nil {
		t.Fatal(err)
	}
	want := cluster.SchedConfig{
		BackfillInterval:   time.Second,
		BackfillResolution: time.Second,
		BackfillWindow:     1440 * time.Minute, // not set: default
		SchedulerType:      "sched/backfill",
		SelectType:         "select/linear",
		KillWait:           5 * time.Second,
		OverTimeLimit:      0,
		MinJobAge:          600 * time.Second,
		MessageTimeout:     10 * time.Second,
		Version:            "22.05.8",
	}
	if cfg != want {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestParseConfigValues(t *testing.T) {
	base := "SLURM_VERSION = 23.02.1\nSchedulerType = sched/backfill\nSelectType = select/cons_tres\n" +
		"KillWait = 30 sec\nMinJobAge = 300 sec\nMessageTimeout = 10 sec\n"
	tests := []struct {
		name, extra string
		check       func(cluster.SchedConfig) bool
		wantErr     string
	}{
		{"defaults", "OverTimeLimit = NONE\nSchedulerParameters = (null)\n", func(c cluster.SchedConfig) bool {
			return c.BackfillInterval == 30*time.Second && c.BackfillResolution == time.Minute && c.BackfillWindow == 24*time.Hour && c.OverTimeLimit == 0
		}, ""},
		{"scheduler parameters", "OverTimeLimit = 5 min\nSchedulerParameters = default_queue_depth=100,bf_window=2880,bf_interval=60,bf_continue,bf_resolution=300\n",
			func(c cluster.SchedConfig) bool {
				return c.BackfillInterval == time.Minute && c.BackfillResolution == 5*time.Minute && c.BackfillWindow == 48*time.Hour && c.OverTimeLimit == 5*time.Minute
			}, ""},
		{"backfill off", "OverTimeLimit = UNLIMITED\nSchedulerParameters = bf_interval=-1\n", func(c cluster.SchedConfig) bool {
			return c.BackfillInterval == 0 && c.OverTimeLimit == cluster.Unlimited
		}, ""},
		{"bad bf_window", "OverTimeLimit = 0 min\nSchedulerParameters = bf_window=lots\n", func(c cluster.SchedConfig) bool {
			return c.BackfillWindow == 24*time.Hour && c.KillWait == 30*time.Second
		}, `config: field SchedulerParameters: bad bf_window "lots"`},
		{"huge bf_window", "OverTimeLimit = 0 min\nSchedulerParameters = bf_window=999999999\n", nil,
			`config: field SchedulerParameters: bad bf_window "999999999"`},
		{"bad duration", "OverTimeLimit = 5 hours\n", nil, `config: field OverTimeLimit: bad duration "5 hours"`},
		{"missing", "", nil, `config: field OverTimeLimit: missing`},
	}
	for _, tc := range tests {
		cfg, err := ParseConfig(strings.NewReader(base + tc.extra))
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
		if tc.check != nil && !tc.check(cfg) {
			t.Errorf("%s: cfg %+v", tc.name, cfg)
		}
	}
	if _, err := ParseConfig(strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "SLURM_VERSION: missing") {
		t.Errorf("empty config: %v", err)
	}
}
