package submit

import (
	"strings"
	"testing"
	"time"
)

// A fair job with Slurm's own --deadline: sbatch refuses a begin time after
// the deadline ("Incompatible begin and deadline time specification"), so
// the shadow array is submitted held instead of behind glean's begin time
// (found by the review of 69452a3, which refused every such job).
func TestFairWithSlurmDeadline(t *testing.T) {
	e := setup(t)
	e.startDaemon(t)
	plainScript := "#!/bin/sh\n#SBATCH -J dl\n#SBATCH -t 5\necho $SLURM_ARRAY_TASK_ID\n"
	elasticScript := strings.Replace(plainScript, "#!/bin/sh\n", "#!/bin/sh\n#SBATCH --glean=mode=fair\n", 1)
	e.writeFiles(t, map[string]string{"plain.sh": plainScript, "elastic.sh": elasticScript})
	args := []string{"--parsable", "--deadline=now+2hours", "--array=0-3"}
	plain := e.run(t, false, inv{name: "plain", args: append(append([]string{}, args...), "plain.sh")})
	if plain.Code != 0 {
		t.Fatalf("plain sbatch with --deadline: %+v", plain)
	}
	elastic := e.run(t, true, inv{name: "elastic", args: append(append([]string{}, args...), "elastic.sh")})
	if elastic.Code != 0 {
		t.Fatalf("fair elastic sbatch with --deadline refused where plain sbatch accepts it: exit %d, stderr %q", elastic.Code, elastic.Stderr)
	}
	// gleand releases the held shadow array once it took the job in.
	en, _ := e.readEntry(t, jobID(elastic.Stdout))
	cl.WaitFor(t, 30*time.Second, "the held shadow array released", func() bool {
		sh := showJob(t, en.Shadow)
		return sh["JobState"] != "PENDING" || !strings.HasPrefix(sh["Reason"], "JobHeld")
	})
	if sh := showJob(t, en.Shadow); sh["Deadline"] == "" || sh["Deadline"] == "N/A" {
		t.Errorf("shadow array %s: deadline %q, want the user's", en.Shadow, sh["Deadline"])
	}
	cancelAll(t)
}
