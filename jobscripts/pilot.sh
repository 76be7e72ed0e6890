#!/bin/sh
# pilot.sh: the batch script of a glean pilot (ARCHITECTURE.md, "Pilots").
#
#   pilot.sh AGENT_PATH AGENT_ARGS...
#   e.g. pilot.sh /usr/bin/glean-agent pilot --config /etc/glean/glean.toml --job 1000.0190...-abcd1234
#
# gleand submits it as the job's owner with --export=NONE and
# --output=/dev/null, so it sets a plain PATH and a private umask, then
# execs the agent: the agent is the batch shell, so Slurm's
# --signal=B:TERM@grace reaches it. The agent writes its own log into the
# job's work directory (logs/pilot-$SLURM_JOB_ID.log).
set -eu

PATH=/usr/local/bin:/usr/bin:/bin
export PATH
umask 077

if [ "$#" -lt 2 ]; then
	echo "pilot.sh: usage: pilot.sh AGENT_PATH AGENT_ARGS..." >&2
	exit 2
fi
agent=$1
shift
case $agent in
/*) ;;
*)
	echo "pilot.sh: the agent's path must be absolute, not '$agent'" >&2
	exit 2
	;;
esac
if [ ! -x "$agent" ]; then
	echo "pilot.sh: $agent is not an executable file on $(hostname)" >&2
	exit 2
fi
exec "$agent" "$@"
