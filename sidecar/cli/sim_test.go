package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimThesis1(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Sim(context.Background(), []string{"--workload", "thesis-1", "--json"}, &out, &errb); code != 0 {
		if strings.Contains(errb.String(), "not found") {
			t.Skip(errb.String())
		}
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Defaults string
		Modes    []struct {
			Mode    string
			AllDone bool `json:"all_calibration_done"`
			Nominal float64
			VsSlurm *json.RawMessage `json:"vs_slurm"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Modes) != 4 || rep.Modes[0].Mode != "slurm" || !strings.Contains(rep.Defaults, "150 tasks per job") {
		t.Fatalf("report %+v", rep)
	}
	for _, m := range rep.Modes {
		if !m.AllDone || m.Nominal <= 0 || (m.Mode != "slurm") != (m.VsSlurm != nil) {
			t.Errorf("mode %+v", m)
		}
	}
	out.Reset()
	if code := Sim(context.Background(), []string{"--workload", "thesis-2", "--mode", "fair"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Table 5.2") || !strings.Contains(out.String(), "defaults: 150 tasks per job") {
		t.Errorf("text report:\n%s", out.String())
	}
}

// simHistory is a small sacct history: one malformed line (3), one job
// larger than the rest (4, 10 nodes) and one that never started (5).
const simHistory = `101|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|4|120|COMPLETED|alice
102|2024-01-01T00:10:00|2024-01-01T00:10:01|2024-01-01T00:40:01|8|60|COMPLETED|bob
103|2024-01-01T00:11:00|garbage|2024-01-01T00:40:01|8|60|COMPLETED|bob
104|2024-01-01T00:12:00|2024-01-01T01:00:05|2024-01-01T02:00:05|10|UNLIMITED|COMPLETED|carol
105|2024-01-01T00:13:00|Unknown|Unknown|2|60|PENDING|dave
`

// TestSimFlags: --nodes, --strict, --scheduler, the skipped-line warnings,
// --help, and the plots in both formats, on a sacct history.
func TestSimFlags(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "site.sacct")
	if err := os.WriteFile(hist, []byte(simHistory), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out      []string // in stdout
		errs     []string // in stderr
		noErr    string   // not in stderr
		jsonNode int      // the report's nodes, if > 0
	}{
		{name: "lenient default", args: []string{"--mode", "slurm", "--json"}, jsonNode: 10,
			errs: []string{hist + ":3: Start:", "(line skipped)", "sacct does not record the machine's size; simulating on 10 nodes", "give --nodes"}},
		{name: "strict", args: []string{"--mode", "slurm", "--strict"}, code: 1,
			errs: []string{hist + `:3: Start: "garbage"`}, noErr: "skipped"},
		{name: "nodes", args: []string{"--mode", "slurm", "--nodes", "16", "--json"}, jsonNode: 16, noErr: "machine's size"},
		{name: "nodes too few", args: []string{"--mode", "slurm", "--nodes", "8"}, code: 1,
			errs: []string{hist + ":4: job 104 needs 10 nodes, more than the machine's 8; give the machine's node count with --nodes"}},
		{name: "easy", args: []string{"--mode", "slurm", "--nodes", "16", "--scheduler", "easy"}, out: []string{"scheduler: easy", "Table 5.2: no calibration jobs in this workload"}},
		{name: "conservative", args: []string{"--mode", "slurm", "--nodes", "16", "--scheduler", "conservative"}, out: []string{"scheduler: conservative"}},
		{name: "easy needs mode slurm", args: []string{"--scheduler", "easy"}, code: 2, errs: []string{"--scheduler easy runs only --mode slurm"}},
		{name: "easy without backlog", args: []string{"--mode", "slurm", "--scheduler", "fcfs", "--backlog", "10m"}, code: 2, errs: []string{"without --backlog"}},
		{name: "unknown scheduler", args: []string{"--scheduler", "sjf"}, code: 2, errs: []string{`unknown scheduler "sjf"`}},
		{name: "negative nodes", args: []string{"--nodes", "-1"}, code: 2, errs: []string{"--nodes must be positive"}},
		{name: "help", args: []string{"--help"}, errs: []string{"TZ=UTC sacct -P -X -n -a -S", "-o JobIDRaw,Submit,Start,End,NNodes,TimelimitRaw,State,User", "-strict", "-nodes", "-scheduler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"--workload", hist}, tc.args...)
			if code := Sim(context.Background(), args, &out, &errb); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errb.String())
			}
			for _, s := range tc.out {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.errs {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, errb.String())
				}
			}
			if tc.noErr != "" && strings.Contains(errb.String(), tc.noErr) {
				t.Errorf("stderr has %q:\n%s", tc.noErr, errb.String())
			}
			if tc.code != 0 && out.Len() > 0 {
				t.Errorf("output on failure:\n%s", out.String())
			}
			if tc.jsonNode > 0 {
				var rep struct{ Nodes int }
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
					t.Fatal(err)
				}
				if rep.Nodes != tc.jsonNode {
					t.Errorf("report on %d nodes, want %d", rep.Nodes, tc.jsonNode)
				}
			}
		})
	}
}

// TestSimSacctHeld: sacct -S prints a job submitted half a year before the
// period and held into it. Its submission is moved to the period's start
// (the first Start, or --since), and the report says so, instead of the
// machine standing empty for half a year and utilization coming out at a
// fraction of the real one.
func TestSimSacctHeld(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "held.sacct")
	var b strings.Builder
	b.WriteString("999|2023-07-01T00:00:00|2024-01-01T10:00:00|2024-01-01T10:10:00|1|60|COMPLETED|v\n")
	for i := range 10 { // 4 of 8 nodes busy for 10 hours
		fmt.Fprintf(&b, "%d|2024-01-01T%02d:00:00|2024-01-01T%02d:00:00|2024-01-01T%02d:00:00|4|120|COMPLETED|u\n", 1000+i, i, i, i+1)
	}
	if err := os.WriteFile(hist, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		start string
	}{
		{name: "first start", start: "2024-01-01T00:00:00"},
		{name: "since", args: []string{"--since", "2023-12-31T23:00:00"}, start: "2023-12-31T23:00:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := append([]string{"--workload", hist, "--nodes", "8", "--mode", "slurm"}, tc.args...)
			var out, errb bytes.Buffer
			if code := Sim(context.Background(), append(base, "--json"), &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var rep struct {
				Input struct {
					Jobs    int
					Start   string
					Clamped int `json:"submits_clamped"`
				}
				Modes []struct{ Nominal float64 }
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Input.Jobs != 11 || rep.Input.Clamped != 1 || rep.Input.Start != tc.start+"Z" || len(rep.Modes) != 1 {
				t.Fatalf("input %+v, %d modes", rep.Input, len(rep.Modes))
			}
			// 4 of 8 nodes all through a window of 9.5 h (10.5 h from
			// --since), and 1 node for 10 min: about 50 % (45 %); from the
			// held job's submission, under 0.2 %.
			if n := rep.Modes[0].Nominal; n < 0.4 || n > 0.51 {
				t.Errorf("nominal utilization %.4f", n)
			}
			out.Reset()
			if code := Sim(context.Background(), base, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if want := "1 of them submitted before time 0 (" + tc.start + ") and moved to it"; !strings.Contains(out.String(), want) {
				t.Errorf("text report lacks %q:\n%s", want, out.String())
			}
			// Without --since the period's start is a guess: said once per run.
			warned := strings.Count(errb.String(), "no --since: the period starts at the first job's start, 2024-01-01T00:00:00Z")
			if want := map[bool]int{true: 2, false: 0}[tc.args == nil]; warned != want {
				t.Errorf("%d warnings about --since in %q, want %d", warned, errb.String(), want)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := Sim(context.Background(), []string{"--workload", hist, "--since", "Jan 1"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--since") {
		t.Errorf("bad --since: exit %d: %s", code, errb.String())
	}
}

// TestSimSWFProcsPerNode: an SWF trace whose header gives MaxNodes 4 and
// MaxProcs 32 (as LLNL-Atlas's 1,152 and 9,216) is simulated on 4 nodes
// of 8 processors, not on 32 one-processor "nodes"; with
// --procs-per-node 1 --nodes 4 the jobs of more than 4 processors are
// dropped, and the report and stderr say how many and why.
func TestSimSWFProcsPerNode(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "small.swf")
	in := `; MaxNodes: 4
; MaxProcs: 32
1 0 -1 100 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 -1
2 5 -1 50 24 -1 -1 24 100 -1 1 13 13 -1 -1 -1 -1 -1
3 7 -1 -1 4 -1 -1 4 60 -1 0 14 14 -1 -1 -1 -1 -1
4 9 -1 30 3 -1 -1 3 60 -1 0 14 14 -1 -1 -1 -1 -1
`
	if err := os.WriteFile(trace, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                     string
		args                     []string
		nodes, jobs, ppn, tooBig int
		text                     string
		warn                     bool
	}{
		{name: "from the header", nodes: 4, jobs: 3, ppn: 8,
			text: "input: 3 jobs simulated (8 processors per node); 1 records dropped: 1 never ran (no run time or no processors)"},
		{name: "given", args: []string{"--procs-per-node", "4"}, nodes: 4, jobs: 2, ppn: 4, tooBig: 1,
			text: "; 2 records dropped: 1 never ran (no run time or no processors), 1 larger than the machine's 4 nodes", warn: true},
		{name: "processors as nodes", args: []string{"--procs-per-node", "1", "--nodes", "4"}, nodes: 4, jobs: 1, ppn: 1, tooBig: 2,
			text: "input: 1 jobs simulated; 3 records dropped: 1 never ran (no run time or no processors), 2 larger than the machine's 4 nodes", warn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := append([]string{"--workload", trace, "--mode", "slurm"}, tc.args...)
			var out, errb bytes.Buffer
			if code := Sim(context.Background(), append(base, "--json"), &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var rep struct {
				Nodes int
				Input struct {
					Jobs, Dropped int
					TooLarge      int `json:"dropped_larger_than_machine"`
					PPN           int `json:"procs_per_node"`
				}
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Nodes != tc.nodes || rep.Input.Jobs != tc.jobs || rep.Input.PPN != tc.ppn || rep.Input.TooLarge != tc.tooBig || rep.Input.Dropped != 1+tc.tooBig {
				t.Errorf("report on %d nodes, input %+v", rep.Nodes, rep.Input)
			}
			if got := strings.Contains(errb.String(), "larger than the machine's 4 nodes dropped"); got != tc.warn {
				t.Errorf("warning %v, want %v: %s", got, tc.warn, errb.String())
			}
			out.Reset()
			if code := Sim(context.Background(), base, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if !strings.Contains(out.String(), tc.text) {
				t.Errorf("text report lacks %q:\n%s", tc.text, out.String())
			}
		})
	}
	var out, errb bytes.Buffer
	if code := Sim(context.Background(), []string{"--workload", "thesis-1", "--procs-per-node", "8"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "--procs-per-node applies to SWF traces only") {
		if !strings.Contains(errb.String(), "not found") {
			t.Errorf("--procs-per-node on a thesis list: exit %d: %s", code, errb.String())
		}
	}
	if code := Sim(context.Background(), []string{"--workload", trace, "--procs-per-node", "-1"}, &out, &errb); code != 2 {
		t.Errorf("negative --procs-per-node: exit %d", code)
	}
}

// TestSimThesisLarger: a thesis-format list written for a larger machine
// than the thesis's 24 nodes runs with --nodes; its jobs were capped at 24
// (a NodeNum above it was a malformed line, skipped). A job larger than the
// machine is the documented error naming file and line.
func TestSimThesisLarger(t *testing.T) {
	list := filepath.Join(t.TempDir(), "big.txt")
	in := "NodeNum=16 Type=Normal TimeLimit=1:00:00 RealTime=1800 SubmitTimeStamp=0\n" +
		"NodeNum=30 Type=Normal TimeLimit=1:00:00 RealTime=1800 SubmitTimeStamp=1000\n" +
		"NodeNum=8 Type=Calibration TimeLimit=2:00:00 RealTime=3600 SubmitTimeStamp=2000\n"
	if err := os.WriteFile(list, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{name: "machine given", args: []string{"--nodes", "32"}},
		{name: "the thesis's 24 nodes", code: 1, err: list + ":2: job 2 needs 30 nodes, more than the machine's 24; give the machine's node count with --nodes"},
		{name: "too small", args: []string{"--nodes", "28"}, code: 1, err: list + ":2: job 2 needs 30 nodes, more than the machine's 28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"--workload", list, "--mode", "fair", "--json"}, tc.args...)
			if code := Sim(context.Background(), args, &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.err) {
				t.Fatalf("exit %d, want %d; stderr %q, want %q", code, tc.code, errb.String(), tc.err)
			}
			if tc.code != 0 {
				return
			}
			var rep struct {
				Nodes int
				Input struct{ Jobs int }
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Nodes != 32 || rep.Input.Jobs != 3 || strings.Contains(errb.String(), "skipped") {
				t.Errorf("report on %d nodes with %d jobs; stderr %s", rep.Nodes, rep.Input.Jobs, errb.String())
			}
		})
	}
}

// TestSimTaskBounds: --task-time, --tasks and --backlog that would make
// more tasks than the simulator holds are refused before anything runs, in
// one line naming the flag and what would fit (a millisecond task time
// used to take gigabytes within seconds, a nanosecond backlog hours).
func TestSimTaskBounds(t *testing.T) {
	list := filepath.Join(t.TempDir(), "cal.txt")
	in := "NodeNum=4 Type=Normal TimeLimit=1:00:00 RealTime=1800 SubmitTimeStamp=0\n" +
		"NodeNum=5 Type=Calibration TimeLimit=5:00:00 RealTime=14400 SubmitTimeStamp=1000\n"
	if err := os.WriteFile(list, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--task-time", "1ms"}, "glean sim: --task-time 1ms: 72000000 tasks in the 1 calibration jobs, more than the 1000000 the simulator allows; give --task-time 1s or longer\n"},
		{[]string{"--tasks", "2000000"}, "glean sim: --tasks 2000000: 2000000 tasks in the 1 calibration jobs, more than the 1000000 the simulator allows; give --tasks 1000000 or fewer\n"},
		{[]string{"--backlog", "1ns"}, "glean sim: --backlog 1ns: the backlog could run 4.32e+13 tasks (24 nodes, until 30 min after the last submission), more than the 50000000 the simulator allows; give --backlog 1s or longer\n"},
	} {
		var out, errb bytes.Buffer
		if code := Sim(context.Background(), append([]string{"--workload", list}, tc.args...), &out, &errb); code != 2 || errb.String() != tc.err || out.Len() > 0 {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb.String(), tc.err)
		}
	}
}

// TestSimPlots: the utilization and Gantt charts in PNG and SVG.
func TestSimPlots(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := Sim(context.Background(), []string{"--workload", "thesis-1", "--mode", "fair", "--plots", dir}, &out, &errb); code != 0 {
		if strings.Contains(errb.String(), "not found") {
			t.Skip(errb.String())
		}
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"utilization-fair.png", "utilization-fair.svg", "gantt-fair.png", "gantt-fair.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if strings.HasSuffix(f, ".svg") != bytes.Contains(b[:min(len(b), 512)], []byte("<svg")) {
			t.Errorf("%s is not what its extension says", f)
		}
	}
}

// TestSimBuiltInLists: thesis-1 and thesis-2 are built into glean, so glean
// sim with its default workload runs from any directory of an installed
// system (it used to look for ../shared/workloads above the working
// directory, which only the project's tree has).
func TestSimBuiltInLists(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"--mode", "slurm"}, {"--mode", "slurm", "--workload", "thesis-2"}} {
		var out, errb bytes.Buffer
		want := "workload thesis-submit-list-1.txt, 24 nodes"
		if len(args) > 2 {
			want = "workload thesis-submit-list-2.txt, 24 nodes"
		}
		if code := Sim(context.Background(), args, &out, &errb); code != 0 || !strings.Contains(out.String(), want) {
			t.Errorf("glean sim %v: exit %d: %s\n%s", args, code, errb.String(), out.String())
		}
	}
}
