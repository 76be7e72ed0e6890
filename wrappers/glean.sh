#!/bin/sh
# glean.sh: shell helpers for elastic job scripts (docs/submission.md).
# Source it in a job script:  . /usr/share/glean/glean.sh
#
# glean_items prints the items of this task, one per line, for the
# data-folder form (sbatch --glean=dir=DATA,batch=N): task i gets items
# i*N .. i*N+N-1 of the folder's entries in name order (dot files skipped),
# the same list the wrapper counted at submission.
#
# Under glean the agent sets GLEAN_ITEMS (the list recorded at submission)
# and GLEAN_BATCH. Where glean is absent and the script runs as the plain
# array job it also is, set GLEAN_DIR and GLEAN_BATCH yourself (e.g.
# #SBATCH --export=ALL,GLEAN_DIR=/data/set,GLEAN_BATCH=4): the folder is
# listed again, so it must not have changed since submission.

glean_items() {
	_gi_task=${SLURM_ARRAY_TASK_ID:-0}
	_gi_batch=${GLEAN_BATCH:-1}
	_gi_first=$((_gi_task * _gi_batch + 1))
	_gi_last=$((_gi_first + _gi_batch - 1))
	if [ -n "${GLEAN_ITEMS:-}" ] && [ -r "$GLEAN_ITEMS" ]; then
		sed -n "${_gi_first},${_gi_last}p" "$GLEAN_ITEMS"
	elif [ -n "${GLEAN_DIR:-}" ] && [ -d "$GLEAN_DIR" ]; then
		# ls in byte order skips dot files as the wrapper does; names with
		# newlines are refused at submission.
		# shellcheck disable=SC2012
		LC_ALL=C ls -1 "$GLEAN_DIR" | sed -n "${_gi_first},${_gi_last}p"
	else
		echo "glean_items: neither GLEAN_ITEMS nor GLEAN_DIR is set; submit with --glean=dir=... or set GLEAN_DIR" >&2
		return 1
	fi
}
