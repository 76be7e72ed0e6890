package submit

import (
	"context"
	"io"
	"testing"
)

// showJob answers `scontrol -o show job` with one line per call (the
// last one again once they run out), as 22.05 prints it (hand-made in
// that shape), and cancels ctx after the line at cancelAfter.
type showJob struct {
	lines       []string
	calls       int
	cancelAfter int
	cancel      context.CancelFunc
}

func (s *showJob) Run(_ context.Context, argv []string) ([]byte, error) {
	line := s.lines[min(s.calls, len(s.lines)-1)]
	s.calls++
	if s.calls == s.cancelAfter {
		s.cancel()
	}
	return []byte(line + "\n"), nil
}

func jobLine(state, exit string) string {
	return "JobId=1044 JobName=job.sh UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=0 Nice=0 Account=(null) " +
		"QOS=(null) JobState=" + state + " Reason=JobHeldUser Dependency=(null) Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 " +
		"ExitCode=" + exit + " RunTime=00:00:01 TimeLimit=00:10:00 TimeMin=N/A Partition=glean"
}

// --wait waits, as sbatch --wait does, until the job has ended: one in
// SPECIAL_EXIT (ended with a RequeueExitHold code, requeued and held
// until released) has not, whatever its last exit code. Before, --wait
// returned that code at once.
func TestWaitForJobSpecialExitKeepsWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &showJob{lines: []string{jobLine("SPECIAL_EXIT", "3:0")}, cancelAfter: 1, cancel: cancel}
	if code := waitForJob(ctx, r, "1044", io.Discard); code != 130 || r.calls != 1 {
		t.Errorf("exit %d after %d polls, want to be still waiting when interrupted (130)", code, r.calls)
	}
	r = &showJob{lines: []string{jobLine("FAILED", "3:0")}}
	if code := waitForJob(context.Background(), r, "1044", io.Discard); code != 3 {
		t.Errorf("FAILED with exit 3: exit %d", code)
	}
}
