#!/usr/bin/env bash
# Start a real OpenStack Ironic (Debian python3-ironic) on loopback for integration tests:
# one process (API + conductor, rpc_transport=none), sqlite, fake-hardware; noauth, or Keystone
# tokens with IRONIC_AUTH=keystone (scripts/openstack-up.sh starts Keystone and sets it).
#
# stdout: exactly one line, the root URL (no /v1). Everything else goes to stderr.
# Writes $IRONIC_DIR/ironic.env with IRONIC_URL, IRONIC_PID, IRONIC_DIR.
#
# Knobs (environment):
#   IRONIC_DIR            state directory (default /tmp/corral-ironic)
#   IRONIC_HOST           listen address (default 127.0.0.1)
#   IRONIC_PORT           listen port (default 6385)
#   IRONIC_FRESH=1        stop a running instance and wipe the database first
#   IRONIC_START_TIMEOUT  seconds to wait for the API to answer (default 60)
#   IRONIC_NO_INSTALL=1   never apt-get install python3-ironic
#   IRONIC_DEBUG=1        debug logging in ironic.log
#   IRONIC_EXTRA_CONF     text appended to ironic.conf, e.g. $'[fake]\ndeploy_delay = 2'
#   IRONIC_NETWORK_INTERFACES  [DEFAULT] enabled_network_interfaces (default noop; the default
#                         network interface stays noop). flat and neutron need a [neutron] section
#                         in IRONIC_EXTRA_CONF (scripts/openstack-up.sh writes one with
#                         OPENSTACK_IRONIC_NEUTRON=1)
#                         A running Ironic started with another IRONIC_EXTRA_CONF or
#                         IRONIC_NETWORK_INTERFACES is restarted.
#   IRONIC_AUTH           noauth (default) or keystone: [DEFAULT] auth_strategy; a running Ironic
#                         started with other auth settings is restarted
#   with IRONIC_AUTH=keystone ([keystone_authtoken], password auth, interface public):
#   IRONIC_KEYSTONE_URL       Keystone's identity URL, e.g. http://127.0.0.1:5000/v3 (required)
#   IRONIC_KEYSTONE_USERNAME  Ironic's service user (default ironic)
#   IRONIC_KEYSTONE_PASSWORD  its password (required)
#   IRONIC_KEYSTONE_PROJECT   its project (default service); user and project domain: Default
set -euo pipefail

IRONIC_DIR=${IRONIC_DIR:-/tmp/corral-ironic}
IRONIC_HOST=${IRONIC_HOST:-127.0.0.1}
IRONIC_PORT=${IRONIC_PORT:-6385}
IRONIC_FRESH=${IRONIC_FRESH:-0}
IRONIC_START_TIMEOUT=${IRONIC_START_TIMEOUT:-60}
IRONIC_NO_INSTALL=${IRONIC_NO_INSTALL:-0}
IRONIC_DEBUG=${IRONIC_DEBUG:-0}
IRONIC_EXTRA_CONF=${IRONIC_EXTRA_CONF:-}
IRONIC_NETWORK_INTERFACES=${IRONIC_NETWORK_INTERFACES:-noop}
IRONIC_AUTH=${IRONIC_AUTH:-noauth}
IRONIC_KEYSTONE_URL=${IRONIC_KEYSTONE_URL:-}
IRONIC_KEYSTONE_USERNAME=${IRONIC_KEYSTONE_USERNAME:-ironic}
IRONIC_KEYSTONE_PASSWORD=${IRONIC_KEYSTONE_PASSWORD:-}
IRONIC_KEYSTONE_PROJECT=${IRONIC_KEYSTONE_PROJECT:-service}

PY=/usr/bin/python3
URL="http://${IRONIC_HOST}:${IRONIC_PORT}"
CONF="$IRONIC_DIR/ironic.conf"
PIDFILE="$IRONIC_DIR/ironic.pid"
ENVFILE="$IRONIC_DIR/ironic.env"
DB="$IRONIC_DIR/ironic.sqlite"
LOG="$IRONIC_DIR/log/ironic.log"
OUT="$IRONIC_DIR/log/stdout.log"
AUTHFILE="$IRONIC_DIR/ironic.auth"
SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "ironic-up: $*" >&2; }
die() { log "error: $*"; exit 1; }

# api_answers: GET / returns Ironic's version document.
api_answers() {
	local body
	body=$(curl -s -m 2 "$URL/" 2>/dev/null) || return 1
	[[ $body == *'"default_version"'* && $body == *'Ironic'* ]]
}

# port_busy: anything at all accepts connections on the port.
port_busy() {
	curl -s -o /dev/null -m 2 "$URL/" 2>/dev/null && return 0
	local rc=$?
	# 7 = could not connect; anything else means something is there.
	[[ $rc -ne 7 ]]
}

