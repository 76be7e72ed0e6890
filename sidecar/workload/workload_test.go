package workload

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sharedDir holds the project's reference workloads, relative to this package.
const sharedDir = "../../../shared/workloads"

func TestParseSlurmDuration(t *testing.T) {
	h, m, s := time.Hour, time.Minute, time.Second
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "1:57:57", want: 1*h + 57*m + 57*s},
		{in: "3:20:2", want: 3*h + 20*m + 2*s},
		{in: "0:58:50", want: 58*m + 50*s},
		{in: "100:00:00", want: 100 * h},
		{in: "UNLIMITED", want: Unlimited},
		{in: "infinite", want: Unlimited},
		{in: "90", want: 90 * m},
		{in: "90:30", want: 90*m + 30*s},
		{in: "2-12", want: 60 * h},
		{in: "2-12:30", want: 60*h + 30*m},
		{in: "1-00:00:01", want: 24*h + s},
		{in: "", bad: true},
		{in: "1:60:00", bad: true},
		{in: "1:00:60", bad: true},
		{in: "1-24", bad: true},
		{in: "1:2:3:4", bad: true},
		{in: "-5", bad: true},
		{in: "+5", bad: true},
		{in: "1::3", bad: true},
		{in: "a:b:c", bad: true},
		{in: "99999999999:00:00", bad: true},
		{in: "1-", bad: true},
	} {
		got, err := parseSlurmDuration(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: got %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestReadThesis(t *testing.T) {
	in := `# comment
NodeNum=4 Type=Normal TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405

NodeNum=5 Type=Calibration TimeLimit=4:00:01 RealTime=14400 SubmitTimeStamp=13125
NodeNum=4 Type=Normal TimeLimit=3:20:2 RealTime=12002 SubmitTimeStamp=6235156
NodeNum=6 Type=Normal TimeLimit=UNLIMITED RealTime=5017 SubmitTimeStamp=11996676
`
	w, err := ReadThesis(strings.NewReader(in), "list")
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{ID: 1, Submit: 3405 * time.Millisecond, Run: 7077 * time.Second, Nodes: 4, Limit: time.Hour + 57*time.Minute + 57*time.Second, Line: 2},
		{ID: 2, Submit: 13125 * time.Millisecond, Run: 14400 * time.Second, Nodes: 5, Limit: 4*time.Hour + time.Second, Kind: Calibration, Line: 4},
		{ID: 3, Submit: 6235156 * time.Millisecond, Run: 12002 * time.Second, Nodes: 4, Limit: 3*time.Hour + 20*time.Minute + 2*time.Second, Line: 5},
		{ID: 4, Submit: 11996676 * time.Millisecond, Run: 5017 * time.Second, Nodes: 6, Limit: Unlimited, Line: 6},
	}
	if w.Nodes != ThesisNodes || w.Name != "list" || len(w.Jobs) != len(want) {
		t.Fatalf("got %+v", w)
	}
	for i := range want {
		if w.Jobs[i] != want[i] {
			t.Errorf("job %d: got %+v, want %+v", i, w.Jobs[i], want[i])
		}
	}
}

func TestReadThesisShared(t *testing.T) {
	for _, tc := range []struct {
		file       string
		jobs, cals int
	}{
		{"thesis-submit-list-1.txt", 19, 4},
		{"thesis-submit-list-2.txt", 24, 8},
	} {
		f, err := os.Open(filepath.Join(sharedDir, tc.file))
		if err != nil {
			t.Skip(err)
		}
		w, err := ReadThesis(f, tc.file, Options{Strict: true})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		cals := 0
		for _, j := range w.Jobs {
			if j.Kind == Calibration {
				cals++
			}
		}
		if len(w.Jobs) != tc.jobs || cals != tc.cals {
			t.Errorf("%s: %d jobs, %d calibration; want %d, %d", tc.file, len(w.Jobs), cals, tc.jobs, tc.cals)
		}
	}
}

// badLines checks that err lists exactly the wanted line numbers, each as
// "name:line: ...".
func badLines(t *testing.T, err error, name string, want ...int) {
	t.Helper()
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("got %v, want *Errors", err)
	}
	var got []int
	for _, le := range es.Lines {
		got = append(got, le.Line)
		if p := name + ":"; !strings.HasPrefix(le.Error(), p) {
			t.Errorf("%q does not start with %q", le.Error(), p)
		}
	}
	if es.Total != len(want) || len(got) != len(want) {
		t.Fatalf("bad lines %v (total %d), want %v\n%v", got, es.Total, want, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("bad lines %v, want %v\n%v", got, want, err)
		}
	}
}

