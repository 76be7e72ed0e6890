package submit

import (
	"slices"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// The shadow array is submitted behind a begin time gleand moves to now,
// never held: a release would give it a new, last place in the queue. The
// user's own --begin is the anchor's (gleand waits for it); --test-only
// judges the plain job, with the user's --begin and without glean's.
func TestShadowArgv(t *testing.T) {
	req, err := ParseCLI([]string{"--glean", "--array=0-3", "--begin=now+1hour", "-t", "5", "job.sh"})
	if err != nil {
		t.Fatal(err)
	}
	e := &spool.Entry{ID: "0190aaaaaaaa-12345678", Nonce: strings.Repeat("a", 32), Name: "job",
		Items: &spool.Items{}, Array: &spool.Array{Ranges: []spool.Range{{Start: 0, End: 3, Step: 1}}}}
	gated := shadowArgv(req, e, "/s/shadow.sh", []string{"x"}, true)
	for _, want := range []string{"--begin=" + shadowBegin, "--parsable", "--time=5", "--array=0-3"} {
		if !slices.Contains(gated, want) {
			t.Errorf("gated %q: want %s", gated, want)
		}
	}
	for _, a := range gated {
		if a == "--hold" || a == "--begin=now+1hour" || a == "--glean" {
			t.Errorf("gated %q: has %s", gated, a)
		}
	}
	if gated[len(gated)-2] != "/s/shadow.sh" || gated[len(gated)-1] != "x" {
		t.Errorf("gated %q: want the script and its arguments last", gated)
	}
	plain := shadowArgv(req, e, "/s/shadow.sh", nil, false)
	if !slices.Contains(plain, "--begin=now+1hour") || slices.Contains(plain, "--begin="+shadowBegin) || slices.Contains(plain, "--parsable") {
		t.Errorf("test-only %q: want the user's --begin, not glean's, and no --parsable", plain)
	}
	// Slurm's --deadline: sbatch refuses a begin time after it, so the
	// shadow array is submitted held (and gleand releases it).
	req, err = ParseCLI([]string{"--glean", "--array=0-3", "--deadline=now+2hours", "--begin=now+1hour", "job.sh"})
	if err != nil {
		t.Fatal(err)
	}
	held := shadowArgv(req, e, "/s/shadow.sh", nil, true)
	if !slices.Contains(held, "--hold") || !slices.Contains(held, "--deadline=now+2hours") || !slices.Contains(held, "--begin=now+1hour") ||
		slices.Contains(held, "--begin="+shadowBegin) {
		t.Errorf("with --deadline %q: want --hold, the user's --deadline and --begin, not glean's begin", held)
	}
}
