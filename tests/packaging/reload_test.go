package packaging

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/sdnotify/sdnotifytest"
	"github.com/glean-hpc/glean/sidecar/spool"
	"github.com/glean-hpc/glean/tests/gleantest"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// nextNotify returns the first datagram containing want; one containing
// never (if not "") on the way, or none within timeout, fails the test.
func nextNotify(t *testing.T, e *gleantest.Env, msgs <-chan sdnotifytest.Message, want, never string, timeout time.Duration) sdnotifytest.Message {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("notify socket closed waiting for %q", want)
			}
			if never != "" && strings.Contains(m.Text, never) {
				t.Fatalf("%q from gleand while waiting for %q\n%s", m.Text, want, e.Logs())
			}
			if strings.Contains(m.Text, want) {
				return m
			}
		case <-e.DaemonDone():
			t.Fatalf("gleand exited (%v) while waiting for %q\n%s", e.DaemonStatus(), want, e.Logs())
		case <-deadline:
			t.Fatalf("no %q from gleand within %v\n%s", want, timeout, e.Logs())
		}
	}
}

// readyUnderSystemd starts glean-helper and gleand (as gleandUnderSystemd
// sets it up) on a cluster of nodes and waits for gleand's READY=1; they
// stop when the test ends.
func readyUnderSystemd(t *testing.T, nodes int) (*slurmtest.Cluster, *gleantest.Env, <-chan sdnotifytest.Message) {
	t.Helper()
	cl, e, msgs := gleandUnderSystemd(t, nodes, gleantest.Options{})
	t.Cleanup(e.Stop) // before gleandUnderSystemd's: cleanups run last first
	e.Start(t)
	nextNotify(t, e, msgs, "READY=1", "", time.Minute)
	return cl, e, msgs
}

// systemctl reload gleand, as the unit does it, on the real gleand (as the
// glean user, on a loopback Slurm, $NOTIFY_SOCKET and a watchdog as
// systemd sets them, an elastic job active): SIGHUP with a changed config
// re-execs it in place (same pid, the new value in its start-up log,
// RELOADING=1 then READY=1 from a round that follows the job,
// the watchdog pings again, and the spool's lock is held by the new image:
// a second gleand is refused); SIGHUP with a broken config leaves it
// running with the old one, and STATUS= says so; the unit's first
// ExecReload (-check-config) fails on that file naming it.
func TestGleandReload(t *testing.T) {
	cl, e, msgs := readyUnderSystemd(t, 2)
	pid := e.DaemonPID()
	// A job to follow through the reload: the new image takes it up from the spool.
	e.WriteFile(t, "task.sh", "#!/bin/sh\nsleep 30\n", 0o755)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-3", "task.sh")
	nextNotify(t, e, msgs, "1 jobs active", "", time.Minute)
	// Both pilots' agents running tasks, so that they read the config
	// before the test breaks it below: an agent that starts on a broken
	// glean.toml exits at once, and gleand submits pilot after pilot (a
	// clean-clone run saw one agent start 1 s late, and the rounds'
	// STATUS= then spoke of those pilots).
	cl.WaitFor(t, time.Minute, "both pilots running tasks", func() bool {
		r := e.Record(t, anchor)
		return r != nil && r.Tasks.Running >= 2
	})

	orig, err := os.ReadFile(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	const was, now = `rescan = "1s"`, `rescan = "3s"`
	if !strings.Contains(string(orig), was) {
		t.Fatalf("the test's config has no %s:\n%s", was, orig)
	}
	setConfig := func(text string) {
		t.Helper()
		if err := os.WriteFile(e.Config, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkConfig := func() (string, error) {
		out, err := exec.Command(filepath.Join(e.Bin, "gleand"), "-config", e.Config, "-check-config").CombinedOutput()
		return string(out), err
	}
	hup := func() time.Time {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}

	// A metrics address another process holds: the file is well formed
	// (-check-config, which cannot tell it from gleand's own, passes it),
	// but the re-executed gleand could not listen there and would exit.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	const noMetrics = `metrics_listen = ""`
	if !strings.Contains(string(orig), noMetrics) {
		t.Fatalf("the test's config has no %s:\n%s", noMetrics, orig)
	}
	for _, tc := range []struct {
		name   string
		config string
		valid  bool
		checks bool   // gleand -check-config passes the file
		why    string // in the refusal's STATUS=
		inLog  string // in gleand's log afterwards
	}{
		{"changed config: re-exec in place", strings.Replace(string(orig), was, now, 1), true, true, "", "rescan=3s"},
		{"broken config: the old one runs on", strings.Replace(string(orig), was, `rescan = "-3s"`, 1), false, false,
			"daemon.rescan: must be at least 1s, not -3s", "config reload refused"},
		{"metrics address taken: the old one runs on", strings.Replace(string(orig), noMetrics, `metrics_listen = "`+taken.Addr().String()+`"`, 1),
			false, true, "daemon.metrics_listen", "config reload refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setConfig(tc.config)
			if out, err := checkConfig(); (err == nil) != tc.checks || !tc.checks && !strings.Contains(out, e.Config+": daemon.rescan: ") {
				t.Errorf("gleand -check-config: %v, %q", err, out)
			}
			sent := hup()
			if tc.valid {
				nextNotify(t, e, msgs, "RELOADING=1", "", time.Minute)
				ready := nextNotify(t, e, msgs, "READY=1", "", time.Minute)
				t.Logf("SIGHUP to READY=1: %v: %q", ready.At.Sub(sent).Round(time.Millisecond), ready.Text)
				if !strings.Contains(ready.Text, "1 jobs active") {
					t.Errorf("the re-executed gleand's first round does not follow the job: %q", ready.Text)
				}
				nextNotify(t, e, msgs, "WATCHDOG=1", "", 10*time.Second)
				// The new image holds the spool's lock.
				second := exec.Command(filepath.Join(e.Bin, "gleand"), "-config", e.Config)
				second.Env = []string{"PATH=" + gleantest.BasePath, "SLURM_CONF=" + cl.Conf}
				second.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.GleanUID), Gid: uint32(e.GleanGID)}}
				if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "stop it first") {
					t.Errorf("a second gleand after the reload: %v, %s", err, out)
				}
			} else {
				// (The previous case's refusal is in every STATUS= until this one.)
				m := nextNotify(t, e, msgs, tc.why, "RELOADING=1", time.Minute)
				if !strings.Contains(m.Text, "config reload refused") {
					t.Errorf("the refusal's STATUS= does not say why: %q", m.Text)
				}
				// Rounds go on (every 3 s now), their status keeps the note.
				nextNotify(t, e, msgs, "jobs active; config reload refused", "RELOADING=1", time.Minute)
			}
			if got := e.DaemonPID(); got != pid {
				t.Errorf("gleand's pid %d, was %d", got, pid)
			}
			if err := syscall.Kill(pid, 0); err != nil {
				t.Fatalf("gleand (pid %d) is gone: %v", pid, err)
			}
			if log := e.Logs(); !strings.Contains(log, tc.inLog) {
				t.Errorf("gleand's log lacks %q:\n%s", tc.inLog, log)
			}
		})
	}
}

