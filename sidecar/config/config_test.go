package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "glean.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The shipped etc/glean.toml documents the defaults: loading it must give
// exactly Default().
func TestShippedConfigIsTheDefault(t *testing.T) {
	c, err := Load("../../etc/glean.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Fatalf("etc/glean.toml differs from Default():\n%+v\n%+v", c, Default())
	}
}

func TestLoad(t *testing.T) {
	c, err := Load(write(t, "[policy]\nmargin = \"90s\"\n[partitions]\nelastic = [\"calib\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Policy.Margin.Duration != 90*time.Second || !c.IsElastic("calib") || c.IsElastic("batch") || c.Partitions.Pilot != "pilot" {
		t.Fatalf("got %+v", c)
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"unknown key", "[policy]\nmargn = \"1m\"\n", "unknown keys: policy.margn"},
		{"bad duration", "[policy]\nmargin = \"2 minutes\"\n", `bad duration "2 minutes"`},
		{"thesis not allowed", "[policy]\ndefault_mode = \"thesis\"\n", "thesis needs policy.allow_thesis"},
		{"bad mode", "[policy]\ndefault_mode = \"greedy\"\n", `must be fair or scavenger, not "greedy"`},
		{"relative spool", "[spool]\ndir = \"spool\"\n", `spool.dir: must be an absolute path`},
		{"two problems at once", "[spool]\ndir = \"\"\n[daemon]\nuser = \"\"\n", "daemon.user"},
		{"not toml", "[policy\n", "glean.toml"},
		{"relative helper socket", "[helper]\nsocket = \"run/helper.sock\"\n", "helper.socket"},
		{"helper socket in /", "[helper]\nsocket = \"/helper.sock\"\n", "helper.socket"},
		{"metrics address without a port", "[daemon]\nmetrics_listen = \"localhost\"\n", "daemon.metrics_listen"},
		{"metrics address with an empty port", "[daemon]\nmetrics_listen = \"127.0.0.1:\"\n", "daemon.metrics_listen"},
		{"attempt cap below the retries", "[limits]\ntask_retries = 5\nmax_attempts = 5\n", "limits.max_attempts"},
		{"negative waste cap", "[limits]\nmax_waste = \"-1h\"\n", "limits.max_waste"},
		{"no entry taken in per round", "[limits]\nmax_entries_per_round = 0\n", "limits.max_entries_per_round: must be at least 1"},
		{"relative checkpoint root", "[checkpoint]\nroot = \"ckpt\"\n", "checkpoint.root"},
		{"relative checkpoint command", "[checkpoint]\ncommand = \"dmtcp_launch\"\n", "checkpoint.command"},
		// "1ns" used to pass: a Slurm command that always times out, rounds
		// and rescans back to back.
		{"nanosecond interval", "[daemon]\ninterval = \"1ns\"\n", "daemon.interval: must be 0 (one scheduling cycle, the cluster's bf_interval) or at least 1s, not 1ns"},
		{"negative interval", "[daemon]\ninterval = \"-1s\"\n", "daemon.interval: must be 0"},
		{"nanosecond rescan", "[daemon]\nrescan = \"1ns\"\n", "daemon.rescan: must be at least 1s, not 1ns"},
		{"zero rescan", "[daemon]\nrescan = \"0s\"\n", "daemon.rescan: must be at least 1s, not 0s"},
		{"nanosecond Slurm timeout", "[slurm]\ntimeout = \"1ns\"\n", "slurm.timeout: must be at least 1s, not 1ns"},
		{"half-second Slurm timeout", "[slurm]\ntimeout = \"500ms\"\n", "slurm.timeout: must be at least 1s, not 500ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "glean.toml") {
				t.Fatalf("err = %v, want one naming the file and containing %q", err, tc.want)
			}
		})
	}
}

func TestPath(t *testing.T) {
	t.Setenv("GLEAN_CONFIG", "")
	if Path() != DefaultPath {
		t.Fatal(Path())
	}
	t.Setenv("GLEAN_CONFIG", "/x/glean.toml")
	if Path() != "/x/glean.toml" {
		t.Fatal(Path())
	}
}
