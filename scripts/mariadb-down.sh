#!/usr/bin/env bash
# Stop the MariaDB started by scripts/mariadb-up.sh (same MARIADB_DIR). Only the process whose
# PID file and command line match that data directory is stopped. MARIADB_WIPE=1 also removes
# the state directory.
set -euo pipefail

MARIADB_DIR=${MARIADB_DIR:-/tmp/corral-mariadb}
MARIADB_SOCKET=${MARIADB_SOCKET:-$MARIADB_DIR/mysqld.sock}
MARIADB_WIPE=${MARIADB_WIPE:-0}
DATA="$MARIADB_DIR/data"
PIDFILE="$MARIADB_DIR/mariadb.pid"

log() { echo "mariadb-down: $*" >&2; }

pid=""
if [[ -f $PIDFILE ]]; then
	p=$(cat "$PIDFILE" 2>/dev/null || true)
	if [[ $p =~ ^[0-9]+$ && -r /proc/$p/cmdline ]] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -q -- "--datadir=$DATA"; then
		pid=$p
	fi
fi
if [[ -n $pid ]]; then
	PATH=$PATH:/usr/sbin
	mariadb-admin --socket="$MARIADB_SOCKET" -uroot shutdown 2>/dev/null || kill "$pid" 2>/dev/null || true
	for _ in $(seq 100); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
	if [[ -d /proc/$pid ]]; then
		log "mariadbd $pid did not stop in 10 s; killing it"
		kill -9 "$pid" 2>/dev/null || true
	fi
	log "stopped (pid $pid)"
else
	log "not running"
fi
rm -f "$PIDFILE" "$MARIADB_DIR/mariadb.env"
if [[ $MARIADB_WIPE == 1 ]]; then
	rm -rf "$MARIADB_DIR"
fi
