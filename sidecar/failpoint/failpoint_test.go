package failpoint

import "testing"

func TestHit(t *testing.T) {
	for _, tc := range []struct {
		armed string
		hits  []string
		fired int // index into hits of the hit that fires, -1 none
	}{
		{"", []string{"a", "a"}, -1},
		{"a", []string{"b", "a", "a"}, 1},
		{"a@2", []string{"a", "b", "a", "a"}, 2},
		{"a@0", []string{"a"}, -1}, // malformed: unarmed
		{"a@x", []string{"a"}, -1},
	} {
		s := Parse(tc.armed)
		fired := -1
		for i, h := range tc.hits {
			if s != nil {
				s.kill = func() { fired = i; panic("killed") }
			}
			func() {
				defer func() { _ = recover() }()
				s.Hit(h)
			}()
			if fired >= 0 {
				break
			}
		}
		if fired != tc.fired {
			t.Errorf("%q: fired at %d, want %d", tc.armed, fired, tc.fired)
		}
	}
}
