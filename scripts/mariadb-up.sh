#!/usr/bin/env bash
# Start a MariaDB (Debian's mariadb-server) on loopback for the upgrade tests: a private data
# directory, socket and TCP port; root has no password (loopback and the socket only).
#
# stdout: exactly one line, the TCP address host:port. Everything else goes to stderr.
# Writes $MARIADB_DIR/mariadb.env with MARIADB_ADDR, MARIADB_HOST, MARIADB_PORT, MARIADB_SOCKET,
# MARIADB_PID, MARIADB_DIR (source it, or read MARIADB_ADDR from stdout).
#
# Knobs (environment):
#   MARIADB_DIR            state directory (default /tmp/corral-mariadb)
#   MARIADB_HOST           listen address (default 127.0.0.1)
#   MARIADB_PORT           listen port (default 3307)
#   MARIADB_SOCKET         unix socket (default $MARIADB_DIR/mysqld.sock)
#   MARIADB_FRESH=1        stop a running instance and wipe the data directory first
#   MARIADB_START_TIMEOUT  seconds to wait for the server to answer (default 60)
#   MARIADB_NO_INSTALL=1   never apt-get install mariadb-server
#
# Test databases and users: `mariadb --socket=$MARIADB_SOCKET -uroot -e "create database ..."`.
set -euo pipefail

MARIADB_DIR=${MARIADB_DIR:-/tmp/corral-mariadb}
MARIADB_HOST=${MARIADB_HOST:-127.0.0.1}
MARIADB_PORT=${MARIADB_PORT:-3307}
MARIADB_SOCKET=${MARIADB_SOCKET:-$MARIADB_DIR/mysqld.sock}
MARIADB_FRESH=${MARIADB_FRESH:-0}
MARIADB_START_TIMEOUT=${MARIADB_START_TIMEOUT:-60}
MARIADB_NO_INSTALL=${MARIADB_NO_INSTALL:-0}

DATA="$MARIADB_DIR/data"
PIDFILE="$MARIADB_DIR/mariadb.pid"
ENVFILE="$MARIADB_DIR/mariadb.env"
LOG="$MARIADB_DIR/mariadb.log"
SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "mariadb-up: $*" >&2; }
die() { log "error: $*"; exit 1; }

case $MARIADB_HOST in
127.*) ;;
*) die "MARIADB_HOST=$MARIADB_HOST: only loopback addresses (127.0.0.0/8) are allowed" ;;
esac

our_pid() {
	local pid
	[[ -f $PIDFILE ]] || return 1
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--datadir=$DATA" || return 1
	echo "$pid"
}

answers() {
	mariadb-admin --socket="$MARIADB_SOCKET" -uroot --connect-timeout=2 ping >/dev/null 2>&1
}

write_env() {
	cat >"$ENVFILE" <<EOF
MARIADB_ADDR=$MARIADB_HOST:$MARIADB_PORT
MARIADB_HOST=$MARIADB_HOST
MARIADB_PORT=$MARIADB_PORT
MARIADB_SOCKET=$MARIADB_SOCKET
MARIADB_PID=$1
MARIADB_DIR=$MARIADB_DIR
EOF
}

install_mariadb() {
	command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null && return 0
	[[ $MARIADB_NO_INSTALL == 1 ]] && die "mariadb-server is missing and MARIADB_NO_INSTALL=1"
	command -v apt-get >/dev/null || die "mariadb-server is missing and apt-get is not available"
	local sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
	log "installing mariadb-server (about 20 s)"
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends mariadb-server >&2 ||
		die "apt-get install mariadb-server failed"
}

PATH=$PATH:/usr/sbin
install_mariadb

if [[ $MARIADB_FRESH == 1 ]]; then
	"$SCRIPTS_DIR/mariadb-down.sh" >&2 || true
	rm -rf "$DATA"
fi

if pid=$(our_pid) && answers; then
	write_env "$pid"
	echo "$MARIADB_HOST:$MARIADB_PORT"
	exit 0
fi
if pid=$(our_pid); then
	log "stale server $pid does not answer; stopping it"
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
fi
rm -f "$PIDFILE"

if (exec 3<>"/dev/tcp/$MARIADB_HOST/$MARIADB_PORT") 2>/dev/null; then
	die "something else listens on $MARIADB_HOST:$MARIADB_PORT: choose another MARIADB_PORT"
fi

mkdir -p "$MARIADB_DIR" "$(dirname "$MARIADB_SOCKET")"
if [[ ! -d $DATA/mysql ]]; then
	log "initialising $DATA"
	mariadb-install-db --datadir="$DATA" --user="$(id -un)" --auth-root-authentication-method=normal \
		--skip-test-db >"$MARIADB_DIR/install.log" 2>&1 || { cat "$MARIADB_DIR/install.log" >&2; die "mariadb-install-db failed"; }
fi

log "starting mariadbd on $MARIADB_HOST:$MARIADB_PORT (socket $MARIADB_SOCKET)"
setsid mariadbd --no-defaults --datadir="$DATA" --socket="$MARIADB_SOCKET" --port="$MARIADB_PORT" \
	--bind-address="$MARIADB_HOST" --user="$(id -un)" --pid-file="$MARIADB_DIR/mariadbd.pid" \
	--log-error="$LOG" --skip-name-resolve </dev/null >>"$LOG" 2>&1 &
pid=$!
echo "$pid" >"$PIDFILE"

deadline=$((SECONDS + MARIADB_START_TIMEOUT))
until answers; do
	if ! [[ -d /proc/$pid ]]; then
		tail -n 20 "$LOG" >&2 || true
		rm -f "$PIDFILE"
		die "mariadbd exited during start (log: $LOG)"
	fi
	((SECONDS < deadline)) || { tail -n 20 "$LOG" >&2 || true; die "mariadbd did not answer within ${MARIADB_START_TIMEOUT}s"; }
	sleep 0.2
done
write_env "$pid"
log "up (pid $pid); env in $ENVFILE"
echo "$MARIADB_HOST:$MARIADB_PORT"
