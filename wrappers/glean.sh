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

# ---- checkpoint and hand-back (docs/execution.md) ----
#
# glean gives a node back the moment a regular job needs it. A task then
# gets SIGTERM and the grace (policy.grace, 1 minute by default) to save its
# state into its checkpoint directory and exit with status 99; the next
# attempt of the task (on any node) starts with GLEAN_RESTARTED=1 and the
# directory as it was left. After a kill without that chance (kill -9, a
# lost node) the next attempt resumes too if the task saved on an earlier
# TERM or committed a periodic checkpoint (glean_checkpoint_commit). Any
# other end (the task's own failure; a kill before any complete save)
# starts the next attempt from scratch: GLEAN_RESTARTED=0 and an empty
# directory.
#
#   . /usr/share/glean/glean.sh
#   dir=$(glean_checkpoint_dir)
#   if [ "$GLEAN_RESTARTED" = 1 ]; then read -r i < "$dir/state"; else i=0; fi
#   glean_on_term 'echo "$i" > "$dir/state.tmp" && mv "$dir/state.tmp" "$dir/state"'
#
# The agent sets, besides GLEAN_ATTEMPT (1, 2, ...), GLEAN_RESTARTED and
# GLEAN_CHECKPOINT_DIR (<checkpoint.root>/<job id>/<task id>, default root
# $HOME/.glean/checkpoints). Where glean is absent they default to 1, 0 and
# ${GLEAN_CHECKPOINT_ROOT:-$HOME/.glean/checkpoints}/<array job id>/<task id>.

GLEAN_CHECKPOINT_EXIT=99
: "${GLEAN_ATTEMPT:=1}"
: "${GLEAN_RESTARTED:=0}"

# glean_checkpoint_dir prints this task's checkpoint directory, creating it
# (mode 0700) if needed. It is readable only by its owner and kept across
# the task's attempts; it lives outside the spool, so it must be on a
# filesystem every compute node mounts ($HOME, or checkpoint.root).
glean_checkpoint_dir() {
	if [ -n "${GLEAN_CHECKPOINT_DIR:-}" ]; then
		_gc_dir=$GLEAN_CHECKPOINT_DIR
	else
		_gc_job=${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-}}
		if [ -z "$_gc_job" ] || { [ -z "${GLEAN_CHECKPOINT_ROOT:-}" ] && [ -z "${HOME:-}" ]; }; then
			echo "glean_checkpoint_dir: no job id, or neither GLEAN_CHECKPOINT_ROOT nor HOME is set" >&2
			return 1
		fi
		_gc_dir=${GLEAN_CHECKPOINT_ROOT:-$HOME/.glean/checkpoints}/$_gc_job/${SLURM_ARRAY_TASK_ID:-0}
	fi
	# Checked before and after mkdir -p: a directory another user created
	# in a shared place meanwhile is refused by the second check.
	if ! _glean_safe_dir "$_gc_dir"; then
		return 1
	fi
	if ! (umask 077 && mkdir -p "$_gc_dir"); then
		echo "glean_checkpoint_dir: cannot create $_gc_dir" >&2
		return 1
	fi
	if ! _glean_safe_dir "$_gc_dir" || [ ! -O "$_gc_dir" ] || ! chmod 700 "$_gc_dir"; then
		echo "glean_checkpoint_dir: $_gc_dir is not a directory of yours" >&2
		return 1
	fi
	printf '%s\n' "$_gc_dir"
}

