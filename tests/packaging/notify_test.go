package packaging

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/daemon"
	"github.com/glean-hpc/glean/sidecar/sdnotify/sdnotifytest"
	"github.com/glean-hpc/glean/tests/gleantest"
	"github.com/glean-hpc/glean/tests/slurmtest"
)

// gleand, the real binary as the glean user on a loopback Slurm, with a
// $NOTIFY_SOCKET and $WATCHDOG_USEC as systemd would set them for
// Type=notify and WatchdogSec=2s: READY=1 after its first round, STATUS=
// lines, WATCHDOG=1 every second, also while slurmctld is stopped and it
// backs off (the largest gap between pings then stays far below
// WatchdogSec=5min's bound, daemon.WorstRound), STOPPING=1 on SIGTERM.
func TestGleandNotifiesSystemd(t *testing.T) {
	metricsAddr := freeAddr(t)
	cl, e, msgs := gleandUnderSystemd(t, 4, gleantest.Options{MetricsListen: metricsAddr})
	defer e.Stop()
	started := time.Now()
	e.Start(t)

	// until reads datagrams until one contains want; it returns it and the
	// largest gap between WATCHDOG=1 pings seen on the way.
	lastPing := time.Time{}
	until := func(want string, timeout time.Duration) (string, time.Duration) {
		t.Helper()
		deadline := time.After(timeout)
		var gap time.Duration
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("notify socket closed waiting for %q", want)
				}
				if m.Text == "WATCHDOG=1" {
					if !lastPing.IsZero() {
						gap = max(gap, m.At.Sub(lastPing))
					}
					lastPing = m.At
				}
				if strings.Contains(m.Text, want) {
					return m.Text, gap
				}
			case <-deadline:
				t.Fatalf("no %q from gleand within %v\n%s", want, timeout, e.Logs())
			}
		}
	}
	ready, _ := until("READY=1", time.Minute)
	t.Logf("READY=1 %v after gleand started: %q", time.Since(started).Round(time.Millisecond), ready)
	if !strings.Contains(ready, "STATUS=round at") {
		t.Errorf("READY=1 without the first round's status: %q", ready)
	}
	until("WATCHDOG=1", 10*time.Second)

	// A job to follow, so that the rounds read Slurm; then slurmctld away.
	e.WriteFile(t, "task.sh", "#!/bin/sh\nsleep 30\n", 0o755)
	e.Sbatch(t, "", "--glean=mode=scavenger", "--array=0-3", "task.sh")
	until("1 jobs active", time.Minute)
	// daemon.metrics_listen: the same rounds, counted for Prometheus.
	scrapeUntil(t, metricsAddr, `glean_entries_total{outcome="accepted"} 1`, "glean_jobs_active 1", "glean_slurm_down 0")
	restart := cl.Outage(t)
	down := time.Now()
	status, _ := until("STATUS=Slurm not answering", time.Minute)
	scrapeUntil(t, metricsAddr, "glean_slurm_down 1")
	t.Logf("%v after slurmctld stopped: %q", time.Since(down).Round(time.Millisecond), status)
	pings := 0
	var gap time.Duration
	for time.Since(down) < 25*time.Second {
		_, g := until("WATCHDOG=1", 2*daemon.WorstRound(30*time.Second))
		gap = max(gap, g)
		pings++
	}
	if err := restart(); err != nil {
		t.Fatal(err)
	}
	// WatchdogSec=5min in etc/gleand.service; a round may take WorstRound.
	if worst := daemon.WorstRound(30 * time.Second); gap >= worst {
		t.Errorf("largest gap between pings while slurmctld was down: %v, not under %v", gap, worst)
	}
	t.Logf("slurmctld down 25 s: %d pings, largest gap between them %v (pinging every 1 s)", pings, gap.Round(time.Millisecond))
	until("STATUS=round at", 2*time.Minute)

	e.Stop()
	until("STOPPING=1", 30*time.Second)
}

// gleandUnderSystemd sets up a loopback Slurm of nodes nodes and a glean
// installation whose gleand (started by the caller, stopped by it too)
// gets a $NOTIFY_SOCKET and WATCHDOG_USEC=2s as systemd would give it; the
// channel has what gleand sends there.
func gleandUnderSystemd(t *testing.T, nodes int, opt gleantest.Options) (*slurmtest.Cluster, *gleantest.Env, <-chan sdnotifytest.Message) {
	t.Helper()
	cl := slurmtest.Start(t, slurmtest.Options{Nodes: nodes})
	e, err := gleantest.New(cl, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the caller's deferred Stop
		if !t.Failed() {
			os.RemoveAll(e.Dir)
		}
	})
	dir := filepath.Join(e.Dir, "notify")
	if err := os.Mkdir(dir, 0o755); err != nil {
		e.Stop()
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	msgs := sdnotifytest.Listen(t, sock)
	e.DaemonEnv = []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=2000000"}
	return cl, e, msgs
}

// freeAddr is a loopback host:port that nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrapeUntil scrapes gleand's /metrics until every line of want is in
// it (the metrics follow the rounds), failing after 30 s.
func scrapeUntil(t *testing.T, addr string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		body, err := scrape(addr)
		if err == nil && !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(strings.Split(body, "\n"), w) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gleand's metrics never had %q (%v):\n%s", want, err, body)
		}
		<-tick.C
	}
}

// scrape reads gleand's /metrics.
func scrape(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s", resp.Status)
	}
	return string(body), err
}
