#!/bin/sh
# digest.sh: fingerprints of the simulator's outcomes, to check that a
# speed change changes no result. Run from anywhere in the repository:
#
#   sidecar/sim/digest.sh > before.txt     # on the old code
#   sidecar/sim/digest.sh > after.txt      # on the new code
#   diff before.txt after.txt              # must be empty
#
# It hashes `glean sim --json --mode all` on both thesis lists with and
# without --backlog 10m, and the internal outcome (every job, task attempt
# and pilot) of the same runs plus KTH-SP2 with a 10-minute backlog
# (TestOutcomeDigest, which also prints its effective utilization, backlog
# tasks and pilots).
set -eu
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/glean" ./cmd/glean
for wl in thesis-1 thesis-2; do
	for bl in "" 10m; do
		set -- --workload "$wl" --json --mode all
		[ -n "$bl" ] && set -- "$@" --backlog "$bl"
		# A run that fails or prints nothing must not digest like any other.
		"$tmp/glean" sim "$@" >"$tmp/out" || { echo "digest.sh: glean sim $* failed" >&2; exit 1; }
		[ -s "$tmp/out" ] || { echo "digest.sh: glean sim $* printed nothing" >&2; exit 1; }
		sum=$(sha256sum <"$tmp/out" | cut -c1-16)
		printf 'glean sim %-8s backlog=%-3s %s\n' "$wl" "${bl:-0}" "$sum"
	done
done
GLEAN_SIM_DIGEST=1 go test -v -count=1 -run '^TestOutcomeDigest$' ./sidecar/sim >"$tmp/test" ||
	{ cat "$tmp/test" >&2; echo "digest.sh: TestOutcomeDigest failed" >&2; exit 1; }
# It skips where the shared workloads are missing: no digest is then no answer.
grep -q '^--- SKIP' "$tmp/test" && { echo "digest.sh: TestOutcomeDigest skipped (shared/workloads missing?)" >&2; exit 1; }
grep '^digest' "$tmp/test"
