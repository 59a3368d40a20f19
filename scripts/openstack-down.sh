#!/usr/bin/env bash
# Stop what scripts/openstack-up.sh started from $OPENSTACK_DIR: Ironic (scripts/ironic-down.sh),
# Glance, Keystone and MariaDB. Only the pids recorded in OPENSTACK_DIR are stopped, and only when the
# process's command line shows it is the one started from that directory: SIGTERM (MariaDB: a clean
# shutdown), then SIGKILL after OPENSTACK_STOP_TIMEOUT seconds (default 15).
# Removes pid files, the socket and openstack.env; keeps the databases and logs unless
# OPENSTACK_PURGE=1, which deletes OPENSTACK_DIR altogether.
set -euo pipefail

OPENSTACK_DIR=${OPENSTACK_DIR:-/tmp/corral-openstack}
OPENSTACK_STOP_TIMEOUT=${OPENSTACK_STOP_TIMEOUT:-15}
OPENSTACK_PURGE=${OPENSTACK_PURGE:-0}
SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "openstack-down: $*" >&2; }

if [[ ! -d $OPENSTACK_DIR ]]; then
	log "no $OPENSTACK_DIR: nothing to stop"
	exit 0
fi
OPENSTACK_DIR=$(cd "$OPENSTACK_DIR" && pwd)

# pid_of FILE PATTERN: the pid in FILE when that process is alive and its command line holds PATTERN.
pid_of() {
	local pid
	[[ -f $1 ]] || return 1
	pid=$(cat "$1" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2" || return 1
	echo "$pid"
}

# stop NAME PIDFILE PATTERN [COMMAND...]: COMMAND (default SIGTERM) asks it to exit; SIGKILL after the timeout.
stop() {
	local name=$1 file=$2 pattern=$3 pid deadline
	shift 3
	if ! pid=$(pid_of "$file" "$pattern"); then
		[[ -f $file ]] && log "$name: stale pid file $file; removing it"
		rm -f "$file"
		return 0
	fi
	log "stopping $name (pid $pid)"
	if (($# > 0)); then
		"$@" >&2 || kill -TERM "$pid" 2>/dev/null || true
	else
		kill -TERM "$pid" 2>/dev/null || true
	fi
	deadline=$((SECONDS + OPENSTACK_STOP_TIMEOUT))
	while pid_of "$file" "$pattern" >/dev/null; do
		if ((SECONDS >= deadline)); then
			log "$name still running after ${OPENSTACK_STOP_TIMEOUT}s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.5
			break
		fi
		sleep 0.1
	done
	if pid_of "$file" "$pattern" >/dev/null; then
		log "error: $name (pid $pid) did not exit"
		return 1
	fi
	rm -f "$file"
}

rc=0
if [[ -d $OPENSTACK_DIR/ironic ]]; then
	IRONIC_DIR="$OPENSTACK_DIR/ironic" IRONIC_STOP_TIMEOUT=$OPENSTACK_STOP_TIMEOUT "$SCRIPTS_DIR/ironic-down.sh" || rc=1
fi
stop glance "$OPENSTACK_DIR/glance.pid" "$OPENSTACK_DIR/glance/glance-api.conf" || rc=1
stop keystone "$OPENSTACK_DIR/keystone.pid" "$OPENSTACK_DIR/keystone/keystone-server.py" || rc=1
stop mariadb "$OPENSTACK_DIR/mariadb.pid" "--datadir=$OPENSTACK_DIR/mysql" \
	mariadb-admin --no-defaults --socket="$OPENSTACK_DIR/mysql.sock" -uroot shutdown || rc=1
rm -f "$OPENSTACK_DIR/openstack.env" "$OPENSTACK_DIR/mysql.sock" "$OPENSTACK_DIR/mariadb.own.pid"
if ((rc != 0)); then
	log "error: some processes did not stop; $OPENSTACK_DIR is kept"
	exit 1
fi
if [[ $OPENSTACK_PURGE == 1 ]]; then
	if [[ -f $OPENSTACK_DIR/.corral-openstack ]]; then
		log "removing $OPENSTACK_DIR"
		rm -rf "$OPENSTACK_DIR"
	else
		log "not removing $OPENSTACK_DIR: it lacks the .corral-openstack marker of openstack-up.sh"
	fi
fi
log "stopped"