// TestReadThesisLarger: NodeNum is not capped at the thesis's 24 nodes; the
// machine is at least the largest job, for the caller to replace.
func TestReadThesisLarger(t *testing.T) {
	in := "NodeNum=4 Type=Normal TimeLimit=1:00:00 RealTime=60 SubmitTimeStamp=0\nNodeNum=100 Type=Calibration TimeLimit=1:00:00 RealTime=60 SubmitTimeStamp=0\n"
	w, err := ReadThesis(strings.NewReader(in), "big.txt", Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Jobs) != 2 || w.Jobs[1].Nodes != 100 || w.Nodes != 100 {
		t.Fatalf("machine %d, jobs %+v", w.Nodes, w.Jobs)
	}
	w, err = ReadThesis(strings.NewReader(in[:strings.IndexByte(in, '\n')+1]), "small.txt", Options{Strict: true})
	if err != nil || w.Nodes != ThesisNodes {
		t.Fatalf("machine %d (%v), want the thesis's %d", w.Nodes, err, ThesisNodes)
	}
}

func TestReadThesisBad(t *testing.T) {
	in := `NodeNum=4 Type=Normal TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405
NodeNum=0 Type=Normal TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405
NodeNum=4 Type=Weird TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405
NodeNum=4 Type=Normal TimeLimit=1:77:57 RealTime=7077 SubmitTimeStamp=3405
NodeNum=4 Type=Normal TimeLimit=1:57:57 SubmitTimeStamp=3405
NodeNum=4 NodeNum=4 Type=Normal TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405
NodeNum=4 Type=Normal TimeLimit=1:57:57 RealTime=-1 SubmitTimeStamp=3405
NodeNum=4 Type=Normal TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405 Color=red
garbage
NodeNum=2147483649 Type=Normal TimeLimit=1:57:57 RealTime=7077 SubmitTimeStamp=3405
NodeNum=2 Type=Normal TimeLimit=1:00:00 RealTime=60 SubmitTimeStamp=5000
`
	w, err := ReadThesis(strings.NewReader(in), "t.txt")
	badLines(t, err, "t.txt", 2, 3, 4, 5, 6, 7, 8, 9, 10)
	if w == nil || len(w.Jobs) != 2 || w.Jobs[1].ID != 11 || w.Jobs[1].Line != 11 {
		t.Fatalf("lenient read kept %+v", w)
	}
	if !strings.Contains(err.Error(), "t.txt:5: missing RealTime") {
		t.Errorf("message: %v", err)
	}

	w, err = ReadThesis(strings.NewReader(in), "t.txt", Options{Strict: true})
	var le *LineError
	if w != nil || !errors.As(err, &le) || le.Line != 2 || le.File != "t.txt" {
		t.Fatalf("strict: got %v, %v", w, err)
	}
}

const swfText = `; Version: 2.2
; UnixStartTime: 843480031
; MaxNodes: 4
; MaxProcs: 32
    1   0   10   100   8  -1 -1   8   200  -1 1 12 12 -1 -1 -1 -1 -1
    2   5   -1   50   -1  -1 -1  16    -1  -1 1 13 13 -1 -1 -1 -1 -1
    3   7   -1   -1    4  -1 -1   4    60  -1 0 14 14 -1 -1 -1 -1 -1
    4   9   -1   30   -1  -1 -1  -1    60  -1 0 14 14 -1 -1 -1 -1 -1
    5  11   -1   30   64  -1 -1  64    60  -1 0 14 14 -1 -1 -1 -1 -1
    6  12   -1   30    9  1.5 -1   9    60  -1 0 -1 14 -1 -1 -1 -1 -1
`

