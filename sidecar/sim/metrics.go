package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// ThesisTail is how long after the last submission the thesis's window runs.
const ThesisTail = 30 * time.Minute

// CalTurnaround is one calibration job's row of the thesis's Table 5.2.
type CalTurnaround struct {
	ID         int           `json:"id"`
	Submit     time.Duration `json:"submit_ns"`
	Finish     time.Duration `json:"finish_ns"`
	Turnaround time.Duration `json:"turnaround_ns"`
	Done       bool          `json:"done"`
	Pilots     int           `json:"pilots"`
	BaseRan    bool          `json:"base_ran"`
}

// Metrics are one mode's figures, as the issue defines them.
type Metrics struct {
	Mode   string        `json:"mode"`
	Window time.Duration `json:"window_ns"` // [0, last submission + 30 min)
	// Nominal is node time held by any job (regular, base, pilots) over
	// the machine's node time in the window.
	Nominal float64 `json:"nominal"`
	// Effective counts regular jobs and completed tasks only.
	Effective float64 `json:"effective"`
	// HarvestEfficiency is the share of the node time not used by regular
	// jobs, while elastic tasks were waiting, that ran completed tasks.
	HarvestEfficiency float64 `json:"harvest_efficiency"`
	// HarvestableNodeSeconds is its denominator: node time not used by
	// regular jobs while elastic tasks were waiting. Node time is in
	// node-seconds, as float64: a time.Duration overflows at 2.56 million
	// node-hours, which a large machine's history passes.
	HarvestableNodeSeconds float64         `json:"harvestable_node_seconds"`
	Calibration            []CalTurnaround `json:"calibration"`
	MeanTurnaround         time.Duration   `json:"mean_turnaround_ns"`
	AllDone                bool            `json:"all_calibration_done"`
	RegularJobs            int             `json:"regular_jobs"`
	RegularMeanWait        time.Duration   `json:"regular_mean_wait_ns"`
	RegularNodeSeconds     float64         `json:"regular_node_seconds"`
	Pilots                 int             `json:"pilots_started"`
	PilotsSubmitted        int             `json:"pilots_submitted"`
	// WasteNodeSeconds is the node time of killed task attempts.
	WasteNodeSeconds float64 `json:"waste_node_seconds"`
	Rounds           int     `json:"rounds"`
}

// Delta summarises per-job changes against SLURM-only (positive: later).
type Delta struct {
	N     int           `json:"n"`
	Mean  time.Duration `json:"mean_ns"`
	P95   time.Duration `json:"p95_ns"`
	Max   time.Duration `json:"max_ns"`
	Worse int           `json:"worse"` // later than under SLURM-only
	// Beyond counts those later by more than the give-way latency
	// (grace + KillWait + one cycle).
	Beyond int `json:"beyond_giveway"`
	// BeyondIDs are their job IDs.
	BeyondIDs []int `json:"beyond_ids,omitempty"`
}

// Comparison is one mode against SLURM-only.
type Comparison struct {
	Mode              string `json:"mode"`
	CalibrationFinish Delta  `json:"calibration_finish"`
	RegularStart      Delta  `json:"regular_start"`
	// TurnaroundGain is 1 - mean turnaround / SLURM-only's.
	TurnaroundGain float64 `json:"turnaround_gain"`
}