our_pid() {
	local pid
	[[ -f $PIDFILE ]] || return 1
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'ironic.cmd.singleprocess' || return 1
	echo "$pid"
}

write_env() {
	local pid=$1
	cat >"$ENVFILE" <<EOF
IRONIC_URL=$URL
IRONIC_PID=$pid
IRONIC_DIR=$IRONIC_DIR
EOF
	if [[ $IRONIC_AUTH == keystone ]]; then
		echo "IRONIC_AUTH_STRATEGY=keystone" >>"$ENVFILE"
	fi
}

# auth_settings: what a running Ironic must have been started with to be reused as it is.
auth_settings() {
	echo "auth_strategy=$IRONIC_AUTH"
	if [[ $IRONIC_AUTH == keystone ]]; then
		echo "keystone=$IRONIC_KEYSTONE_URL user=$IRONIC_KEYSTONE_USERNAME project=$IRONIC_KEYSTONE_PROJECT"
		echo "password_sha256=$(printf %s "$IRONIC_KEYSTONE_PASSWORD" | sha256sum | cut -d' ' -f1)"
	fi
	# Recorded only when they differ from the defaults, so that an Ironic started before they were
	# recorded is reused as it is.
	if [[ $IRONIC_NETWORK_INTERFACES != noop || -n $IRONIC_EXTRA_CONF ]]; then
		echo "network_interfaces=$IRONIC_NETWORK_INTERFACES extra_conf_sha256=$(printf %s "$IRONIC_EXTRA_CONF" | sha256sum | cut -d' ' -f1)"
	fi
}

# running_auth_settings: those of the running Ironic (one started without this record: noauth).
running_auth_settings() {
	if [[ -f $AUTHFILE ]]; then
		cat "$AUTHFILE"
	else
		echo "auth_strategy=noauth"
	fi
}

install_ironic() {
	local pkgs=()
	[[ -d /usr/lib/python3/dist-packages/ironic ]] || pkgs+=(python3-ironic)
	command -v curl >/dev/null || pkgs+=(curl)
	((${#pkgs[@]} > 0)) || return 0
	[[ $IRONIC_NO_INSTALL == 1 ]] && die "missing ${pkgs[*]} and IRONIC_NO_INSTALL=1"
	command -v apt-get >/dev/null || die "python3-ironic is missing and apt-get is not available"
	local sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
	log "installing ${pkgs[*]} (python3-ironic takes about 70 s)"
	export DEBIAN_FRONTEND=noninteractive
	if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null ||
		! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2; then
		log "apt-get update, then install again"
		"${sudo[@]}" apt-get update -q >&2 || die "apt-get update failed"
		"${sudo[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2 ||
			die "apt-get install python3-ironic failed"
	fi
	[[ -d /usr/lib/python3/dist-packages/ironic ]] || die "python3-ironic installed but the module is missing"
	command -v curl >/dev/null || die "curl is required"
}

write_conf() {
	local debug=false
	[[ $IRONIC_DEBUG == 1 ]] && debug=true
	cat >"$CONF" <<EOF
[DEFAULT]
auth_strategy = $IRONIC_AUTH
rpc_transport = none
host = ironic-test
my_ip = 127.0.0.1
state_path = $IRONIC_DIR
tempdir = $IRONIC_DIR/tmp
log_dir = $IRONIC_DIR/log
log_file = ironic.log
use_stderr = false
debug = $debug
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake,no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake
enabled_inspect_interfaces = fake,no-inspect
enabled_management_interfaces = fake
enabled_network_interfaces = $IRONIC_NETWORK_INTERFACES
enabled_power_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
enabled_vendor_interfaces = fake,no-vendor
default_bios_interface = no-bios
default_boot_interface = fake
default_console_interface = no-console
default_deploy_interface = fake
default_inspect_interface = no-inspect
default_management_interface = fake
default_network_interface = noop
default_power_interface = fake
default_raid_interface = no-raid
default_rescue_interface = no-rescue
default_storage_interface = noop
default_vendor_interface = no-vendor

[api]
host_ip = $IRONIC_HOST
port = $IRONIC_PORT
api_workers = 1

[conductor]
automated_clean = false
sync_power_state_interval = 0

[database]
connection = sqlite:///$DB

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = $IRONIC_DIR/lock
EOF
	if [[ $IRONIC_AUTH == keystone ]]; then
		cat >>"$CONF" <<EOF

[keystone_authtoken]
www_authenticate_uri = $IRONIC_KEYSTONE_URL
auth_url = $IRONIC_KEYSTONE_URL
auth_type = password
interface = public
region_name = RegionOne
username = $IRONIC_KEYSTONE_USERNAME
password = $IRONIC_KEYSTONE_PASSWORD
project_name = $IRONIC_KEYSTONE_PROJECT
user_domain_name = Default
project_domain_name = Default
EOF
	fi
	if [[ -n $IRONIC_EXTRA_CONF ]]; then
		printf '\n%s\n' "$IRONIC_EXTRA_CONF" >>"$CONF"
	fi
}

dbsync() {
	local cmd=$1
	(cd "$IRONIC_DIR" && env -u PYTHONPATH -u PYTHONHOME "$PY" -c \
		'import sys; from ironic.cmd.dbsync import main; sys.exit(main())' \
		--config-file "$CONF" "$cmd" >>"$OUT" 2>&1) ||
		{ tail -n 20 "$OUT" >&2; [[ -f $LOG ]] && tail -n 20 "$LOG" >&2; die "ironic dbsync $cmd failed (log: $OUT)"; }
}

# --- already up? -------------------------------------------------------------------------------
case $IRONIC_AUTH in
noauth) ;;
keystone)
	[[ -n $IRONIC_KEYSTONE_URL ]] || die "IRONIC_AUTH=keystone needs IRONIC_KEYSTONE_URL (Keystone's identity URL)"
	[[ -n $IRONIC_KEYSTONE_PASSWORD ]] || die "IRONIC_AUTH=keystone needs IRONIC_KEYSTONE_PASSWORD (the service user's)"
	;;
*) die "IRONIC_AUTH=$IRONIC_AUTH: want noauth or keystone" ;;
esac
install_ironic
[[ -x $PY ]] || die "$PY not found"