func TestReadSWF(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(swfText))
	zw.Close()
	// The jobs that fit, counted in processors and in nodes of 8.
	procs := []Job{
		{ID: 1, Submit: 0, Run: 100 * time.Second, Nodes: 8, Limit: 200 * time.Second, User: "12", Line: 5},
		{ID: 2, Submit: 5 * time.Second, Run: 50 * time.Second, Nodes: 16, User: "13", Line: 6},
		{ID: 6, Submit: 12 * time.Second, Run: 30 * time.Second, Nodes: 9, Limit: 60 * time.Second, Line: 10},
	}
	nodes := []Job{
		{ID: 1, Submit: 0, Run: 100 * time.Second, Nodes: 1, Limit: 200 * time.Second, User: "12", Line: 5},
		{ID: 2, Submit: 5 * time.Second, Run: 50 * time.Second, Nodes: 2, User: "13", Line: 6},
		{ID: 6, Submit: 12 * time.Second, Run: 30 * time.Second, Nodes: 2, Limit: 60 * time.Second, Line: 10},
	}
	for _, tc := range []struct {
		name          string
		in            []byte
		opts          SWFOptions
		nodes         int
		ppn, tooLarge int
		want          []Job
	}{
		{
			name:  "processors",
			in:    []byte(swfText),
			nodes: 32, ppn: 1, tooLarge: 1,
			want: procs,
		},
		{
			name:  "gzip",
			in:    gz.Bytes(),
			nodes: 32, ppn: 1, tooLarge: 1,
			want: procs,
		},
		{
			name:  "nodes",
			in:    []byte(swfText),
			opts:  SWFOptions{ProcsPerNode: 8},
			nodes: 4, ppn: 8, tooLarge: 1,
			want: nodes,
		},
		{
			// The header's MaxProcs 32 / MaxNodes 4: 8 per node.
			name:  "nodes from the header",
			in:    []byte(swfText),
			opts:  SWFOptions{ProcsPerNode: ProcsPerNodeFromHeader},
			nodes: 4, ppn: 8, tooLarge: 1,
			want: nodes,
		},
		{
			// MaxProcs not a multiple of MaxNodes: processors.
			name:  "uneven header",
			in:    []byte(strings.Replace(swfText, "MaxProcs: 32", "MaxProcs: 30", 1)),
			opts:  SWFOptions{ProcsPerNode: ProcsPerNodeFromHeader},
			nodes: 30, ppn: 1, tooLarge: 1,
			want: procs,
		},
		{
			name:  "override",
			in:    []byte(swfText),
			opts:  SWFOptions{Nodes: 8},
			nodes: 8, ppn: 1, tooLarge: 3,
			want: []Job{
				{ID: 1, Submit: 0, Run: 100 * time.Second, Nodes: 8, Limit: 200 * time.Second, User: "12", Line: 5},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ReadSWF(bytes.NewReader(tc.in), "x.swf", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if w.Nodes != tc.nodes || w.Start != time.Unix(843480031, 0).UTC() {
				t.Errorf("machine %d start %v, want %d", w.Nodes, w.Start, tc.nodes)
			}
			if len(w.Jobs) != len(tc.want) || w.Dropped != 6-len(tc.want) || w.TooLarge != tc.tooLarge || w.ProcsPerNode != tc.ppn {
				t.Fatalf("got %d jobs, %d dropped (%d too large), %d per node: %+v", len(w.Jobs), w.Dropped, w.TooLarge, w.ProcsPerNode, w.Jobs)
			}
			for i := range tc.want {
				if w.Jobs[i] != tc.want[i] {
					t.Errorf("job %d: got %+v, want %+v", i, w.Jobs[i], tc.want[i])
				}
			}
		})
	}
}

func TestReadSWFBad(t *testing.T) {
	in := `; MaxProcs: many
1 0 -1 100 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 -1
2 0 -1 100 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1
3 0 -1 100 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 -1 -1
4 -3 -1 100 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 -1
5 0 -1 100 eight -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 -1
6 0 -1 100 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 x
7 0 -1 -7 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 -1
8 0 -1 99999999999999 8 -1 -1 8 200 -1 1 12 12 -1 -1 -1 -1 -1
`
	w, err := ReadSWF(strings.NewReader(in), "bad.swf", SWFOptions{})
	badLines(t, err, "bad.swf", 1, 3, 4, 5, 6, 7, 8, 9)
	if w == nil || len(w.Jobs) != 1 || w.Nodes != 8 {
		t.Fatalf("lenient read kept %+v", w)
	}
	if !strings.Contains(err.Error(), "bad.swf:3: 17 fields, want 18") {
		t.Errorf("message: %v", err)
	}
	if _, err := ReadSWF(strings.NewReader(in), "bad.swf", SWFOptions{Options: Options{Strict: true}}); err == nil {
		t.Fatal("strict read accepted bad input")
	}
	// A broken gzip stream fails the read whatever the mode.
	if _, err := ReadSWF(bytes.NewReader([]byte{0x1f, 0x8b, 8, 0, 0}), "z.swf.gz", SWFOptions{}); err == nil {
		t.Fatal("accepted a broken gzip stream")
	}
	// So does a line longer than maxLine.
	long := strings.Repeat("1", maxLine+10)
	var le *LineError
	if _, err := ReadSWF(strings.NewReader("; x\n"+long), "long.swf", SWFOptions{}); !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("long line: %v", err)
	}
}

