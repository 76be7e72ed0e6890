package policy

import (
	"strings"
	"testing"
	"time"
)

func TestOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	j := func(id, owner string, submit, deadline int) ElasticJob {
		e := ElasticJob{ID: id, Owner: owner, Submit: t0.Add(time.Duration(submit) * time.Minute)}
		if deadline > 0 {
			e.Deadline = t0.Add(time.Duration(deadline) * time.Hour)
		}
		return e
	}
	for _, tc := range []struct {
		name string
		jobs []ElasticJob
		want string
	}{
		{"first come, first served", []ElasticJob{j("c", "1", 3, 0), j("a", "1", 1, 0), j("b", "2", 2, 0)}, "a b c"},
		{"the same second: by id", []ElasticJob{j("b", "1", 1, 0), j("a", "2", 1, 0)}, "a b"},
		{"the same second: ids as numbers", []ElasticJob{j("1000", "1", 1, 0), j("999", "2", 1, 0), j("1001", "1", 1, 0)}, "999 1000 1001"},
		{"ids as numbers among one owner's deadlines", []ElasticJob{j("1000", "1", 1, 5), j("999", "1", 1, 5)}, "999 1000"},
		{"an owner's deadline job takes that owner's first place", []ElasticJob{j("a", "1", 1, 0), j("b", "2", 2, 0), j("c", "1", 3, 5)}, "c b a"},
		{"earliest deadline first", []ElasticJob{j("a", "1", 1, 9), j("b", "1", 2, 0), j("c", "1", 3, 5)}, "c a b"},
		{"never past another owner's job", []ElasticJob{j("a", "2", 1, 0), j("b", "1", 2, 1)}, "a b"},
		{"no owner: FIFO", []ElasticJob{j("a", "", 1, 0), j("b", "", 2, 1)}, "a b"},
	} {
		Order(tc.jobs)
		var got []string
		for _, e := range tc.jobs {
			got = append(got, e.ID)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %q, want %s", tc.name, got, tc.want)
		}
	}
}
