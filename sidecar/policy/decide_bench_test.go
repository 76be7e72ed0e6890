package policy

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// decideBench is a busy 10,000-node cluster: 9,700 nodes run 5,000 jobs,
// 100 run glean's pilots (50 for a fair job, 50 for a scavenger one), 200
// are idle; 10,000 pending jobs (half planned on 2 nodes, some of them on
// pilots' nodes, a quarter unplanned of 400-449 nodes, a quarter held), the
// fair job's base array, 5 pending pilots, and a thesis job.
func decideBench() (*cluster.Snapshot, State) {
	const nNodes, nRun, nPend, nPilots = 10000, 5000, 10000, 100
	s := &cluster.Snapshot{Time: now, Complete: true, Config: cluster.SchedConfig{BackfillInterval: 30 * time.Second}}
	p := cluster.Partition{Name: "batch", MaxTime: 48 * time.Hour, Up: true, Default: true}
	for i := range nNodes {
		name := "n" + strconv.Itoa(i+1)
		st := cluster.NodeAlloc
		if i >= 9800 {
			st = cluster.NodeIdle
		}
		s.Nodes = append(s.Nodes, cluster.Node{Name: name, State: st, Partitions: []string{"batch"}})
		p.Nodes = append(p.Nodes, name)
	}
	s.Partitions = []cluster.Partition{p}
	for i := range nRun {
		var ns []string
		if i < 4850 {
			ns = []string{p.Nodes[2*i], p.Nodes[2*i+1]}
		} else {
			ns = []string{p.Nodes[i]} // shared with another job
		}
		s.Jobs = append(s.Jobs, running("r"+strconv.Itoa(i), at(time.Duration(i%97+1)*10*time.Minute), ns...))
	}
	var st State
	st.Jobs = []ElasticJob{
		ejob("fair", Fair, 5000, 50, 10*time.Minute, "b1"),
		ejob("scav", Scavenger, 5000, 50, 20*time.Minute),
		ejob("th", Thesis, 500, 0, 5*time.Minute),
	}
	for k := range nPilots {
		job := "fair"
		if k%2 == 1 {
			job = "scav"
		}
		st.Pilots = append(st.Pilots, rpilot("pl"+strconv.Itoa(k), job, p.Nodes[9700+k], time.Duration(k+1)*time.Minute, at(time.Duration(k%50+10)*time.Minute)))
	}
	for k := range 5 {
		st.Pilots = append(st.Pilots, ppilot("pp"+strconv.Itoa(k), "scav", "", time.Duration(k*5)*time.Second))
	}
	withPilots(s, st.Pilots...)
	s.Jobs = append(s.Jobs, array(pend2("b1", 5000, "Priority", 1, 10*time.Minute, at(97*time.Minute), p.Nodes[0]), "0-999%50"))
	for i := range nPend {
		id := "p" + strconv.Itoa(i)
		prio := int64(nPend - i)
		switch i % 4 {
		case 0, 1:
			k := i % 9699
			start := at(time.Duration(i%300+5) * time.Minute)
			sched := []string{p.Nodes[k], p.Nodes[k+1]}
			if i%200 == 0 { // planned behind a pilot
				pi := i / 200 % nPilots
				sched[1] = p.Nodes[9700+pi]
				start = maxTime(start, st.Pilots[pi].End)
			}
			s.Jobs = append(s.Jobs, pend2(id, prio, "Priority", 2, 3*time.Hour, start, sched...))
		case 2:
			s.Jobs = append(s.Jobs, pend2(id, prio, "Resources", 400+i%50, 2*time.Hour, never))
		default:
			s.Jobs = append(s.Jobs, pend2(id, prio, "JobHeldUser", 1, time.Hour, never))
		}
	}
	return s, st
}

func TestDecideBenchSnapshot(t *testing.T) {
	s, st := decideBench()
	cfg := DefaultConfig()
	a := Decide(s, st, cfg, now)
	b := Decide(s, st, cfg, now)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("Decide is not deterministic")
	}
	seen := map[string]bool{}
	kinds := map[string]int{}
	for _, x := range a {
		if x.Pilot != "" && seen[x.Pilot] {
			t.Errorf("pilot %s in two actions", x.Pilot)
		}
		seen[x.Pilot] = true
		kinds[x.Kind.String()+"/"+x.Cause.String()]++
	}
	if len(a) == 0 {
		t.Error("no action on a busy cluster with give-way to do")
	}
	t.Logf("%d actions: %v", len(a), kinds)
}

func BenchmarkDecide(b *testing.B) {
	s, st := decideBench()
	cfg := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		Decide(s, st, cfg, now)
	}
}

// BenchmarkDecideHold is BenchmarkDecide with the hold tracked, as the
// simulator runs the policy.
func BenchmarkDecideHold(b *testing.B) {
	s, st := decideBench()
	cfg := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		DecideHold(s, st, cfg, now)
	}
}
