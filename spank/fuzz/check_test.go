package spankfuzz

import (
	"strings"
	"testing"
)

var keys = map[string]bool{"mode": true, "dir": true, "batch": true, "checkpoint": true, "pty": true,
	"deadline": true, "budget": true, "profile": true}

// FuzzCheck: whatever the value, check() returns without a crash; an
// accepted value is comma-separated key=value with known keys, each once,
// non-empty values of at most 2048 bytes in all; a refusal is one
// printable line naming what is wrong.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "mode=fair", "mode=fair,checkpoint=yes,pty=no", "dir=/data/x,batch=10",
		"deadline=2026-01-01T00:00:00", "budget=1.5", "profile=calib-v2", "mode=thesis,mode=fair", "mode=",
		"bogus=1", "mode", ",", "=,", "batch=0", "budget=1..2", "dir=a b", strings.Repeat("a", 3000), "mode=fair\x00x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.IndexByte(v, 0) >= 0 {
			v = v[:strings.IndexByte(v, 0)] // what C sees
		}
		ok, why := CheckValue(v)
		if !ok {
			if why == "" || strings.ContainsAny(why, "\n\r") || len(why) >= 511 {
				t.Fatalf("refused %q with a reason that is not one line: %q", v, why)
			}
			return
		}
		if v == "" {
			return
		}
		if len(v) > 2048 {
			t.Fatalf("accepted %d bytes", len(v))
		}
		seen := map[string]bool{}
		for _, item := range strings.Split(v, ",") {
			k, val, found := strings.Cut(item, "=")
			if !found || !keys[k] || seen[k] || val == "" {
				t.Fatalf("accepted %q: item %q", v, item)
			}
			seen[k] = true
		}
	})
}

// The refusals users see, as tests/spank checks them against sbatch.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		v    string
		ok   bool
		want string
	}{
		{"mode=fair,checkpoint=yes", true, ""},
		{"mode=fast", false, "bad value 'fast' for key 'mode'"},
		{"mode=fair,mode=fair", false, "key 'mode' given twice"},
		{"colour=red", false, "unknown key 'colour'"},
		{"batch=0", false, "bad value '0' for key 'batch'"},
	} {
		ok, why := CheckValue(tc.v)
		if ok != tc.ok || !strings.Contains(why, tc.want) {
			t.Errorf("check(%q) = %v %q, want %v %q", tc.v, ok, why, tc.ok, tc.want)
		}
	}
}