# _glean_safe_dir PATH checks PATH as glean-agent checks the checkpoint
# root (docs/execution.md, "Where checkpoints live"), component by
# component from /: each existing one is a directory of root's or yours;
# one that others may write into only if it is root's and sticky (like
# /scratch, 1777), and then the next is yours or root's; a symlink only if root made
# it in a directory of root's nobody else may write into (its target is
# then checked the same way). Components that do not exist yet are fine
# (mkdir -p makes them yours). It prints why not and returns 1.
_glean_safe_dir() {
	_gs_me=$(id -u)
	_gs_path=$1
	_gs_links=0
	while :; do
		case $_gs_path in
		/*) ;;
		*)
			echo "glean_checkpoint_dir: $_gs_path is not an absolute path" >&2
			return 1
			;;
		esac
		_gs_cur='' _gs_rest=${_gs_path#/} _gs_again=''
		_gs_rootonly=1 _gs_mine=0 # the parent: root's, nobody else writes; after a sticky one: must be yours
		while [ -n "$_gs_rest" ]; do
			_gs_name=${_gs_rest%%/*}
			case $_gs_rest in
			*/*) _gs_rest=${_gs_rest#*/} ;;
			*) _gs_rest= ;;
			esac
			if [ -z "$_gs_name" ] || [ "$_gs_name" = . ]; then
				continue
			fi
			_gs_cur=$_gs_cur/$_gs_name
			if [ ! -e "$_gs_cur" ] && [ ! -L "$_gs_cur" ]; then
				return 0 # created by mkdir -p as you
			fi
			_gs_owner=$(stat -c %u -- "$_gs_cur") || return 1
			if [ -L "$_gs_cur" ]; then
				if [ "$_gs_owner" != 0 ] || [ "$_gs_rootonly" != 1 ] || [ "$_gs_mine" = 1 ]; then
					echo "glean_checkpoint_dir: $_gs_cur is a symlink that root did not make in a directory only root writes: refusing it" >&2
					return 1
				fi
				_gs_links=$((_gs_links + 1))
				if [ "$_gs_links" -gt 16 ]; then
					echo "glean_checkpoint_dir: $1: more than 16 symlinks" >&2
					return 1
				fi
				_gs_target=$(readlink -- "$_gs_cur") || return 1
				case $_gs_target in
				/*) ;;
				*) _gs_target=${_gs_cur%/*}/$_gs_target ;;
				esac
				_gs_path=$_gs_target/$_gs_rest _gs_again=1
				break
			fi
			if [ ! -d "$_gs_cur" ]; then
				echo "glean_checkpoint_dir: $_gs_cur is not a directory" >&2
				return 1
			fi
			_gs_perm=$(stat -c %a -- "$_gs_cur") || return 1
			_gs_bits=$((0$_gs_perm))
			if [ "$_gs_mine" = 1 ] && [ "$_gs_owner" != "$_gs_me" ] && [ "$_gs_owner" != 0 ]; then
				echo "glean_checkpoint_dir: $_gs_cur is owned by uid $_gs_owner, not yours (uid $_gs_me), in a directory others may write into: refusing it (remove it, or ask the admin to create it for you)" >&2
				return 1
			fi
			if [ "$_gs_owner" != 0 ] && [ "$_gs_owner" != "$_gs_me" ]; then
				echo "glean_checkpoint_dir: $_gs_cur is owned by uid $_gs_owner, neither root nor you (uid $_gs_me): refusing it" >&2
				return 1
			fi
			_gs_mine=0 _gs_rootonly=0
			if [ $((_gs_bits & 18)) -ne 0 ]; then # others may write (022)
				if [ "$_gs_owner" != 0 ] || [ $((_gs_bits & 512)) -eq 0 ]; then
					printf 'glean_checkpoint_dir: %s may be written by others (mode %04o) and is not root'"'"'s with the sticky bit: refusing it\n' "$_gs_cur" "$_gs_bits" >&2
					return 1
				fi
				_gs_mine=1
			elif [ "$_gs_owner" = 0 ]; then
				_gs_rootonly=1
			fi
		done
		if [ -z "$_gs_again" ]; then
			return 0
		fi
	done
}

# glean_checkpoint_commit marks the state now in the checkpoint
# directory complete: a periodic checkpoint. Write each file of the state
# atomically first (to a temporary name, then mv), then call it. When an
# attempt is killed without the chance to save on TERM (kill -9, a node
# lost, the pilot gone), the next attempt resumes (GLEAN_RESTARTED=1) from
# the directory as it was left if it was committed at least once (or saved
# on TERM); without a complete save it starts from scratch with the
# directory emptied. A task that fails by itself always starts again from
# scratch. The commit is a file
# renamed into place (.glean-committed, holding the attempt and the time),
# after the directory's files were flushed (sync), so it survives a lost
# node too.
glean_checkpoint_commit() {
	_gcc_dir=$(glean_checkpoint_dir) || return 1
	sync -- "$_gcc_dir"/* "$_gcc_dir" 2>/dev/null || :
	if ! printf '%s %s\n' "$GLEAN_ATTEMPT" "$(date +%s)" >"$_gcc_dir/.glean-committed.tmp" ||
		! mv -f -- "$_gcc_dir/.glean-committed.tmp" "$_gcc_dir/.glean-committed"; then
		echo "glean_checkpoint_commit: cannot commit $_gcc_dir" >&2
		return 1
	fi
	sync -- "$_gcc_dir" 2>/dev/null || :
}

# glean_on_term CMD... runs CMD (evaluated like trap's argument) when the
# task gets SIGTERM, then exits 99 ("checkpointed: resume me") if CMD
# succeeded, 143 (not saved: the next attempt resumes from the task's last
# complete save, if it has one, else starts from scratch) if not. The TERM goes to the task's whole process group: a
# command running in the foreground is TERMed too and the shell runs CMD
# when it returned, so CMD must save the state of the last finished step,
# and a step's variables should change in one command (a=... b=... on one
# line). Write each file of the save to a temporary name and mv it: a kill
# during the save must leave the previous complete save.
glean_on_term() {
	if [ $# -eq 0 ]; then
		echo "glean_on_term: usage: glean_on_term CMD..." >&2
		return 2
	fi
	_glean_term_cmd=$*
	trap '_glean_term' TERM
}

_glean_term() {
	# Ignore further TERMs while saving: on scancel Slurm signals every
	# process of the job and the agent forwards its own TERM, so a second
	# one often follows the first; with the default action back it would
	# kill the shell half-way through the save.
	trap '' TERM
	if eval "$_glean_term_cmd"; then
		exit "$GLEAN_CHECKPOINT_EXIT"
	fi
	echo "glean_on_term: '$_glean_term_cmd' failed: the task's next attempt resumes from its last complete save, if any" >&2
	exit 143
}
