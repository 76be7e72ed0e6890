package slurm

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSqueueFormatMatchesFields(t *testing.T) {
	got := strings.Count(squeueFormat, "%")
	if got != len(squeueFields) {
		t.Fatalf("squeueFormat has %d fields, squeueFields %d", got, len(squeueFields))
	}
	if a := SqueueArgv(testSeal); strings.Join(a[:4], " ") != "squeue -h -a -o" || a[4] != squeueFormat+"\x1d"+testSeal+"\x1e" {
		t.Fatalf("SqueueArgv() = %q", a)
	}
	if a := SqueueAllArgv(testSeal); strings.Join(a[:6], " ") != "squeue -h -a -t all -o" || a[6] != squeueFormat+"\x1d"+testSeal+"\x1e" {
		t.Fatalf("SqueueAllArgv() = %q", a)
	}
}

// The fixture is refreshed from the real cluster by
// `go test ./tests/boundary -run TestFixtures -update-fixtures`, so these
// checks look jobs up by name and test relations, not captured ids or times.
func TestParseSqueueFixture(t *testing.T) {
	jobs, errs := ParseSqueue(bytes.NewReader(readFixture(t, "squeue.txt")), testSeal)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(jobs) != 10 {
		t.Fatalf("%d jobs, want 10", len(jobs))
	}
	byName := map[string]*cluster.Job{}
	var elements []*cluster.Job
	for i := range jobs {
		j := &jobs[i]
		if j.Name == "arr" && j.ArrayTasks != "" && !j.Pending() {
			elements = append(elements, j)
			continue
		}
		byName[j.Name] = j
	}
	running := func(j *cluster.Job) bool {
		return j.State == cluster.JobRunning && j.Reason == "None" && !j.Start.IsZero() && !j.Submit.After(j.Start)
	}
	big := byName["big"]
	if big == nil || !running(big) || big.RawState != "RUNNING" || big.NumNodes != 20 || len(big.Nodes) != 20 ||
		big.Nodes[0] != "c1" || big.Nodes[19] != "c20" || big.TimeLimit != 5*time.Minute ||
		!big.End.Equal(big.Start.Add(5*time.Minute)) || big.Priority <= 0 || big.User != "root" ||
		big.Partition != "batch" || big.ArrayJobID != big.ID || big.ArrayTasks != "" || big.Comment != "" || big.SchedNodes != nil {
		t.Errorf("big = %+v", big)
	}
	unl := byName["unl"]
	if unl == nil || !running(unl) || unl.TimeLimit != cluster.Unlimited || !unl.End.IsZero() || len(unl.Nodes) != 1 {
		t.Errorf("unl = %+v", unl)
	}
	held := byName["held"]
	if held == nil || held.Reason != "JobHeldUser" || !held.Pending() || held.Nodes != nil || !held.Start.IsZero() || held.Priority != 0 {
		t.Errorf("held = %+v", held)
	}
	arr := byName["arr"] // the pending rest of the array
	if arr == nil || arr.ArrayJobID != arr.ID || arr.ArrayTasks != "2-9%2" || !arr.Pending() ||
		arr.Reason != "JobArrayTaskLimit" || arr.TimeLimit != 3*time.Minute || arr.Comment != `pilot:{"a":1} x|y` {
		t.Fatalf("arr = %+v", arr)
	}
	if len(elements) != 2 {
		t.Fatalf("%d running array elements, want 2", len(elements))
	}
	for i, e := range elements {
		if e.ArrayJobID != arr.ID || e.ID == arr.ID || e.ArrayTasks != fmt.Sprint(i) || !running(e) {
			t.Errorf("array element %d = %+v", i, e)
		}
	}
	multi := byName["multi\nline"]
	if multi == nil || multi.Comment != "a\nb\x1fc" || multi.TimeLimit != cluster.Unlimited || !multi.Pending() {
		t.Errorf("multi-line job = %+v", multi)
	}
	pil := byName["pil"]
	if pil == nil || !running(pil) || pil.Partition != "pilot" || pil.TimeLimit != 2*time.Minute ||
		len(pil.Nodes) != 1 || !pil.End.Equal(pil.Start.Add(2*time.Minute)) {
		t.Errorf("pil = %+v", pil)
	}
	// blocker needs all 24 nodes, one of which runs an UNLIMITED job: Slurm
	// plans it a year out, without nodes.
	blocker := byName["blocker"]
	if blocker == nil || blocker.NumNodes != 24 || blocker.Reason != "Resources" || blocker.TimeLimit != 10*time.Minute ||
		blocker.Start.Before(big.End.Add(300*24*time.Hour)) || !blocker.End.Equal(blocker.Start.Add(10*time.Minute)) {
		t.Errorf("blocker = %+v", blocker)
	}
	// wide is planned where the array elements and the pilot end.
	wide := byName["wide"]
	if wide == nil || !wide.Pending() || wide.NumNodes != 3 || len(wide.SchedNodes) != 3 || wide.Start.IsZero() ||
		wide.Start.Before(pil.End) || wide.Start.Before(elements[0].End) {
		t.Errorf("wide = %+v", wide)
	}
}

