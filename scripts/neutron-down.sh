#!/usr/bin/env bash
# Stop the neutron-server that scripts/neutron-up.sh started from $NEUTRON_DIR (default /tmp/corral-neutron).
# Only the PID in $NEUTRON_DIR/neutron.pid, and only if its command line shows our neutron.conf; its
# children (rpc worker, periodic worker) are found by parent PID before the SIGTERM. SIGTERM to the
# parent (it stops its workers; ~2-3 s), then SIGKILL to whatever of them is left after
# NEUTRON_STOP_TIMEOUT seconds (default 15). Keeps the database and logs; NEUTRON_PURGE=1 deletes
# NEUTRON_DIR afterwards.
set -euo pipefail

NEUTRON_DIR=${NEUTRON_DIR:-/tmp/corral-neutron}
NEUTRON_STOP_TIMEOUT=${NEUTRON_STOP_TIMEOUT:-15}
NEUTRON_PURGE=${NEUTRON_PURGE:-0}
PIDFILE="$NEUTRON_DIR/neutron.pid"

say() { echo "neutron-down: $*" >&2; }

purge() {
	if [[ $NEUTRON_PURGE == 1 && -d $NEUTRON_DIR ]]; then
		rm -rf -- "$NEUTRON_DIR"
		say "removed $NEUTRON_DIR"
	fi
}

if [[ ! -d $NEUTRON_DIR ]]; then
	say "no $NEUTRON_DIR: nothing to stop"
	exit 0
fi
NEUTRON_DIR=$(cd "$NEUTRON_DIR" && pwd)
PIDFILE="$NEUTRON_DIR/neutron.pid"
CONF="$NEUTRON_DIR/neutron.conf"

is_ours() { [[ -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "--config-file $CONF"; }

if [[ ! -f $PIDFILE ]]; then
	say "no pid file $PIDFILE: nothing to stop"
	purge
	exit 0
fi
pid=$(cat "$PIDFILE" 2>/dev/null || true)
if [[ ! $pid =~ ^[0-9]+$ ]] || ! is_ours "$pid"; then
	say "process ${pid:-?} is not our neutron-server (stale pid file); removing it"
	rm -f "$PIDFILE" "$NEUTRON_DIR/neutron.env"
	purge
	exit 0
fi

# children by parent PID (the workers carry our --config-file in their process title as well)
kids=()
for k in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
	is_ours "$k" && kids+=("$k")
done

say "stopping neutron-server (pid $pid, workers ${kids[*]:-none})"
kill -TERM "$pid" 2>/dev/null || true
deadline=$((SECONDS + NEUTRON_STOP_TIMEOUT))
alive() {
	local p
	for p in "$pid" "${kids[@]}"; do
		[[ -n $p ]] && kill -0 "$p" 2>/dev/null && is_ours "$p" && return 0
	done
	return 1
}
while alive; do
	if ((SECONDS >= deadline)); then
		say "still running after ${NEUTRON_STOP_TIMEOUT}s: SIGKILL"
		for p in "$pid" "${kids[@]}"; do
			[[ -n $p ]] && is_ours "$p" && kill -KILL "$p" 2>/dev/null || true
		done
		sleep 0.5
		break
	fi
	sleep 0.1
done
if alive; then
	say "error: neutron-server (pid $pid) did not exit"
	exit 1
fi
rm -f "$PIDFILE" "$NEUTRON_DIR/neutron.env"
say "stopped"
purge
