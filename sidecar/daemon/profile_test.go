package daemon

import (
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// A profile whose runtimes understate this job's tasks (60-80 s; this
// job's take 30 min under a -t of an hour) sizes its first pilots for
// 110-second tasks; once an attempt ran longer than that without
// completing, the estimate falls back to the -t, or every attempt would
// end at its pilot's limit and the job would never learn. (From the review
// of fb936bc.)
func TestProfileEstimateLearnsFromKilledAttempts(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	var evs []spool.TaskEvent
	for k := 0; k < 3; k++ { // three attempts stopped at their 19-minute pilots' ends
		evs = append(evs, spool.TaskEvent{Index: k, Attempt: string(rune('a' + k)), Start: t0, End: t0.Add(19 * time.Minute),
			Reason: spool.ReasonTimeLimit})
	}
	r := &spool.Record{Entry: &spool.Entry{Resources: spool.Resources{TimeLimit: 60}},
		ProfileRuntimes: []time.Duration{60 * time.Second, 80 * time.Second}}
	if got := newBook(evs).taskTime(r); got < 19*time.Minute {
		t.Errorf("task time %v after 3 attempts ran 19 min each without completing: the profile's estimate still sizes pilots", got)
	}
}
