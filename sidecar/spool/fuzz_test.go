package spool

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Everything a user writes under users/ is fuzzed here: entries, the
// --export value that says which captured variables a task gets, and the
// results and leases an agent (running as the user) leaves for the
// daemon. Seed corpora live in testdata/fuzz/<FuzzName>/.

// FuzzDecodeEntry: a decoded, valid entry must survive Encode and Decode
// unchanged, and its sizes must be ones the daemon can compute with.
func FuzzDecodeEntry(f *testing.F) {
	e := testEntry(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	good, _ := e.Encode()
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"uid":0}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"version":1,"array":{"ranges":[{"start":0,"end":4000000,"step":1}]},"tasks":4000001}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEntry(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		if e.Validate(Limits{MaxTasks: 1 << 20}) != nil {
			return
		}
		r := e.Resources
		if mem := r.MemPerCPUMB * int64(r.CPUs); mem < 0 || mem/int64(r.CPUs) != r.MemPerCPUMB {
			t.Fatalf("mem_per_cpu_mb %d x cpus %d overflows", r.MemPerCPUMB, r.CPUs)
		}
		if d := time.Duration(r.TimeLimit) * time.Minute; d < 0 || int(d/time.Minute) != r.TimeLimit {
			t.Fatalf("time limit %d minutes overflows a Duration", r.TimeLimit)
		}
		if n := len(e.TaskIndices()); n != e.Tasks {
			t.Fatalf("%d indices, tasks %d", n, e.Tasks)
		}
		out, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		e2, err := DecodeEntry(bytes.NewReader(out), 1<<20)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", e, e2)
		}
	})
}

// FuzzParseExport: the agent and the wrapper both read --export with it;
// it never yields an empty item or a NONE/ALL keyword as a name.
func FuzzParseExport(f *testing.F) {
	for _, s := range []string{"", "ALL", "NONE", "nil", "A,B=1", "ALL,FOO=g", ",,", "NONE,ALL", "=x", "A=1,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, export string) {
		all, items := ParseExport(export)
		for _, it := range items {
			if it == "" || strings.EqualFold(it, "ALL") || strings.EqualFold(it, "NONE") || strings.EqualFold(it, "NIL") {
				t.Fatalf("item %q from %q", it, export)
			}
			if !strings.Contains(export, it) {
				t.Fatalf("item %q is not in %q", it, export)
			}
		}
		if strings.EqualFold(export, "ALL") && (!all || items != nil) {
			t.Fatalf("ALL: %v %v", all, items)
		}
	})
}

// FuzzDecodeResult: a result the daemon accepts names, in its content,
// exactly the task and attempt of its file name.
func FuzzDecodeResult(f *testing.F) {
	f.Add("3.a1", []byte(`{"version":1,"task":3,"attempt":"a1","pilot":"7","outcome":"exited","exit":0}`))
	f.Add("3.a1", []byte(`{"version":1,"task":4,"attempt":"a1"}`))
	f.Add("3.a1", []byte(`{"task":3,"attempt":"a1","x":1}`))
	f.Add("-1.", []byte(`{"task":-1,"attempt":""}`))
	f.Add("3.a1", []byte(`{"task":3,"attempt":"a1"} {}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		var r Result
		if err := decodeResult(name, data, &r); err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(name, "\n") {
				t.Fatalf("multi-line error: %v", err)
			}
			return
		}
		if name != fmt.Sprintf("%d.%s", r.Task, r.Attempt) || !isName(r.Attempt, 64) {
			t.Fatalf("accepted %q naming task %d attempt %q", name, r.Task, r.Attempt)
		}
	})
}

// FuzzScanWork puts fuzzed bytes where an agent writes a lease and a
// result and scans the directory as the daemon does: it never fails,
// never reports a result whose content disagrees with its name or a lease
// whose name is not a task index.
func FuzzScanWork(f *testing.F) {
	f.Add("3", []byte(`{"version":1,"task":3,"attempt":"a","pilot":"9","node":"n1","pid":7}`), "3.a", []byte(`{"version":1,"task":3,"attempt":"a","outcome":"exited"}`))
	f.Add("007", []byte("garbage"), ".tmp-3.a", []byte(`{}`))
	f.Add("-1", []byte(`{"task":5}`), "4.b", []byte(`{"version":1,"task":5,"attempt":"b"}`))
	f.Fuzz(func(t *testing.T, lease string, ldata []byte, result string, rdata []byte) {
		for _, n := range []string{lease, result} {
			if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\x00") || len(n) > 200 {
				return
			}
		}
		s := testSpool(t)
		uid := os.Getuid()
		if err := s.EnsureUserDirs(uid); err != nil {
			t.Fatal(err)
		}
		id := NewID(time.Unix(1_800_000_000, 0))
		w, err := s.OpenWork(uid, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.Dir, LeasesDir, lease), ldata, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.Dir, ResultsDir, result), rdata, 0o640); err != nil {
			t.Fatal(err)
		}
		ws, err := s.ScanWork(uid, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ws.Leases {
			if l.Task < 0 || fmt.Sprint(l.Task) != lease {
				t.Fatalf("lease %q read as task %d", lease, l.Task)
			}
		}
		for _, r := range ws.Results {
			if r.Err == nil && r.Name != fmt.Sprintf("%d.%s", r.Result.Task, r.Result.Attempt) {
				t.Fatalf("result %q accepted naming %d.%s", r.Name, r.Result.Task, r.Result.Attempt)
			}
			if r.Err == nil && r.Result.Task < 0 {
				t.Fatalf("result %q for a negative task", r.Name)
			}
		}
	})
}
