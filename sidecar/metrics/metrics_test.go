package metrics

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/daemon"
)

// Two rounds observed, then scraped over HTTP: counters add up, gauges
// hold the last round's values.
func TestScrape(t *testing.T) {
	m := NewDaemon()
	at := time.Unix(1700000000, 0)
	m.Observe(daemon.RoundReport{At: at, Took: 20 * time.Millisecond, Intake: daemon.Stats{Accepted: 2, Rejected: 1},
		Exec: daemon.ExecStats{Committed: 5, Submitted: 3}, Active: 2})
	m.Observe(daemon.RoundReport{At: at.Add(time.Second), Took: 2 * time.Second, Exec: daemon.ExecStats{Committed: 4, Cancelled: 1, Lost: 1, Ended: 1, Held: 1, HeldNodes: 2},
		SlurmDown: true, Active: 1})

	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Serve(ctx, ln, m.Handler(), slog.New(slog.DiscardHandler)); close(done) }()
	defer func() { cancel(); <-done }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	for _, want := range []string{
		"glean_rounds_total 2",
		`glean_entries_total{outcome="accepted"} 2`,
		`glean_entries_total{outcome="rejected"} 1`,
		`glean_tasks_total{outcome="committed"} 9`,
		`glean_tasks_total{outcome="lost"} 1`,
		`glean_pilots_total{action="submitted"} 3`,
		`glean_pilots_total{action="cancelled"} 1`,
		`glean_pilots_total{action="retired"} 0`,
		`glean_jobs_ended_total{how="ended"} 1`,
		"glean_jobs_active 1",
		"glean_jobs_pilots_held 1",
		"glean_nodes_pilots_held 2",
		"glean_slurm_down 1",
		"glean_last_round_timestamp_seconds 1.700000001e+09",
		"glean_round_duration_seconds_count 2",
		`glean_round_duration_seconds_bucket{le="0.03"} 1`,
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !slices.ContainsFunc(strings.Split(string(body), "\n"), func(l string) bool { return l == want || strings.HasPrefix(l, want+" ") }) {
			t.Errorf("no line %q in:\n%s", want, body)
		}
	}
}

// A taken or malformed address fails at once, naming the key.
func TestListenError(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, addr := range []string{ln.Addr().String(), "nohost:notaport"} {
		if _, err := Listen(addr); err == nil || !strings.Contains(err.Error(), "daemon.metrics_listen") {
			t.Errorf("Listen(%q): %v, want an error naming daemon.metrics_listen", addr, err)
		}
	}
}

// A reload re-execs gleand, whose new image must listen on the new
// address: the reload's check tries it first (gleand's own address is
// freed by the exec and is no obstacle), so that a taken one refuses the
// reload instead of stopping gleand after the re-exec.
func TestCheckListen(t *testing.T) {
	held, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	other, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, port, _ := net.SplitHostPort(held.Addr().String())
	for _, tc := range []struct {
		name, addr string
		held       net.Addr
		ok         bool
	}{
		{"none", "", held.Addr(), true},
		{"gleand's own", held.Addr().String(), held.Addr(), true},
		{"gleand's own, spelt by name", "localhost:" + port, held.Addr(), true},
		{"taken by another", other.Addr().String(), held.Addr(), false},
		{"taken, gleand serving none", other.Addr().String(), nil, false},
		{"a port that is no number", "127.0.0.1:notaport", held.Addr(), false},
		{"free", "127.0.0.1:0", held.Addr(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckListen(tc.addr, tc.held)
			if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "daemon.metrics_listen") {
				t.Errorf("CheckListen(%q): %v, want ok %v and an error naming daemon.metrics_listen", tc.addr, err, tc.ok)
			}
		})
	}
	if c, err := net.Dial("tcp", held.Addr().String()); err != nil {
		t.Errorf("gleand's own listener after the check: %v", err)
	} else {
		c.Close()
	}
}
