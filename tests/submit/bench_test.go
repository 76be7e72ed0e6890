package submit

import (
	"context"
	"sort"
	"testing"
	"time"
)

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkPassThroughLatency measures what the wrapper adds to a plain
// submission: pairs of the same invocation with and without the wrapper,
// in alternating order, as the test user; it reports the median of the
// per-pair differences (target: under 5 ms).
func BenchmarkPassThroughLatency(b *testing.B) {
	e := setupEnv(b)
	e.writeFiles(b, corpusFiles())
	for _, c := range []struct {
		name string
		in   inv
	}{
		{"version", inv{name: "version", args: []string{"--version"}}},
		{"submit", inv{name: "submit", args: []string{"-H", "--parsable", "job.sh"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var added, plain []time.Duration
			for i := 0; i < b.N; i++ {
				var dp, dw time.Duration
				for k := 0; k < 2; k++ {
					wrapped := (i+k)%2 == 0
					start := time.Now()
					r := e.run(b, wrapped, c.in)
					d := time.Since(start)
					if r.Code != 0 {
						b.Fatalf("exit %d: %s", r.Code, r.Stderr)
					}
					if wrapped {
						dw = d
					} else {
						dp = d
					}
				}
				added = append(added, dw-dp)
				plain = append(plain, dp)
			}
			b.ReportMetric(float64(median(added).Microseconds())/1000, "added-ms(median)")
			b.ReportMetric(float64(median(plain).Microseconds())/1000, "plain-ms(median)")
		})
	}
}

// BenchmarkElasticSubmit is the wrapper's wall time for an elastic array
// job, as the user sees it (sh, the wrapper, the anchor's sbatch and, in
// fair mode, the shadow array's; target under 100 ms for 10,000 tasks).
// The loopback cluster keeps Slurm's defaults MaxArraySize=1001 and
// MaxJobCount=10000 (array elements count, cancelled ones for MinJobAge),
// so a fair job's shadow array is measured with 100 tasks.
func BenchmarkElasticSubmit(b *testing.B) {
	e := setupEnv(b)
	e.writeFiles(b, map[string]string{"calib.sh": elasticJob})
	for _, c := range []struct {
		name string
		args []string
	}{
		{"scavenger-10000-tasks", []string{"--glean=mode=scavenger", "--array=0-9999", "calib.sh"}},
		{"fair-100-tasks", []string{"--glean=mode=fair", "--array=0-99", "calib.sh"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := e.run(b, true, inv{name: c.name, args: c.args})
				if r.Code != 0 {
					b.Fatalf("%+v", r)
				}
			}
			b.StopTimer()
			cancelAll(b)
		})
	}
}

// BenchmarkIntake10k is the daemon's intake of one 10,000-task elastic job:
// scan, read under O_NOFOLLOW, squeue, node sizes, admin hold, records.
func BenchmarkIntake10k(b *testing.B) {
	e := setupEnv(b)
	e.writeFiles(b, map[string]string{"calib.sh": elasticJob})
	in := newIntake(b, e)
	ctx := context.Background()
	in.Round(ctx, time.Now()) // take in whatever earlier runs left
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := e.run(b, true, inv{name: "10k", args: []string{"--glean=mode=scavenger", "--array=0-9999", "calib.sh"}})
		if r.Code != 0 {
			b.Fatalf("%+v", r)
		}
		b.StartTimer()
		st, err := in.Round(ctx, time.Now())
		if err != nil || st.Accepted != 1 {
			b.Fatalf("round: %+v %v", st, err)
		}
	}
	b.StopTimer()
	cancelAll(b)
}