if [[ $IRONIC_FRESH == 1 ]]; then
	IRONIC_DIR=$IRONIC_DIR "$SCRIPTS_DIR/ironic-down.sh" >&2 || true
	rm -f "$DB" "$DB-journal" "$DB-wal" "$DB-shm"
fi

if pid=$(our_pid); then
	if [[ $(running_auth_settings) != "$(auth_settings)" ]]; then
		log "process $pid runs with other settings ($(running_auth_settings | tr '\n' ' ')); restarting it"
		IRONIC_DIR=$IRONIC_DIR "$SCRIPTS_DIR/ironic-down.sh" >&2 || true
	elif api_answers; then
		write_env "$pid"
		echo "$URL"
		exit 0
	else
		log "process $pid is alive but the API does not answer; restarting it"
		IRONIC_DIR=$IRONIC_DIR "$SCRIPTS_DIR/ironic-down.sh" >&2 || true
	fi
fi
rm -f "$PIDFILE"

if port_busy; then
	die "something else answers on $URL (not the Ironic started from $IRONIC_DIR); refusing to start"
fi

# --- prepare -----------------------------------------------------------------------------------
mkdir -p "$IRONIC_DIR"/{tmp,log,lock}
write_conf
if [[ -s $DB ]]; then
	log "upgrading existing database $DB"
	dbsync upgrade
else
	log "creating database schema $DB"
	dbsync create_schema
fi

# --- start -------------------------------------------------------------------------------------
log "starting ironic on $URL (state in $IRONIC_DIR)"
: >>"$OUT"
start_size=$(stat -c %s "$OUT")
(
	cd "$IRONIC_DIR"
	exec setsid env -u PYTHONPATH -u PYTHONHOME "$PY" -c \
		'import sys; from ironic.cmd.singleprocess import main; sys.exit(main())' \
		--config-file "$CONF" >>"$OUT" 2>&1 </dev/null
) &
pid=$!
echo "$pid" >"$PIDFILE"
auth_settings >"$AUTHFILE"

deadline=$((SECONDS + IRONIC_START_TIMEOUT))
while :; do
	if ! kill -0 "$pid" 2>/dev/null; then
		log "ironic exited during start-up; last log lines:"
		tail -c +$((start_size + 1)) "$OUT" | tail -n 30 >&2 || true
		[[ -f $LOG ]] && tail -n 30 "$LOG" >&2
		rm -f "$PIDFILE"
		exit 1
	fi
	if api_answers; then
		break
	fi
	if ((SECONDS >= deadline)); then
		log "API did not answer within ${IRONIC_START_TIMEOUT}s; last log lines:"
		[[ -f $LOG ]] && tail -n 30 "$LOG" >&2
		IRONIC_DIR=$IRONIC_DIR "$SCRIPTS_DIR/ironic-down.sh" >&2 || true
		exit 1
	fi
	sleep 0.2
done

write_env "$pid"
log "ironic is up (pid $pid)"
echo "$URL"
