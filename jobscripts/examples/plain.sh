#!/bin/sh
#SBATCH --glean
#SBATCH --array=0-99
#SBATCH --time=5
#SBATCH --output=plain-%A_%a.out
#
# A plain elastic task, not checkpoint-aware: it is an ordinary array
# element. When glean takes its node back it is TERMed and runs again from
# the start (GLEAN_RESTARTED=0), on another node, later. Where the site set
# checkpoint.command (DMTCP, CRIU), glean runs it under that command, which
# saves and restores it. PLAIN_STEPS sets the steps per task; PLAIN_DELAY
# (seconds) the time each step takes.
set -eu

steps=${PLAIN_STEPS:-10}
task=${SLURM_ARRAY_TASK_ID:-0}
echo "attempt ${GLEAN_ATTEMPT:-1} (restarted ${GLEAN_RESTARTED:-0}): task $task, starting at step 0"
sum=0 step=0
while [ "$step" -lt "$steps" ]; do
	step=$((step + 1)) sum=$((sum + step * task))
	echo "step $step"
	sleep "${PLAIN_DELAY:-1}"
done
echo "task $task: sum $sum"
