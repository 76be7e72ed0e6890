#!/bin/sh
#SBATCH --glean=checkpoint=yes
#SBATCH --array=0-99
#SBATCH --time=10
#SBATCH --output=montecarlo-%A_%a.out
#
# A checkpoint-aware elastic task (docs/execution.md, "Checkpoint and
# hand-back"): a Monte Carlo estimate of pi. It saves its iteration counter,
# hit count and random state when glean takes the node back, and the next
# attempt goes on from there: the result is the one an uninterrupted run
# prints. With MC_CKPT=n it also commits a periodic checkpoint every n
# samples (glean_checkpoint_commit), so that an attempt killed without
# warning (kill -9, a lost node) loses at most n samples. MC_ITERS sets the
# samples per task; MC_DELAY (seconds) slows each sample down, for demos
# and tests.
set -eu
# shellcheck source=/dev/null
. "${GLEAN_SH:-/usr/share/glean/glean.sh}"

iters=${MC_ITERS:-100000}
task=${SLURM_ARRAY_TASK_ID:-0}
dir=$(glean_checkpoint_dir)
state=$dir/state

i=0 hits=0 seed=$((task + 1))
if [ "$GLEAN_RESTARTED" = 1 ] && [ -r "$state" ]; then
	read -r i hits seed <"$state"
	echo "attempt $GLEAN_ATTEMPT: resumed at iteration $i"
else
	echo "attempt $GLEAN_ATTEMPT: starting at iteration 0"
fi

# Written to a temporary file and renamed: a kill in the middle of the
# save leaves the previous state, never half of one.
save() {
	printf '%s %s %s\n' "$i" "$hits" "$seed" >"$state.tmp" && mv "$state.tmp" "$state" &&
		echo "checkpointed at iteration $i"
}
glean_on_term save

while [ "$i" -lt "$iters" ]; do
	# Two uniform numbers in [0, 32768) from a linear congruential
	# generator; the sample hits if it falls inside the quarter circle.
	s1=$(((seed * 1103515245 + 12345) % 2147483648))
	s2=$(((s1 * 1103515245 + 12345) % 2147483648))
	x=$((s1 / 65536)) y=$((s2 / 65536))
	h=$((x * x + y * y < 1073741824))
	# One command: a TERM between steps never sees half an update.
	i=$((i + 1)) hits=$((hits + h)) seed=$s2
	if [ $((i % 50)) -eq 0 ]; then
		echo "iteration $i"
	fi
	if [ "${MC_CKPT:-0}" -gt 0 ] && [ $((i % MC_CKPT)) -eq 0 ] && [ "$i" -lt "$iters" ]; then
		printf '%s %s %s\n' "$i" "$hits" "$seed" >"$state.tmp" && mv "$state.tmp" "$state" &&
			glean_checkpoint_commit && echo "committed at iteration $i"
	fi
	if [ -n "${MC_DELAY:-}" ]; then
		sleep "$MC_DELAY" || :
	fi
done
echo "task $task: pi ~ $((4 * hits * 10000 / iters))e-4 from $iters samples ($hits hits)"
