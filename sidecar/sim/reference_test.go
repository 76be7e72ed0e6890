package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/glean-hpc/glean/sidecar/workload"
)

// sharedDir holds the project's reference workloads, relative to this package.
const sharedDir = "../../../shared/workloads"

func loadSWF(tb testing.TB, file string) *workload.Workload {
	tb.Helper()
	f, err := os.Open(filepath.Join(sharedDir, file))
	if os.IsNotExist(err) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w, err := workload.ReadSWF(f, file, workload.SWFOptions{Options: workload.Options{Strict: true}})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// TestEASYReferenceFigures reproduces the table in shared/workloads/README.md
// under its conventions: processors as the unit, the README's job filter
// (ReadSWF's), archive estimates (no kills), completions before arrivals.
func TestEASYReferenceFigures(t *testing.T) {
	for _, tc := range []struct {
		file             string
		p, jobs          int
		wait, bsld, util string // as printed in the README
	}{
		{"KTH-SP2-1996-2.1-cln.swf.gz", 100, 28467, "6889.3", "90.38", "0.701"},
		// The README prints a mean bsld of 1.99; this simulator gets 1.98454
		// (wait and utilization agree). The cause is the order of jobs
		// submitted in the same second, which the README's conventions leave
		// open: here ties go by job number. Shuffling the jobs within each
		// second at random, 4 of 1,000 orders give the README's 28.0, 1.99
		// and 0.705; no natural order does (by job number either way, size,
		// estimate, run time, user). Nothing else moves LLNL from 1.98454
		// without breaking the other traces: 64 EASY variants (tie orders of
		// running jobs, < or <= at the shadow time, the extra nodes counting
		// every job that ends at it, a pass per event, one scan or restarts),
		// estimates below the run time, kills at the limit, field 8 first,
		// float32 times, heap-ordered events; the bound written as
		// (wait + max(run, 10)) / max(run, 10) gives 1.99 here but 90.39,
		// 590.10 and 256.54 on the others; keeping the 2,607 records that
		// did not run in the queue gives 1.99 but a 30.2 s mean wait.
		// docs/simulator.md has the table. The test asserts what the stated
		// conventions plus "ties by job number" give.
		{"LLNL-Atlas-2006-2.1-cln.swf.gz", 9216, 36600, "28.0", "1.98", "0.705"},
		{"lublin_256.swf.gz", 256, 10000, "97156.0", "590.05", "0.936"},
		{"lublin_256_new2.swf.gz", 256, 10000, "9694.3", "256.49", "0.603"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			w := loadSWF(t, tc.file)
			r, err := Run(w, Config{Policy: EASY, Estimates: ArchiveEstimates})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("P=%d jobs=%d wait=%.4f s bsld=%.5f util=%.5f events=%d",
				w.Nodes, len(w.Jobs), r.MeanWait.Seconds(), r.MeanBSLD, r.Utilization, r.Events)
			got := [...]string{
				fmt.Sprintf("%.1f", r.MeanWait.Seconds()),
				fmt.Sprintf("%.2f", r.MeanBSLD),
				fmt.Sprintf("%.3f", r.Utilization),
			}
			if w.Nodes != tc.p || len(w.Jobs) != tc.jobs || got != [...]string{tc.wait, tc.bsld, tc.util} {
				t.Errorf("P=%d, %d jobs, wait %s s, bsld %s, util %s; want P=%d, %d jobs, %s, %s, %s",
					w.Nodes, len(w.Jobs), got[0], got[1], got[2], tc.p, tc.jobs, tc.wait, tc.bsld, tc.util)
			}
		})
	}
}

// BenchmarkEASYKTH is plain EASY on KTH-SP2, parsing excluded.
func BenchmarkEASYKTH(b *testing.B) {
	w := loadSWF(b, "KTH-SP2-1996-2.1-cln.swf.gz")
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		r, err := Run(w, Config{Policy: EASY, Estimates: ArchiveEstimates})
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// TestThesisSlurmOnly reproduces the SLURM-only column of the fairness table
// in shared/ARCHITECTURE.md: EASY on 24 nodes, calibration jobs as rigid
// jobs; mean calibration turnaround and mean regular wait, in minutes.
func TestThesisSlurmOnly(t *testing.T) {
	for _, tc := range []struct {
		file       string
		turn, wait string // as printed
		waitDigits int
	}{
		{"thesis-submit-list-1.txt", "242", "25.5", 1},
		{"thesis-submit-list-2.txt", "331", "153", 0},
	} {
		f, err := os.Open(filepath.Join(sharedDir, tc.file))
		if os.IsNotExist(err) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		w, err := workload.ReadThesis(f, tc.file, workload.Options{Strict: true})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(w, Config{Policy: EASY})
		if err != nil {
			t.Fatal(err)
		}
		var turn, wait float64
		var cal int
		for i, j := range r.Jobs {
			if w.Jobs[i].Kind == workload.Calibration {
				turn += (j.End - j.Submit).Minutes()
				cal++
			} else {
				wait += j.Wait().Minutes()
			}
		}
		turn /= float64(cal)
		wait /= float64(len(r.Jobs) - cal)
		gotTurn := fmt.Sprintf("%.0f", turn)
		gotWait := fmt.Sprintf("%.*f", tc.waitDigits, wait)
		if gotTurn != tc.turn || gotWait != tc.wait {
			t.Errorf("%s: calibration turnaround %.1f min, regular wait %.1f min; want %s, %s", tc.file, turn, wait, tc.turn, tc.wait)
		}
	}
}

// BenchmarkSlurmLikeKTH is the Slurm-like mode on KTH-SP2 with Slurm's
// default settings (a backfill pass every 30 s), parsing excluded.
func BenchmarkSlurmLikeKTH(b *testing.B) {
	w := loadSWF(b, "KTH-SP2-1996-2.1-cln.swf.gz")
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		r, err := Run(w, Config{Policy: SlurmLike})
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
