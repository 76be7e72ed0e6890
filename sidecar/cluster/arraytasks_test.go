package cluster

import "testing"

func TestParseArrayIndicesRefuses(t *testing.T) {
	for _, expr := range []string{"", "x", "5-1", "1-10:0", "3:2", "1-10%0", "1-10%", "1%x", "-1", "+1", "1-", "1,,2", "1...%"} {
		if a, err := ParseArrayIndices(expr); err == nil {
			t.Errorf("ParseArrayIndices(%q) = %+v, want an error", expr, a)
		}
	}
}

func TestArrayIndicesStep(t *testing.T) {
	// libslurm prints an evenly spaced set as one stepped range.
	a, err := ParseArrayIndices("0-999:3%5")
	if err != nil || a.Throttle != 5 || a.Cut {
		t.Fatalf("%+v %v", a, err)
	}
	if n, exact := a.Count(10000); n != 334 || !exact {
		t.Errorf("Count = %d %v, want 334", n, exact)
	}
	for i, want := range map[int]bool{0: true, 3: true, 999: true, 998: false, 1000: false, 1002: false} {
		if in, known := a.Has(i); in != want || !known {
			t.Errorf("Has(%d) = %v %v", i, in, known)
		}
	}
	// Cut before anything was shown whole: nothing is known.
	a, err = ParseArrayIndices("1000000-2...")
	if in, known := a.Has(1000000); err != nil || !a.Cut || in || known {
		t.Errorf("%+v %v: Has(1000000) = %v %v, want unknown", a, err, in, known)
	}
}

// A user's expression ("--dependency=5_[7,1-3]") need not be ascending.
func TestArrayIndicesUnsorted(t *testing.T) {
	a, err := ParseArrayIndices("7,1-3,2")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]bool{1: true, 2: true, 3: true, 7: true, 0: false, 4: false, 8: false} {
		if in, known := a.Has(i); in != want || !known {
			t.Errorf("Has(%d) = %v %v", i, in, known)
		}
	}
}

func FuzzParseArrayIndices(f *testing.F) {
	for _, s := range []string{"7", "2-9%2", "0-999:3", "2-3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59,61,67,71,73,7...",
		"3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59,61,67,71,73,79,...%4"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, expr string, i int) {
		a, err := ParseArrayIndices(expr)
		if err != nil {
			return
		}
		n, exact := a.Count(1000)
		if n < 0 || n > 1000 || exact == a.Cut {
			t.Fatalf("%q: Count = %d %v", expr, n, exact)
		}
		in, known := a.Has(i)
		if in && !known {
			t.Fatalf("%q: Has(%d) in but unknown", expr, i)
		}
		if n, _ := a.Count(10000); n < 10000 { // small enough to list: Has agrees with the list
			listed := false
			for j := range a.All() {
				listed = listed || j == i
			}
			if in != listed {
				t.Fatalf("%q: Has(%d) = %v, listed %v", expr, i, in, listed)
			}
		}
	})
}