// systemctl reload glean-helper, as the unit does it, on the real helper (as
// root, beside the real gleand on a loopback Slurm): -check-config refuses
// a broken file naming it; SIGHUP with that file leaves the helper serving
// with the old config (same socket, a refusal in its log); SIGHUP with a
// valid file re-executes it in place (same pid, a second start-up in its
// log, the socket listening again), and gleand's pilots, submitted through
// the re-executed helper, run a job to completion. Before, SIGHUP's default
// ended the helper.
func TestHelperReload(t *testing.T) {
	cl, e, _ := readyUnderSystemd(t, 1) // gleand has read the config before the test breaks it
	pid := e.HelperPID()
	orig, err := os.ReadFile(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	check := func() (string, error) {
		out, err := exec.Command(filepath.Join(e.Bin, "glean-helper"), "-config", e.Config, "-check-config").CombinedOutput()
		return string(out), err
	}
	helperLog := func() string {
		data, _ := os.ReadFile(filepath.Join(e.Dir, "glean-helper.log"))
		return string(data)
	}
	hupUntil := func(what string, cond func(log string) bool) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		cl.WaitFor(t, 30*time.Second, what, func() bool { return cond(helperLog()) })
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("glean-helper (pid %d) is gone after SIGHUP: %v\n%s", pid, err, e.Logs())
		}
		if st, err := os.Stat(e.Helper); err != nil || st.Mode()&os.ModeSocket == 0 {
			t.Fatalf("no socket at %s after SIGHUP: %v", e.Helper, err)
		}
	}

	const was = `rescan = "1s"`
	if !strings.Contains(string(orig), was) {
		t.Fatalf("the test's config has no %s:\n%s", was, orig)
	}
	if err := os.WriteFile(e.Config, []byte(strings.Replace(string(orig), was, `rescan = "-3s"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := check(); err == nil || !strings.Contains(out, e.Config+": daemon.rescan: ") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Errorf("glean-helper -check-config on a broken file: %v, %q (want one line naming it)", err, out)
	}
	hupUntil("the helper to refuse the broken file", func(log string) bool {
		return strings.Contains(log, "config reload refused") && strings.Contains(log, "daemon.rescan: must be at least 1s")
	})
	if n := strings.Count(helperLog(), "glean-helper starting"); n != 1 {
		t.Fatalf("%d start-ups after a refused reload, want 1\n%s", n, e.Logs())
	}

	if err := os.WriteFile(e.Config, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := check(); err != nil || !strings.Contains(out, "is valid") {
		t.Errorf("glean-helper -check-config on the test's file: %v, %q", err, out)
	}
	hupUntil("the helper to re-execute and listen again", func(log string) bool {
		return strings.Count(log, "glean-helper starting") == 2
	})
	if !strings.Contains(helperLog(), "re-executing") {
		t.Errorf("the helper's log does not say it re-executed:\n%s", e.Logs())
	}

	// The re-executed helper serves gleand: the job's pilot is submitted
	// through it (as its owner) and runs the tasks.
	e.WriteFile(t, "task.sh", "#!/bin/sh\ntrue\n", 0o755)
	anchor := e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-1", "task.sh")
	r := e.WaitState(t, anchor, 2*time.Minute, spool.StateDone, spool.StateFailed, spool.StateCancelled)
	if r.State != spool.StateDone {
		t.Errorf("job %s after the helper's reload: %s\n%s", anchor, r.State, e.Logs())
	}
}