// rec builds one squeue record from the "big" job with some fields replaced.
// testSeal is the seal the fixtures were captured with (tests/boundary
// TestFixtures uses the same word).
const testSeal = "fixture"

func rec(repl map[int]string) string {
	f := strings.Split("1\x1f1\x1fN/A\x1fRUNNING\x1fNone\x1fbatch\x1f20\x1fc[1-20]\x1f(null)\x1f5:00\x1f1795317644\x1f1795317645\x1f1795317945\x1f4294901759\x1froot\x1fbig\x1f(null)", "\x1f")
	for i, v := range repl {
		f[i] = v
	}
	return strings.Join(f, "\x1f") + sealEnd(testSeal)
}

func TestParseSqueueBadRecords(t *testing.T) {
	tests := []struct {
		name string
		rec  string
		want string // error text; "" for none
	}{
		{"good", rec(map[int]string{0: "2"}), ""},
		{"time limit", rec(map[int]string{9: "1:xx"}), `squeue record 2: field TimeLimit: bad time "1:xx"`},
		{"job id", rec(map[int]string{0: "12a"}), `squeue record 2: field JobID: bad job id "12a"`},
		{"zero job id", rec(map[int]string{0: "0"}), `field JobID: bad job id "0"`},
		{"state", rec(map[int]string{3: "running!"}), `field State: bad state "running!"`},
		{"partition", rec(map[int]string{5: ""}), `field Partition: empty`},
		{"num nodes", rec(map[int]string{6: "-1"}), `field NumNodes: bad node count "-1"`},
		{"node list", rec(map[int]string{7: "c[1-"}), `field NodeList: bad hostlist "c[1-": unclosed '['`},
		{"sched nodes", rec(map[int]string{8: "c[2-1]"}), `field SchedNodes: bad hostlist "c[2-1]": bad range "2-1"`},
		{"submit not epoch", rec(map[int]string{10: "2026-11-22T03:20:38"}), `field SubmitTime: bad time "2026-11-22T03:20:38"`},
		{"start", rec(map[int]string{11: "x"}), `field StartTime: bad time "x"`},
		{"end", rec(map[int]string{12: "-5"}), `field EndTime: bad time "-5"`},
		{"priority", rec(map[int]string{13: "1e9"}), `field Priority: bad priority "1e9"`},
		{"user", rec(map[int]string{14: ""}), `field User: empty`},
		{"array index", rec(map[int]string{2: "a-b"}), `field ArrayTaskID: bad array index "a-b"`},
		{"array throttle", rec(map[int]string{2: "2-9%"}), `field ArrayTaskID: bad array index "2-9%"`},
		{"array cut inside", rec(map[int]string{2: "2-3,...,9"}), `field ArrayTaskID: bad array index "2-3,...,9"`},
		{"too few fields", "1\x1f2" + sealEnd(testSeal), `squeue record 2: 2 fields, want 17`},
		{"truncated", strings.TrimSuffix(rec(nil), sealEnd(testSeal)), `squeue record 2: truncated: "1\x1f1\x1fN/A`},
		{"duplicate id", rec(map[int]string{15: "again"}), `squeue record 2: duplicate job id 1 (also record 1)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The bad record sits between two good ones that must survive.
			in := rec(nil) + tc.rec + rec(map[int]string{0: "77"})
			if tc.name == "truncated" {
				in = rec(nil) + tc.rec
			}
			jobs, errs := ParseSqueue(strings.NewReader(in), testSeal)
			if tc.want == "" {
				if len(errs) != 0 || len(jobs) != 3 {
					t.Fatalf("jobs %d, errs %v", len(jobs), errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errs = %v, want one containing %q", errs, tc.want)
			}
			if len(jobs) == 0 || jobs[0].ID != "1" || tc.name != "truncated" && jobs[len(jobs)-1].ID != "77" {
				t.Fatalf("good records lost: %+v", jobs)
			}
		})
	}
}

func TestParseSqueueLenientValues(t *testing.T) {
	tests := []struct {
		field int
		val   string
		check func(j cluster.Job) bool
	}{
		{9, "NOT_SET", func(j cluster.Job) bool { return j.TimeLimit == 0 }},
		{9, "Partition_Limit", func(j cluster.Job) bool { return j.TimeLimit == 0 }},
		{9, "INVALID", func(j cluster.Job) bool { return j.TimeLimit == 0 }},
		{9, "2-00:00:00", func(j cluster.Job) bool { return j.TimeLimit == 48*time.Hour }},
		{9, "1:00:00", func(j cluster.Job) bool { return j.TimeLimit == time.Hour }},
		{3, "PREEMPTED", func(j cluster.Job) bool { return j.State == cluster.JobOther && j.RawState == "PREEMPTED" }},
		{3, "COMPLETING", func(j cluster.Job) bool { return j.State == cluster.JobCompleting && j.Holds() }},
		{1, "N/A", func(j cluster.Job) bool { return j.ArrayJobID == "1" }},
		{12, "Unknown", func(j cluster.Job) bool { return j.End.IsZero() }},
		{7, "(null)", func(j cluster.Job) bool { return j.Nodes == nil }},
		{8, "c[3-4]", func(j cluster.Job) bool { return len(j.SchedNodes) == 2 && j.SchedNodes[1] == "c4" }},
		{16, "x\x1fy", func(j cluster.Job) bool { return j.Comment == "x\x1fy" }},
	}
	for _, tc := range tests {
		jobs, errs := ParseSqueue(strings.NewReader(rec(map[int]string{tc.field: tc.val})), testSeal)
		if len(errs) != 0 || len(jobs) != 1 || !tc.check(jobs[0]) {
			t.Errorf("field %s = %q: jobs %+v errs %v", squeueFields[tc.field], tc.val, jobs, errs)
		}
	}
}

// Every state name libslurm 22.05 prints (job_state_string, called from
// a C program against the installed libslurmfull.so: each base state, and
// PENDING with each flag), and whether the job can still run.
func TestJobEnded(t *testing.T) {
	for state, ended := range map[string]bool{
		"PENDING": false, "RUNNING": false, "SUSPENDED": false, "COMPLETED": true, "CANCELLED": true,
		"FAILED": true, "TIMEOUT": true, "NODE_FAIL": true, "PREEMPTED": true, "BOOT_FAIL": true,
		"DEADLINE": true, "OUT_OF_MEMORY": true,
		"COMPLETING": false, "STAGE_OUT": false, "CONFIGURING": false, "RESIZING": false, "REQUEUED": false,
		"REQUEUE_FED": false, "REQUEUE_HOLD": false, "STOPPED": false, "RESV_DEL_HOLD": false, "SIGNALING": false,
		"SPECIAL_EXIT":  false, // requeued and held after a RequeueExitHold exit code, until released
		"REVOKED":       true,  // a federation sibling: the job runs on another cluster
		"SOMETHING_NEW": true,
	} {
		if got := JobEnded(state); got != ended {
			t.Errorf("JobEnded(%s) = %v, want %v", state, got, ended)
		}
	}
}

func TestParseSqueueEmpty(t *testing.T) {
	for _, in := range []string{"", "\n", "  \n"} {
		if jobs, errs := ParseSqueue(strings.NewReader(in), testSeal); len(jobs) != 0 || len(errs) != 0 {
			t.Errorf("%q: %v %v", in, jobs, errs)
		}
	}
}

// squeue10k is a synthetic 10,000-job output from the fixture's records
// with fresh ids.
func squeue10k(b testing.TB) []byte {
	recs := strings.SplitAfter(string(readFixture(b, "squeue.txt")), sealEnd(testSeal))
	recs = recs[:len(recs)-1]
	var buf bytes.Buffer
	for i := 0; i < 10000; i++ {
		r := recs[i%len(recs)]
		_, rest, _ := strings.Cut(r, fieldSep)
		fmt.Fprintf(&buf, "%d%s%s", 100000+i, fieldSep, rest)
	}
	return buf.Bytes()
}

func BenchmarkParseSqueue10k(b *testing.B) {
	data := squeue10k(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		jobs, errs := ParseSqueue(bytes.NewReader(data), testSeal)
		if len(jobs) != 10000 || len(errs) != 0 {
			b.Fatalf("%d jobs, errs %v", len(jobs), errs[:min(3, len(errs))])
		}
	}
}

// squeue_cut.txt is hand-made in squeue.txt's shape around %K values that
// libslurmfull 22.05.8's xlate_array_task_str printed (the code squeue
// prints %K with): pending arrays of another user whose index lists
// Slurm cut at SLURM_BITSTR_LEN (64 unless set) and ended with "...",
// before the throttle; a stepped one; one printed whole
// (SLURM_BITSTR_LEN=0); a started element. Every record is a job: one
// cut list must not cost the snapshot its completeness.
func TestParseSqueueCutArrayIndices(t *testing.T) {
	jobs, errs := ParseSqueue(bytes.NewReader(readFixture(t, "squeue_cut.txt")), testSeal)
	if len(errs) != 0 || len(jobs) != 6 {
		t.Fatalf("%d jobs, errors %v", len(jobs), errs)
	}
	byName := map[string]cluster.Job{}
	for _, j := range jobs {
		if j.Pending() {
			byName[j.Name] = j
		}
	}
	tests := []struct {
		name       string
		in, out    []int // indices known to be in it, known not to be
		unknown    []int // past what Slurm printed
		throttle   int
		cut        bool
		shownCount int
	}{
		{"primes", []int{2, 3, 71, 73}, []int{0, 4, 72}, []int{74, 79, 97, 1000}, 0, true, 21},
		{"primes4", []int{3, 79}, []int{2, 78}, []int{80, 83}, 4, true, 21},
		{"ranges", []int{0, 5, 10, 30, 190, 210}, []int{6, 9, 31, 189}, []int{211, 220, 240, 260}, 0, true, 6 + 7*21},
		{"evens", []int{1000, 1002, 1100}, []int{999, 1001, 1099, 1101, 1102}, nil, 0, false, 51},
		{"whole", []int{2, 79, 97}, []int{4, 98, 100}, nil, 0, false, 25},
	}
	for _, tc := range tests {
		j, ok := byName[tc.name]
		if !ok {
			t.Errorf("%s: no pending record", tc.name)
			continue
		}
		a, err := cluster.ParseArrayIndices(j.ArrayTasks)
		if err != nil || a.Cut != tc.cut || a.Throttle != tc.throttle {
			t.Errorf("%s: %q: %+v %v", tc.name, j.ArrayTasks, a, err)
			continue
		}
		for _, i := range tc.in {
			if in, known := a.Has(i); !in || !known {
				t.Errorf("%s: Has(%d) = %v, %v; want in", tc.name, i, in, known)
			}
		}
		for _, i := range tc.out {
			if in, known := a.Has(i); in || !known {
				t.Errorf("%s: Has(%d) = %v, %v; want known not in", tc.name, i, in, known)
			}
		}
		for _, i := range tc.unknown {
			if _, known := a.Has(i); known {
				t.Errorf("%s: Has(%d) known; Slurm cut the list before it", tc.name, i)
			}
		}
		if n, exact := a.Count(1 << 20); n != tc.shownCount || exact == tc.cut {
			t.Errorf("%s: Count = %d, exact %v; want %d, exact %v", tc.name, n, exact, tc.shownCount, !tc.cut)
		}
	}
	for _, j := range jobs {
		if j.ID == "14" && (j.ArrayJobID != "12" || j.ArrayTasks != "2" || j.Pending()) {
			t.Errorf("started element = %+v", j)
		}
	}
}
