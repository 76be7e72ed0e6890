package slurm

import (
	"fmt"
	"strings"
	"testing"
)

// depString prints a parsed dependency back in one form, for comparison.
func depString(d Dependency) string {
	var b strings.Builder
	if d.Any {
		b.WriteString("any ")
	}
	for i, c := range d.Conds {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%s", c.Type, c.Job)
		if c.Tasks != nil {
			var idx []string
			for t := range c.Tasks.All() {
				idx = append(idx, fmt.Sprint(t))
			}
			b.WriteString("_" + strings.Join(idx, ","))
		}
		if c.Minute > 0 {
			fmt.Fprintf(&b, "+%d", c.Minute)
		}
		if c.Failed {
			b.WriteString("(failed)")
		}
	}
	return b.String()
}

// What slurmctld 22.05 accepts (update_job_dependency, _xlate_array_dep,
// _parse_dependency_jobid_new/_old) and how it reads it.
func TestParseDependency(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"afterok:5", "afterok:5"},
		{"afterok:5_1", "afterok:5_1"},
		{"afterok:5_*", "afterok:5"},
		{"afterok:5_[1-3,7]", "afterok:5_1,2,3,7"},
		{"afterok:5_[7,1-3:2]", "afterok:5_7,1,3"},
		{"afterok:5_[1,3]?afterany:6", "any afterok:5_1,3 afterany:6"},
		{"afterok:20:21,afterany:23", "afterok:20 afterok:21 afterany:23"},
		{"afterok:20:21?afterany:23", "any afterok:20 afterok:21 afterany:23"},
		{"AfterOK:5", "afterok:5"},
		{"after:5+10:6", "after:5+10 after:6"},
		{"afterok:5(unfulfilled)", "afterok:5"},
		{"afterok:5_1(failed)", "afterok:5_1(failed)"},
		{"afterok:007", "afterok:7"},
		{"5", "afterany:5"},
		{"5,6_2", "afterany:5 afterany:6_2"},
		{"afterok:5,6", "afterok:5 afterany:6"},
		{"afterok:5?6", "any afterok:5 afterany:6"},
		{"singleton", "singleton:"},
		{"afterok:5,singleton", "afterok:5 singleton:"},
		{"aftercorr:5", "aftercorr:5"},
	} {
		d, err := ParseDependency(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := depString(d); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, in := range []string{"", "afterok", "afterok:", "afterok:x", "afterok:0", "afterok:5_", "afterok:5_x",
		"afterok:5_[", "afterok:5_[]", "afterok:5_[1-3", "afterok:5_[a]", "afterok:5+", "afterok:5+0", "afterok:5+x",
		"afterok:5(", "afterfoo:5", "5?6", "5+1", "5:6", "6,afterok:5", "afterok:5,", "afterok:5,,afterok:6",
		"5,6_[1-2]", "afterok:99999999999", "afterok:5_[0-10000]", "afterok:5_[0-5000],6_[0-5000]"} {
		if d, err := ParseDependency(in); err == nil {
			t.Errorf("%q accepted: %s", in, depString(d))
		}
	}
}