func TestReadSWFShared(t *testing.T) {
	for _, tc := range []struct {
		file        string
		ppn         int
		nodes, jobs int
	}{
		{"KTH-SP2-1996-2.1-cln.swf.gz", 0, 100, 28467},
		{"LLNL-Atlas-2006-2.1-cln.swf.gz", 0, 9216, 36600},
		{"LLNL-Atlas-2006-2.1-cln.swf.gz", 8, 1152, 36600},
		{"LLNL-Atlas-2006-2.1-cln.swf.gz", ProcsPerNodeFromHeader, 1152, 36600},
		{"KTH-SP2-1996-2.1-cln.swf.gz", ProcsPerNodeFromHeader, 100, 28467},
		{"lublin_256.swf.gz", ProcsPerNodeFromHeader, 256, 10000},
		{"lublin_256.swf.gz", 0, 256, 10000},
	} {
		f, err := os.Open(filepath.Join(sharedDir, tc.file))
		if err != nil {
			t.Skip(err)
		}
		w, err := ReadSWF(f, tc.file, SWFOptions{Options: Options{Strict: true}, ProcsPerNode: tc.ppn})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if w.Nodes != tc.nodes || len(w.Jobs) != tc.jobs {
			t.Errorf("%s/%d: machine %d, %d jobs; want %d, %d", tc.file, tc.ppn, w.Nodes, len(w.Jobs), tc.nodes, tc.jobs)
		}
	}
}

func TestReadSacct(t *testing.T) {
	in := `101|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|2|60|COMPLETED|alice
102|2024-01-02T03:00:00|Unknown|Unknown|1|30|PENDING|bob
103|2024-01-02T03:10:00|2024-01-02T03:10:00|2024-01-02T03:10:00|4|UNLIMITED|CANCELLED by 1000|bob
104|2024-01-02T03:20:00|2024-01-02T03:30:00|Unknown|3|Partition_Limit|RUNNING|carol
105|2024-01-02T03:00:05|2024-01-02T03:00:06|2024-01-02T05:00:06|8|UNLIMITED|TIMEOUT|carol
106|1704164645|1704164645|1704164705|1|Partition_Limit|FAILED|dave|
107|2024-01-02T03:10:00|None|None|4|10|CANCELLED by 1000|bob
`
	w, err := ReadSacct(strings.NewReader(in), "sacct.txt", SacctOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Time 0 is the first Start (105's); 105, submitted a second before
	// it, is moved to it.
	base := time.Date(2024, 1, 2, 3, 0, 6, 0, time.UTC)
	want := []Job{
		{ID: 101, Submit: 4*time.Minute - time.Second, Run: time.Hour, Nodes: 2, Limit: time.Hour, User: "alice", Line: 1},
		{ID: 105, Submit: 0, Run: 2 * time.Hour, Nodes: 8, Limit: Unlimited, User: "carol", Line: 5},
		{ID: 106, Submit: 4*time.Minute - time.Second, Run: time.Minute, Nodes: 1, User: "dave", Line: 6},
	}
	if !w.Start.Equal(base) || w.Nodes != 8 || w.Dropped != 4 || w.Clamped != 1 || len(w.Jobs) != len(want) {
		t.Fatalf("got start %v, nodes %d, dropped %d, clamped %d, %+v", w.Start, w.Nodes, w.Dropped, w.Clamped, w.Jobs)
	}
	for i := range want {
		if w.Jobs[i] != want[i] {
			t.Errorf("job %d: got %+v, want %+v", i, w.Jobs[i], want[i])
		}
	}
}

// TestReadSacctHeld: sacct -S 2024-01-01 also prints a job submitted half
// a year before and held until January. Its submission is moved to the
// start of the period (the first Start, or SacctOptions.Since) and counted,
// instead of making time 0 half a year before anything ran.
func TestReadSacctHeld(t *testing.T) {
	in := `999|2023-07-01T00:00:00|2024-01-15T00:00:00|2024-01-15T00:10:00|1|60|COMPLETED|v
1000|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|4|120|COMPLETED|u
1001|2024-01-01T01:00:00|2024-01-01T01:00:00|2024-01-01T02:00:00|4|120|COMPLETED|u
`
	jan := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		since   time.Time
		start   time.Time
		submits []time.Duration
		clamped int
	}{
		{name: "first start", start: jan, submits: []time.Duration{0, 0, time.Hour}, clamped: 1},
		{name: "since", since: jan.Add(-time.Hour), start: jan.Add(-time.Hour), submits: []time.Duration{0, time.Hour, 2 * time.Hour}, clamped: 1},
		{name: "since later", since: jan.Add(30 * time.Minute), start: jan.Add(30 * time.Minute), submits: []time.Duration{0, 0, 30 * time.Minute}, clamped: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ReadSacct(strings.NewReader(in), "held.sacct", SacctOptions{Options: Options{Strict: true}, Since: tc.since})
			if err != nil {
				t.Fatal(err)
			}
			if !w.Start.Equal(tc.start) || w.Clamped != tc.clamped || len(w.Jobs) != len(tc.submits) {
				t.Fatalf("start %v, %d clamped, %d jobs; want %v, %d, %d", w.Start, w.Clamped, len(w.Jobs), tc.start, tc.clamped, len(tc.submits))
			}
			for i, j := range w.Jobs {
				if j.Submit != tc.submits[i] {
					t.Errorf("job %d submitted at %v, want %v", j.ID, j.Submit, tc.submits[i])
				}
			}
		})
	}
}

