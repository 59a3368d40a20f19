#!/usr/bin/env bash
# Stop the Ironic started by scripts/ironic-up.sh: only the PID recorded in $IRONIC_DIR/ironic.pid,
# and only if that process really is ironic.cmd.singleprocess. SIGTERM, then SIGKILL after
# IRONIC_STOP_TIMEOUT seconds (default 10). The state directory (database, logs) is kept.
set -euo pipefail

IRONIC_DIR=${IRONIC_DIR:-/tmp/corral-ironic}
IRONIC_STOP_TIMEOUT=${IRONIC_STOP_TIMEOUT:-10}
PIDFILE="$IRONIC_DIR/ironic.pid"

log() { echo "ironic-down: $*" >&2; }

is_ironic() {
	[[ -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q 'ironic.cmd.singleprocess'
}

if [[ ! -f $PIDFILE ]]; then
	log "no pid file $PIDFILE: nothing to stop"
	exit 0
fi
pid=$(cat "$PIDFILE" 2>/dev/null || true)
if [[ ! $pid =~ ^[0-9]+$ ]]; then
	log "pid file $PIDFILE holds no pid; removing it"
	rm -f "$PIDFILE"
	exit 0
fi
if ! is_ironic "$pid"; then
	log "process $pid is not running ironic (stale pid file); removing it"
	rm -f "$PIDFILE"
	exit 0
fi

log "stopping ironic (pid $pid)"
kill -TERM "$pid" 2>/dev/null || true
deadline=$((SECONDS + IRONIC_STOP_TIMEOUT))
while is_ironic "$pid"; do
	if ((SECONDS >= deadline)); then
		log "still running after ${IRONIC_STOP_TIMEOUT}s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			is_ironic "$pid" || break
			sleep 0.1
		done
		break
	fi
	sleep 0.1
done
if is_ironic "$pid"; then
	log "error: process $pid did not exit"
	exit 1
fi
rm -f "$PIDFILE" "$IRONIC_DIR/ironic.env"
log "stopped"
