package slurm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// ParseTimeLimit parses a Slurm time limit: "M", "M:S", "H:M:S", "D-H",
// "D-H:M", "D-H:M:S", or UNLIMITED / INFINITE (cluster.Unlimited). Fields
// after the first must be below 60 (hours below 24 after a day count), as
// Slurm prints them. A finite limit beyond what a Duration holds (~292
// years) is returned as cluster.Unlimited.
func ParseTimeLimit(s string) (time.Duration, error) {
	switch strings.ToUpper(s) { // Slurm compares these case-insensitively
	case "UNLIMITED", "INFINITE":
		return cluster.Unlimited, nil
	}
	var days int64
	rest := s
	hasDays := false
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, ok := parseDigits(d, 9)
		if !ok {
			return 0, badTime(s)
		}
		days, rest, hasDays = n, r, true
	}
	var nums [3]int64
	n := 0
	for p := range strings.SplitSeq(rest, ":") {
		v, ok := parseDigits(p, 9)
		if !ok || n == 3 || (n > 0 && v >= 60) {
			return 0, badTime(s)
		}
		nums[n] = v
		n++
	}
	var h, m, sec int64
	switch {
	case hasDays && n == 1:
		h = nums[0]
	case hasDays && n == 2:
		h, m = nums[0], nums[1]
	case n == 1:
		m = nums[0]
	case n == 2:
		m, sec = nums[0], nums[1]
	default:
		h, m, sec = nums[0], nums[1], nums[2]
	}
	if hasDays && h >= 24 {
		return 0, badTime(s)
	}
	// At most 1e9 days and 1e9 minutes: no int64 overflow in seconds.
	total := days*86400 + h*3600 + m*60 + sec
	if total > math.MaxInt64/int64(time.Second) {
		return cluster.Unlimited, nil
	}
	return time.Duration(total) * time.Second, nil
}

// FormatTimeLimit formats d for sbatch -t and scontrol TimeLimit= as whole
// minutes, rounding down so that a job never outlives the window it was
// sized for; cluster.Unlimited gives "UNLIMITED". Slurm reads 0 as "no
// limit", so anything under one minute gives "1": callers must not ask for
// less (SetTimeLimit refuses to).
func FormatTimeLimit(d time.Duration) string {
	if d == cluster.Unlimited {
		return "UNLIMITED"
	}
	return strconv.FormatInt(max(int64(d/time.Minute), 1), 10)
}

func badTime(s string) error { return fmt.Errorf("bad time %s", quote(s)) }

// parseDigits parses 1..maxLen (at most 18) ASCII digits; strconv alone would accept
// signs and we want neither those nor overflow.
func parseDigits(s string, maxLen int) (int64, bool) {
	if s == "" || len(s) > maxLen {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// quote quotes untrusted text for an error message, cut short so that
// hostile input cannot blow up logs.
func quote(s string) string {
	const maxLen = 64
	if len(s) > maxLen {
		return strconv.Quote(s[:maxLen]) + "..."
	}
	return strconv.Quote(s)
}