func TestReadSacctBad(t *testing.T) {
	in := `101|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|2|60|COMPLETED|alice
abc|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|2|60|COMPLETED|alice
103|2024-01-02 03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|2|60|COMPLETED|alice
104|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T03:00:05|2|60|COMPLETED|alice
105|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|0|60|COMPLETED|alice
106|2024-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|2|1:00:00|COMPLETED|alice
107|2024-01-02T03:04:05|2024-01-02T03:05:05
108|Unknown|2024-01-02T03:05:05|2024-01-02T04:05:05|2|60|COMPLETED|alice
109|1970-01-02T03:04:05|2024-01-02T03:05:05|2024-01-02T04:05:05|2|60|COMPLETED|alice
`
	w, err := ReadSacct(strings.NewReader(in), "s", SacctOptions{})
	badLines(t, err, "s", 2, 3, 4, 5, 6, 7, 8, 9)
	if w == nil || len(w.Jobs) != 1 {
		t.Fatalf("lenient read kept %+v", w)
	}
	for _, frag := range []string{
		`s:2: JobIDRaw: "abc" is not an integer`,
		`s:4: End 2024-01-02T03:00:05 is before Start`,
		`s:7: 3 '|'-separated fields, want 8`,
	} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("no %q in\n%v", frag, err)
		}
	}
	var le *LineError
	if _, err := ReadSacct(strings.NewReader(in), "s", SacctOptions{Options: Options{Strict: true}}); !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("strict: %v", err)
	}
}

func TestErrorsCap(t *testing.T) {
	in := strings.Repeat("junk\n", MaxErrors+50)
	w, err := ReadThesis(strings.NewReader(in), "j")
	var es *Errors
	if !errors.As(err, &es) || es.Total != MaxErrors+50 || len(es.Lines) != MaxErrors || len(w.Jobs) != 0 {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "(and 140 more bad lines)") {
		t.Errorf("message: %v", err)
	}
}

// TestThesisListCopies: the lists built into glean (lists/) are the
// project's shared ones, byte for byte, and read as the thesis's 24-node
// workloads.
func TestThesisListCopies(t *testing.T) {
	for _, n := range []string{"1", "2"} {
		mine, name, err := ThesisList(n)
		if err != nil {
			t.Fatal(err)
		}
		if w, err := ReadThesis(bytes.NewReader(mine), name, Options{Strict: true}); err != nil || w.Nodes != ThesisNodes || len(w.Jobs) == 0 {
			t.Errorf("built-in %s: %v", name, err)
		}
		shared, err := os.ReadFile(filepath.Join(sharedDir, name))
		if os.IsNotExist(err) {
			t.Logf("no %s to compare with: %v", sharedDir, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mine, shared) {
			t.Errorf("sidecar/workload/lists/%s differs from %s/%s: copy it again", name, sharedDir, name)
		}
	}
	if _, _, err := ThesisList("3"); err == nil {
		t.Error("thesis list 3 exists")
	}
}