// ComputeMetrics computes r's metrics over the thesis's window.
func ComputeMetrics(r *ElasticResult) Metrics {
	m := Metrics{Mode: r.Mode.String(), Window: r.LastSubmit + ThesisTail, Rounds: r.Rounds, AllDone: true}
	W := m.Window
	clip := func(a, b time.Duration) float64 {
		a, b = max(a, 0), min(b, W)
		if b <= a {
			return 0
		}
		return (b - a).Seconds()
	}
	type ev struct {
		t               time.Duration
		reg, task, wait int
	}
	var evs []ev
	var held, eff, wait float64
	for i := range r.Sched.Jobs {
		j := &r.Sched.Jobs[i]
		if j.End <= j.Start {
			continue
		}
		x := clip(j.Start, j.End) * float64(j.Nodes)
		held += x
		for _, rel := range j.Released {
			held -= clip(rel.At, j.End)
		}
		if r.Kinds[i] != workload.Calibration {
			eff += x
			evs = append(evs, ev{t: j.Start, reg: j.Nodes}, ev{t: j.End, reg: -j.Nodes})
			m.RegularJobs++
			wait += j.Wait().Seconds()
			m.RegularNodeSeconds += j.Run().Seconds() * float64(j.Nodes)
		}
	}
	for _, p := range r.Pilots {
		m.PilotsSubmitted++
		if p.Started {
			m.Pilots++
			held += clip(p.Start, p.End)
		}
	}
	for _, t := range r.Tasks {
		if !t.Completed {
			m.WasteNodeSeconds += (t.End - t.Start).Seconds()
			continue
		}
		eff += clip(t.Start, t.End)
		evs = append(evs, ev{t: t.Start, task: 1}, ev{t: t.End, task: -1})
	}
	for _, w := range r.Waiting {
		evs = append(evs, ev{t: w.Start, wait: 1}, ev{t: w.End, wait: -1})
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	var reg, task, waiting int
	var num, den float64
	prev := time.Duration(0)
	for _, e := range evs {
		if e.t > prev && waiting > 0 {
			dt := clip(prev, e.t)
			num += dt * float64(min(task, r.Nodes-reg))
			den += dt * float64(r.Nodes-reg)
		}
		prev = max(prev, e.t)
		reg += e.reg
		task += e.task
		waiting += e.wait
	}
	total := float64(r.Nodes) * W.Seconds()
	if total > 0 {
		m.Nominal, m.Effective = held/total, eff/total
	}
	m.HarvestEfficiency = 1
	m.HarvestableNodeSeconds = den
	if den > 0 {
		m.HarvestEfficiency = num / den
	}
	if m.RegularJobs > 0 {
		m.RegularMeanWait = time.Duration(math.Round(wait / float64(m.RegularJobs) * 1e9))
	}
	var sum time.Duration
	for _, c := range r.Cal {
		t := CalTurnaround{ID: c.ID, Submit: c.Submit, Finish: c.Finish, Turnaround: c.Finish - c.Submit, Done: c.Done, Pilots: c.Pilots, BaseRan: c.BaseRan}
		m.AllDone = m.AllDone && c.Done
		sum += t.Turnaround
		m.Calibration = append(m.Calibration, t)
	}
	if len(r.Cal) > 0 {
		m.MeanTurnaround = sum / time.Duration(len(r.Cal))
	}
	return m
}

// Compare computes per-job changes of r against base (a SlurmOnly run of
// the same workload). Regular jobs are matched by ID and submit time.
func Compare(base, r *ElasticResult) Comparison {
	c := Comparison{Mode: r.Mode.String()}
	latency := r.Policy.Grace + r.KillWait + r.Cycle
	c.RegularStart = CompareRegular(base, r)
	fin := map[int]time.Duration{}
	var bt, rt time.Duration
	for _, x := range base.Cal {
		fin[x.ID] = x.Finish
		bt += x.Finish - x.Submit
	}
	var cal []time.Duration
	var calIDs []int
	for _, x := range r.Cal {
		rt += x.Finish - x.Submit
		if f, ok := fin[x.ID]; ok {
			cal = append(cal, x.Finish-f)
			calIDs = append(calIDs, x.ID)
		}
	}
	c.CalibrationFinish = summarize(cal, calIDs, latency)
	if bt > 0 {
		c.TurnaroundGain = 1 - rt.Seconds()/bt.Seconds()
	}
	return c
}

// CompareRegular is the change of the regular jobs' starts in r against
// base (matched by ID and submit time), e.g. the regular jobs run alone.
func CompareRegular(base, r *ElasticResult) Delta {
	type key struct {
		id     int
		submit time.Duration
	}
	start := map[key]time.Duration{}
	for i, j := range base.Sched.Jobs {
		if base.Kinds[i] != workload.Calibration {
			start[key{j.ID, j.Submit}] = j.Start
		}
	}
	var reg []time.Duration
	var regIDs []int
	for i, j := range r.Sched.Jobs {
		if r.Kinds[i] == workload.Calibration {
			continue
		}
		if s, ok := start[key{j.ID, j.Submit}]; ok {
			reg = append(reg, j.Start-s)
			regIDs = append(regIDs, j.ID)
		}
	}
	return summarize(reg, regIDs, r.Policy.Grace+r.KillWait+r.Cycle)
}

// RegularOnly is w without its calibration jobs: the regular jobs alone,
// the reference for what glean's modes cost regular jobs.
func RegularOnly(w *workload.Workload) *workload.Workload {
	out := *w
	out.Jobs = nil
	for _, j := range w.Jobs {
		if j.Kind != workload.Calibration {
			out.Jobs = append(out.Jobs, j)
		}
	}
	return &out
}

func summarize(d []time.Duration, ids []int, latency time.Duration) Delta {
	s := Delta{N: len(d)}
	if len(d) == 0 {
		return s
	}
	var sum float64
	for i, x := range d {
		sum += x.Seconds()
		if x > 0 {
			s.Worse++
		}
		if x > latency {
			s.Beyond++
			s.BeyondIDs = append(s.BeyondIDs, ids[i])
		}
	}
	s.Mean = time.Duration(math.Round(sum / float64(len(d)) * 1e9))
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	s.P95 = sorted[min(len(sorted)-1, int(math.Ceil(0.95*float64(len(sorted))))-1)]
	s.Max = sorted[len(sorted)-1]
	return s
}
