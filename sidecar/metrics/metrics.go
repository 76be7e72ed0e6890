// Package metrics is gleand's Prometheus endpoint (daemon.metrics_listen):
// what the rounds did, counted, and how the last one went.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/glean-hpc/glean/sidecar/daemon"
)

// Daemon holds gleand's metrics; Observe feeds it one round at a time.
type Daemon struct {
	reg       *prometheus.Registry
	rounds    prometheus.Counter
	duration  prometheus.Histogram
	last      prometheus.Gauge
	slurmDown prometheus.Gauge
	active    prometheus.Gauge
	entries   *prometheus.CounterVec // by outcome
	tasks     *prometheus.CounterVec // by outcome
	pilots    *prometheus.CounterVec // by action
	jobs      *prometheus.CounterVec // by what ended them
	held      prometheus.Gauge
	heldNodes prometheus.Gauge
}

// NewDaemon makes the metrics, with the Go runtime's and the process's.
func NewDaemon() *Daemon {
	m := &Daemon{
		reg:    prometheus.NewRegistry(),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "glean_rounds_total", Help: "Rounds run (observe, decide, act)."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "glean_round_duration_seconds", Help: "How long a round took.",
			Buckets: []float64{.01, .03, .1, .3, 1, 3, 10, 30, 100}}),
		last:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "glean_last_round_timestamp_seconds", Help: "When the last round started (Unix time)."}),
		slurmDown: prometheus.NewGauge(prometheus.GaugeOpts{Name: "glean_slurm_down", Help: "1 if the last round could not read Slurm whole (gleand backs off)."}),
		active:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "glean_jobs_active", Help: "Elastic jobs taken in and not ended."}),
		entries:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glean_entries_total", Help: "Spool entries taken in, by outcome."}, []string{"outcome"}),
		tasks:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glean_tasks_total", Help: "Task attempts committed to the journal, and tasks taken back from dead pilots."}, []string{"outcome"}),
		pilots:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glean_pilots_total", Help: "Pilots submitted, cancelled (given way) and retired."}, []string{"action"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "glean_jobs_pilots_held",
			Help: "Active elastic jobs whose new pilots gleand holds back: their last pilots ended without running a task."}),
		heldNodes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "glean_nodes_pilots_held",
			Help: "Nodes on which gleand submits no new pilot of some owner's jobs: that owner's last pilots there died at start."}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glean_jobs_ended_total", Help: "Elastic jobs that ended, by how."}, []string{"how"}),
	}
	// Every label value from the start, so that rates work from the
	// first scrape.
	for _, v := range []string{"accepted", "rejected"} {
		m.entries.WithLabelValues(v)
	}
	for _, v := range []string{"committed", "lost"} {
		m.tasks.WithLabelValues(v)
	}
	for _, v := range []string{"submitted", "cancelled", "retired"} {
		m.pilots.WithLabelValues(v)
	}
	for _, v := range []string{"ended", "cancelled"} {
		m.jobs.WithLabelValues(v)
	}
	m.reg.MustRegister(m.rounds, m.duration, m.last, m.slurmDown, m.active, m.entries, m.tasks, m.pilots, m.jobs, m.held, m.heldNodes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe counts one round (daemon.Loop.OnReport).
func (m *Daemon) Observe(r daemon.RoundReport) {
	m.rounds.Inc()
	m.duration.Observe(r.Took.Seconds())
	m.last.Set(float64(r.At.UnixNano()) / 1e9)
	down := 0.0
	if r.SlurmDown {
		down = 1
	}
	m.slurmDown.Set(down)
	m.active.Set(float64(r.Active))
	m.held.Set(float64(r.Exec.Held))
	m.heldNodes.Set(float64(r.Exec.HeldNodes))
	m.entries.WithLabelValues("accepted").Add(float64(r.Intake.Accepted))
	m.entries.WithLabelValues("rejected").Add(float64(r.Intake.Rejected))
	m.tasks.WithLabelValues("committed").Add(float64(r.Exec.Committed))
	m.tasks.WithLabelValues("lost").Add(float64(r.Exec.Lost))
	m.pilots.WithLabelValues("submitted").Add(float64(r.Exec.Submitted))
	m.pilots.WithLabelValues("cancelled").Add(float64(r.Exec.Cancelled))
	m.pilots.WithLabelValues("retired").Add(float64(r.Exec.Retired))
	m.jobs.WithLabelValues("ended").Add(float64(r.Exec.Ended))
	m.jobs.WithLabelValues("cancelled").Add(float64(r.Intake.Cancelled))
}

// Handler serves the metrics in Prometheus's text format.
func (m *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	// A few scrapes at a time, each bounded: the endpoint must never
	// cost the loop more than a little memory and CPU.
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 5 * time.Second}))
	return mux
}

// Listen opens addr (daemon.metrics_listen, host:port), so that a bad
// address stops gleand at its start with the key named, not later.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("daemon.metrics_listen %q: %w; give a free host:port, e.g. 127.0.0.1:9808, or \"\" for none", addr, err)
	}
	return ln, nil
}

// Serve serves h on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("metrics", "listen", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("metrics endpoint stopped", "err", err)
	}
}

// CheckListen is a reload's check of addr (daemon.metrics_listen in the
// new file), held the address gleand listens on now (nil: none). The
// re-executed gleand must listen there or it stops (Listen); gleand's own
// address is closed by the exec and opened again by the new image, any
// other is tried now, so that a taken one refuses the reload and gleand
// runs on with the old configuration.
func CheckListen(addr string, held net.Addr) error {
	if addr == "" || sameAddr(addr, held) {
		return nil
	}
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// sameAddr reports whether addr names the TCP address held.
func sameAddr(addr string, held net.Addr) bool {
	h, ok := held.(*net.TCPAddr)
	if !ok || h == nil {
		return false
	}
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil || a.Port != h.Port {
		return false
	}
	unspecified := func(ip net.IP) bool { return ip == nil || ip.IsUnspecified() }
	return a.IP.Equal(h.IP) || unspecified(a.IP) && unspecified(h.IP)
}
