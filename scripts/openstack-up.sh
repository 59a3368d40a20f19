#!/usr/bin/env bash
# Start a real OpenStack control plane on loopback for integration tests, from Debian packages:
#   MariaDB (Keystone's database; unix socket only, no TCP port),
#   Keystone (fernet tokens, threaded wsgiref server on KEYSTONE_PORT),
#   Ironic with auth_strategy = keystone (scripts/ironic-up.sh with IRONIC_AUTH=keystone) and a [glance]
#     section, so that it fetches Glance images with its service user,
#   Glance (SQLite, file store, on GLANCE_PORT; OPENSTACK_WITH_GLANCE=0 leaves it out),
# and fills Keystone with the projects, users, roles and catalog corral's tests use:
#   admin (bootstrap; project admin, role admin)
#   project service: service users corral, ironic, glance (role admin)
#   project demo-a: alice (member), carol (reader);  project demo-b: bob (member)
#   role baremetal_denied (no user has it): Ironic's policy.yaml refuses node listings (403) and nodes (404) to a token
#     with it, whatever its other roles, so that a test can tell whether a caller's own token reached Ironic
#   catalog (RegionOne, public/internal/admin): identity, baremetal (Ironic), image (Glance), and
#   corral's own compute (CORRAL_COMPUTE_URL) and placement (CORRAL_PLACEMENT_URL).
# More services go in the catalog with OPENSTACK_EXTRA_ENDPOINTS=name:type:url.
#
# stdout: exactly one line, the path of $OPENSTACK_DIR/openstack.env (KEY=VALUE lines: OS_* for the
# admin, KEYSTONE_URL, IRONIC_URL (also as OPENSTACK_IRONIC_URL), every user's name/password/project, BAREMETAL_DENIED_ROLE;
# load with `set -a; . FILE; set +a`, in a subshell where it must not replace a noauth Ironic's IRONIC_URL).
# Everything else goes to stderr. Running it again while up changes nothing and takes well under a second.
#
# Measured on a 2-core Debian 12 machine that other builds and tests shared (load average 8-18, so
# these are upper bounds; a quiet machine is faster):
#   install, once per machine (OPENSTACK_NO_INSTALL=1 refuses it): mariadb-server ~17 s,
#     python3-keystone ~25 s, python3-ironic ~70 s (shared/real-openstack and real-ironic NOTES); the
#     whole set with python3-glance, glance-common and the openstack CLI took ~290 s in one apt-get.
#   fresh start (empty OPENSTACK_DIR): 62-90 s  (MariaDB init 2-9 s; key repositories + db_sync +
#     bootstrap in one process 30-45 s, Ironic's schema and start run meanwhile; Keystone start 7-21 s;
#     provisioning 9-15 s)
#   again while up: 0.3 s (5-11 s with OPENSTACK_RECHECK=1)
#   start on a kept OPENSTACK_DIR after openstack-down.sh: 26-51 s (no db_sync/bootstrap)
#   openstack-down.sh: 3-5 s
#   authenticated Keystone requests: ~50 ms each; 200 token validations from 20 clients: 9 s; 60 token
#     issues from 10 clients: 2.4 s, no errors (threaded server, MariaDB, in-memory cache)
#
# Knobs (environment):
#   OPENSTACK_DIR            state directory (default /tmp/corral-openstack)
#   OPENSTACK_HOST           listen address of Keystone and Ironic (default 127.0.0.1)
#   KEYSTONE_PORT            Keystone's port (default 5000)
#   OPENSTACK_IRONIC_PORT    Ironic's port (default 6386, beside a noauth Ironic on 6385)
#   OPENSTACK_IRONIC_EXTRA_CONF  passed to ironic-up.sh as IRONIC_EXTRA_CONF (other IRONIC_* are not passed)
#   OPENSTACK_IRONIC_NEUTRON=1  Ironic's nodes may use Neutron: enabled_network_interfaces = noop,flat,neutron
#                            (the default stays noop) and a [neutron] section: the ironic service user, the
#                            catalog's network endpoint (RegionOne, public), cleaning_network and
#                            provisioning_network = OPENSTACK_IRONIC_NEUTRON_NETWORK (default provider, the
#                            shared network of scripts/neutron-up.sh). Ironic reads the catalog and the network
#                            only when a node with flat or neutron is validated or gets a VIF, so Neutron may
#                            be started after this script (neutron-up.sh needs this Keystone); openstack.env
#                            then has OPENSTACK_IRONIC_NETWORK_INTERFACES and OPENSTACK_IRONIC_NEUTRON_NETWORK
#   OPENSTACK_WITH_IRONIC=0  start no Ironic (the baremetal catalog entry is still written)
#   OPENSTACK_WITH_GLANCE=0  start no Glance (and write no image catalog entry)
#   GLANCE_PORT              Glance's port (default 9292)
#   OS_ADMIN_PASSWORD        admin's password (default corral-admin)
#   OPENSTACK_SERVICE_PASSWORD  password of the service users corral, ironic, glance (default corral-service)
#   OPENSTACK_DEMO_PASSWORD  password of alice, bob, carol (default corral-demo)
#   CORRAL_COMPUTE_URL       catalog URL of corral's compute API (default http://127.0.0.2:7480/compute/v2.1)
#   CORRAL_PLACEMENT_URL     catalog URL of corral's placement API (default http://127.0.0.2:7480/placement)
#   OPENSTACK_EXTRA_ENDPOINTS  more catalog entries, "name:type:url" separated by spaces
#                            (e.g. glance:image:http://127.0.0.1:9292)
#   OPENSTACK_FRESH=1        stop everything and wipe OPENSTACK_DIR first
#   OPENSTACK_RECHECK=1      re-check every Keystone object even when this Keystone process was provisioned
#                            with the same settings already (the default skips that, ~5 s)
#   OPENSTACK_NO_INSTALL=1   never apt-get install missing packages
#   OPENSTACK_INSTALL_CLIENT=1  also install the openstack CLI (python3-openstackclient, python3-ironicclient)
#   OPENSTACK_START_TIMEOUT  seconds to wait for each service (default 60)
#   OPENSTACK_DEBUG=1        debug logging in keystone.log (and ironic.log)
# Stop with scripts/openstack-down.sh (same OPENSTACK_DIR).
set -euo pipefail

OPENSTACK_DIR=${OPENSTACK_DIR:-/tmp/corral-openstack}
OPENSTACK_HOST=${OPENSTACK_HOST:-127.0.0.1}
KEYSTONE_PORT=${KEYSTONE_PORT:-5000}
OPENSTACK_IRONIC_PORT=${OPENSTACK_IRONIC_PORT:-6386}
OPENSTACK_IRONIC_EXTRA_CONF=${OPENSTACK_IRONIC_EXTRA_CONF:-}
OPENSTACK_IRONIC_NEUTRON=${OPENSTACK_IRONIC_NEUTRON:-0}
OPENSTACK_IRONIC_NEUTRON_NETWORK=${OPENSTACK_IRONIC_NEUTRON_NETWORK:-provider}
OPENSTACK_WITH_IRONIC=${OPENSTACK_WITH_IRONIC:-1}
OPENSTACK_WITH_GLANCE=${OPENSTACK_WITH_GLANCE:-1}
GLANCE_PORT=${GLANCE_PORT:-9292}
OS_ADMIN_PASSWORD=${OS_ADMIN_PASSWORD:-corral-admin}
OPENSTACK_SERVICE_PASSWORD=${OPENSTACK_SERVICE_PASSWORD:-corral-service}
OPENSTACK_DEMO_PASSWORD=${OPENSTACK_DEMO_PASSWORD:-corral-demo}
CORRAL_COMPUTE_URL=${CORRAL_COMPUTE_URL:-http://127.0.0.2:7480/compute/v2.1}
CORRAL_PLACEMENT_URL=${CORRAL_PLACEMENT_URL:-http://127.0.0.2:7480/placement}
OPENSTACK_EXTRA_ENDPOINTS=${OPENSTACK_EXTRA_ENDPOINTS:-}
OPENSTACK_FRESH=${OPENSTACK_FRESH:-0}
OPENSTACK_NO_INSTALL=${OPENSTACK_NO_INSTALL:-0}
OPENSTACK_INSTALL_CLIENT=${OPENSTACK_INSTALL_CLIENT:-0}
OPENSTACK_RECHECK=${OPENSTACK_RECHECK:-0}
OPENSTACK_START_TIMEOUT=${OPENSTACK_START_TIMEOUT:-60}
OPENSTACK_DEBUG=${OPENSTACK_DEBUG:-0}

PY=/usr/bin/python3
SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OPENSTACK_DIR"
OPENSTACK_DIR=$(cd "$OPENSTACK_DIR" && pwd)
KEYSTONE_URL="http://${OPENSTACK_HOST}:${KEYSTONE_PORT}"
IRONIC_URL="http://${OPENSTACK_HOST}:${OPENSTACK_IRONIC_PORT}"
GLANCE_URL="http://${OPENSTACK_HOST}:${GLANCE_PORT}"
GLDIR="$OPENSTACK_DIR/glance"
GLPIDFILE="$OPENSTACK_DIR/glance.pid"
ENVFILE="$OPENSTACK_DIR/openstack.env"
LOGDIR="$OPENSTACK_DIR/log"
DBDIR="$OPENSTACK_DIR/mysql"
DBSOCK="$OPENSTACK_DIR/mysql.sock"
DBPIDFILE="$OPENSTACK_DIR/mariadb.pid"
KSDIR="$OPENSTACK_DIR/keystone"
KSPIDFILE="$OPENSTACK_DIR/keystone.pid"
KSSERVER="$KSDIR/keystone-server.py"
KSDB_PASSWORD=keystone-db
SERVICE_USERS=(corral ironic glance)

log() { echo "openstack-up: [$((SECONDS - started))s] $*" >&2; }
started=$SECONDS
die() { log "error: $*"; exit 1; }

# Only sourced lines of KEY=VALUE go in openstack.env; refuse values that would need quoting.
for v in OS_ADMIN_PASSWORD OPENSTACK_SERVICE_PASSWORD OPENSTACK_DEMO_PASSWORD CORRAL_COMPUTE_URL CORRAL_PLACEMENT_URL \
	OPENSTACK_IRONIC_NEUTRON_NETWORK; do
	[[ ${!v} =~ ^[A-Za-z0-9._:/@%+=,-]+$ ]] || die "$v holds characters that need quoting; use [A-Za-z0-9._:/@%+=,-]"
done
((${#DBSOCK} < 100)) || die "OPENSTACK_DIR is too long for a unix socket path ($DBSOCK); choose a shorter one"

# --- install -----------------------------------------------------------------------------------
install_missing() {
	local pkgs=()
	[[ -x /usr/sbin/mariadbd ]] || pkgs+=(mariadb-server)
	[[ -d /usr/lib/python3/dist-packages/keystone ]] || pkgs+=(python3-keystone)
	[[ -d /usr/lib/python3/dist-packages/pymysql ]] || pkgs+=(python3-pymysql)
	command -v curl >/dev/null || pkgs+=(curl)
	if [[ $OPENSTACK_WITH_IRONIC == 1 && ! -d /usr/lib/python3/dist-packages/ironic ]]; then
		pkgs+=(python3-ironic)
	fi
	if [[ $OPENSTACK_WITH_GLANCE == 1 ]]; then
		[[ -d /usr/lib/python3/dist-packages/glance ]] || pkgs+=(python3-glance)
		[[ -f /etc/glance/glance-api-paste.ini ]] || pkgs+=(glance-common)
	fi
	if [[ $OPENSTACK_INSTALL_CLIENT == 1 ]]; then
		command -v openstack >/dev/null || pkgs+=(python3-openstackclient)
		[[ -d /usr/lib/python3/dist-packages/ironicclient ]] || pkgs+=(python3-ironicclient)
	fi
	((${#pkgs[@]} > 0)) || return 0
	[[ $OPENSTACK_NO_INSTALL == 1 ]] && die "missing ${pkgs[*]} and OPENSTACK_NO_INSTALL=1"
	command -v apt-get >/dev/null || die "missing ${pkgs[*]} and apt-get is not available"
	local sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
	log "installing ${pkgs[*]} (a minute or two)"
	export DEBIAN_FRONTEND=noninteractive
	if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null ||
		! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2; then
		log "apt-get update, then install again"
		"${sudo[@]}" apt-get update -q >&2 || die "apt-get update failed"
		"${sudo[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2 ||
			die "apt-get install ${pkgs[*]} failed"
	fi
}
install_missing
[[ -x $PY ]] || die "$PY not found"

# pid_of FILE PATTERN: the pid in FILE when that process is alive and its command line holds PATTERN.
pid_of() {
	local pid
	[[ -f $1 ]] || return 1
	pid=$(cat "$1" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2" || return 1
	echo "$pid"
}

# wait_for WHAT PID CHECK...: until CHECK succeeds; fails when PID exits or the timeout passes.
wait_for() {
	local what=$1 pid=$2 deadline=$((SECONDS + OPENSTACK_START_TIMEOUT))
	shift 2
	until "$@"; do
		kill -0 "$pid" 2>/dev/null || { log "$what exited during start-up"; return 1; }
		((SECONDS < deadline)) || { log "$what did not answer within ${OPENSTACK_START_TIMEOUT}s"; return 1; }
		sleep 0.2
	done
}

# The state directory is ours when it is empty or holds our marker: never wipe or fill another one.
MARKER="$OPENSTACK_DIR/.corral-openstack"
if [[ ! -f $MARKER ]]; then
	[[ -z $(ls -A "$OPENSTACK_DIR") ]] || die "OPENSTACK_DIR=$OPENSTACK_DIR holds files not made by this script; use an empty or new directory"
	: >"$MARKER"
fi
if [[ $OPENSTACK_FRESH == 1 ]]; then
	OPENSTACK_DIR=$OPENSTACK_DIR "$SCRIPTS_DIR/openstack-down.sh" >&2 || true
	log "wiping $OPENSTACK_DIR"
	find "$OPENSTACK_DIR" -mindepth 1 ! -path "$MARKER" -delete
fi
mkdir -p "$LOGDIR" "$KSDIR"

# --- Ironic (in the background: it needs Keystone only when it gets a request) -------------------
ironic_job=
ironic_conf=$OPENSTACK_IRONIC_EXTRA_CONF
if [[ $OPENSTACK_WITH_GLANCE == 1 ]]; then
	# Ironic fetches Glance images (image_source = a Glance image id) as its own service user.
	ironic_conf+=$'\n[glance]\nauth_type = password\n'"auth_url = $KEYSTONE_URL/v3"$'\nusername = ironic\n'
	ironic_conf+="password = $OPENSTACK_SERVICE_PASSWORD"$'\nproject_name = service\nuser_domain_name = Default\n'
	ironic_conf+=$'project_domain_name = Default\nvalid_interfaces = public\nregion_name = RegionOne\n'
	ironic_conf+="endpoint_override = $GLANCE_URL"$'\n'
fi
ironic_network_interfaces=noop
if [[ $OPENSTACK_IRONIC_NEUTRON == 1 ]]; then
	# Neutron's endpoint from the catalog, as the ironic service user (GETs go out with the caller's
	# token, updates with this user's); flat and neutron check that the cleaning network exists.
	ironic_network_interfaces=noop,flat,neutron
	ironic_conf+=$'\n[neutron]\nauth_type = password\n'"auth_url = $KEYSTONE_URL/v3"$'\nusername = ironic\n'
	ironic_conf+="password = $OPENSTACK_SERVICE_PASSWORD"$'\nproject_name = service\nuser_domain_name = Default\n'
	ironic_conf+=$'project_domain_name = Default\nvalid_interfaces = public\nregion_name = RegionOne\n'
	ironic_conf+="cleaning_network = $OPENSTACK_IRONIC_NEUTRON_NETWORK"$'\n'
	ironic_conf+="provisioning_network = $OPENSTACK_IRONIC_NEUTRON_NETWORK"$'\n'
	# Without a timeout a Neutron call that never answers holds its node's lock for good.
	ironic_conf+=$'timeout = 60\n'
fi
if [[ $OPENSTACK_WITH_IRONIC == 1 ]]; then
	# Role baremetal_denied is refused node listings and nodes (scripts/ironic-policy.yaml).
	mkdir -p "$OPENSTACK_DIR/ironic"
	cp "$SCRIPTS_DIR/ironic-policy.yaml" "$OPENSTACK_DIR/ironic/policy.yaml"
	ironic_debug=0
	[[ $OPENSTACK_DEBUG == 1 ]] && ironic_debug=1
	IRONIC_DIR="$OPENSTACK_DIR/ironic" IRONIC_HOST=$OPENSTACK_HOST IRONIC_PORT=$OPENSTACK_IRONIC_PORT \
		IRONIC_FRESH=0 IRONIC_EXTRA_CONF="$ironic_conf" IRONIC_NETWORK_INTERFACES=$ironic_network_interfaces \
		IRONIC_NO_INSTALL=$OPENSTACK_NO_INSTALL IRONIC_START_TIMEOUT=$OPENSTACK_START_TIMEOUT \
		IRONIC_DEBUG=$ironic_debug IRONIC_AUTH=keystone IRONIC_KEYSTONE_URL="$KEYSTONE_URL/v3" \
		IRONIC_KEYSTONE_USERNAME=ironic IRONIC_KEYSTONE_PASSWORD="$OPENSTACK_SERVICE_PASSWORD" \
		IRONIC_KEYSTONE_PROJECT=service "$SCRIPTS_DIR/ironic-up.sh" >/dev/null &
	ironic_job=$!
fi

# --- MariaDB -----------------------------------------------------------------------------------
sql() { mariadb --no-defaults --socket="$DBSOCK" -uroot "$@"; }
db_answers() { sql -e 'select 1' >/dev/null 2>&1; }

start_mariadb() {
	local pid
	if pid=$(pid_of "$DBPIDFILE" "--datadir=$DBDIR") && db_answers; then
		return 0
	fi
	[[ -n ${pid:-} ]] && die "mariadbd $pid runs on $DBDIR but does not answer on $DBSOCK; run openstack-down.sh"
	if [[ ! -d $DBDIR/mysql ]]; then
		log "creating the MariaDB data directory $DBDIR"
		rm -rf "$DBDIR"
		mariadb-install-db --no-defaults --datadir="$DBDIR" --user=root --auth-root-authentication-method=normal \
			--skip-test-db >"$LOGDIR/mariadb-install.log" 2>&1 ||
			{ tail -n 20 "$LOGDIR/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
	fi
	rm -f "$DBSOCK"
	log "starting MariaDB (socket $DBSOCK, no TCP)"
	(
		cd "$OPENSTACK_DIR"
		exec setsid /usr/sbin/mariadbd --no-defaults --datadir="$DBDIR" --socket="$DBSOCK" --skip-networking \
			--pid-file="$OPENSTACK_DIR/mariadb.own.pid" --log-error="$LOGDIR/mariadb.log" --user=root \
			--innodb-buffer-pool-size=64M --max-connections=500 --character-set-server=utf8mb4 \
			--innodb-flush-log-at-trx-commit=0 --innodb-flush-method=nosync --innodb-doublewrite=0 --skip-log-bin \
			</dev/null >>"$LOGDIR/mariadb.out" 2>&1
	) &
	pid=$!
	echo "$pid" >"$DBPIDFILE"
	wait_for mariadb "$pid" db_answers || { tail -n 20 "$LOGDIR/mariadb.log" >&2; exit 1; }
}
start_mariadb
sql -e "CREATE DATABASE IF NOT EXISTS keystone;
	CREATE USER IF NOT EXISTS 'keystone'@'localhost' IDENTIFIED BY '$KSDB_PASSWORD';
	GRANT ALL PRIVILEGES ON keystone.* TO 'keystone'@'localhost';" || die "creating Keystone's database failed"

# --- Keystone ----------------------------------------------------------------------------------
write_keystone_conf() {
	local debug=false
	[[ $OPENSTACK_DEBUG == 1 ]] && debug=true
	cat >"$KSDIR/keystone.conf" <<EOF
[DEFAULT]
log_file = $LOGDIR/keystone.log
use_stderr = false
debug = $debug

[database]
connection = mysql+pymysql://keystone:$KSDB_PASSWORD@localhost/keystone?unix_socket=$DBSOCK&charset=utf8mb4

[token]
provider = fernet
expiration = 3600

[fernet_tokens]
key_repository = $KSDIR/fernet-keys

[fernet_receipts]
key_repository = $KSDIR/fernet-receipts

[credential]
key_repository = $KSDIR/credential-keys

[identity]
# bcrypt's default 12 rounds cost ~0.3 s of CPU per password check; tests authenticate a lot.
password_hash_rounds = 4

[cache]
# One Keystone process: an in-memory cache is coherent, and it saves ~200 SQL queries per request
# (authenticated requests took 2-5 s without it on a loaded 2-core machine, ~60 ms with it).
enabled = true
backend = dogpile.cache.memory
EOF
}

# The Debian wsgiref test server is single-threaded; this one serves each request in a thread.
write_keystone_server() {
	cat >"$KSSERVER" <<'EOF'
import socketserver
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from keystone.server.wsgi import initialize_public_application


class Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = 128


class Handler(WSGIRequestHandler):
    def address_string(self):
        return self.client_address[0]


host, port = sys.argv[1], int(sys.argv[2])
del sys.argv[1:]  # keystone parses the command line as its own options
app = initialize_public_application()
with make_server(host, port, app, server_class=Server, handler_class=Handler) as srv:
    print("keystone serving on http://%s:%d" % (host, port), file=sys.stderr, flush=True)
    srv.serve_forever()
EOF
}

# keystone_init: key repositories, db_sync and bootstrap in one Python process (each keystone-manage
# run costs ~4 s of CPU just importing keystone).
keystone_init() {
	cat >"$KSDIR/keystone-init.py" <<'EOF'
import base64, os, sys

conf, key_dirs, bootstrap = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
# A Fernet key repository as keystone-manage fernet_setup leaves it: 0 (staged) and 1 (primary).
for d in key_dirs:
    os.makedirs(d, mode=0o700, exist_ok=True)
    for name in ("0", "1"):
        path = os.path.join(d, name)
        if not os.path.exists(path):
            fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, base64.urlsafe_b64encode(os.urandom(32)))
            os.close(fd)
            os.rename(path + ".tmp", path)

from keystone.cmd import cli

cli.main(argv=["keystone-manage", "--config-file", conf, "db_sync"])
cli.CONF.clear()
cli.main(argv=["keystone-manage", "--config-file", conf, "bootstrap"] + bootstrap)
EOF
	(cd "$KSDIR" && env -u PYTHONPATH -u PYTHONHOME OS_KEYSTONE_CONFIG_DIR="$KSDIR" "$PY" "$KSDIR/keystone-init.py" \
		"$KSDIR/keystone.conf" "$KSDIR/fernet-keys,$KSDIR/fernet-receipts,$KSDIR/credential-keys" "$@" \
		>>"$LOGDIR/keystone-init.log" 2>&1) ||
		{ tail -n 20 "$LOGDIR/keystone-init.log" >&2; die "Keystone's db_sync/bootstrap failed (log: $LOGDIR/keystone-init.log, $LOGDIR/keystone.log)"; }
}

keystone_answers() {
	local body
	body=$(curl -s -m 2 --noproxy '*' "$KEYSTONE_URL/v3" 2>/dev/null) || return 1
	[[ $body == *'"version"'* && $body == *'v3'* ]]
}

port_busy() {
	curl -s -o /dev/null -m 2 --noproxy '*' "$1/" 2>/dev/null && return 0
	[[ $? -ne 7 ]]
}

start_keystone() {
	local pid
	if pid=$(pid_of "$KSPIDFILE" "$KSSERVER") && keystone_answers; then
		return 0
	fi
	if [[ -n ${pid:-} ]]; then
		log "keystone $pid is alive but does not answer; restarting it"
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$KSPIDFILE"
	port_busy "$KEYSTONE_URL" && die "something else answers on $KEYSTONE_URL; refusing to start Keystone"
	write_keystone_conf
	write_keystone_server
	# db_sync and bootstrap cost ~10 s; skip them when this database was set up the same way before.
	local done_file="$KSDIR/bootstrap.done" want
	want="keystone=$(ls -d /usr/lib/python3/dist-packages/keystone-*info 2>/dev/null | head -n 1) url=$KEYSTONE_URL"
	want+=" admin_password_sha256=$(printf %s "$OS_ADMIN_PASSWORD" | sha256sum | cut -d' ' -f1)"
	if [[ -f $done_file && $(cat "$done_file") == "$want" && -e $KSDIR/fernet-keys/0 ]]; then
		log "Keystone's database is set up already (db_sync and bootstrap skipped)"
	else
		log "Keystone: key repositories, db_sync, bootstrap"
		keystone_init --bootstrap-password "$OS_ADMIN_PASSWORD" --bootstrap-username admin \
			--bootstrap-project-name admin --bootstrap-role-name admin --bootstrap-service-name keystone \
			--bootstrap-region-id RegionOne --bootstrap-admin-url "$KEYSTONE_URL/v3" \
			--bootstrap-internal-url "$KEYSTONE_URL/v3" --bootstrap-public-url "$KEYSTONE_URL/v3"
		echo "$want" >"$done_file"
	fi
	log "starting Keystone on $KEYSTONE_URL"
	(
		cd "$KSDIR"
		exec setsid env -u PYTHONPATH -u PYTHONHOME OS_KEYSTONE_CONFIG_DIR="$KSDIR" "$PY" "$KSSERVER" \
			"$OPENSTACK_HOST" "$KEYSTONE_PORT" </dev/null >>"$LOGDIR/keystone-server.log" 2>&1
	) &
	pid=$!
	echo "$pid" >"$KSPIDFILE"
	wait_for keystone "$pid" keystone_answers || { tail -n 30 "$LOGDIR/keystone-server.log" >&2; exit 1; }
}
start_keystone

# --- Keystone's projects, users, roles and catalog (REST, idempotent) ---------------------------
endpoints=(
	"keystone:identity:$KEYSTONE_URL/v3"
	"ironic:baremetal:$IRONIC_URL"
	"nova:compute:$CORRAL_COMPUTE_URL"
	"placement:placement:$CORRAL_PLACEMENT_URL"
)
[[ $OPENSTACK_WITH_GLANCE == 1 ]] && endpoints+=("glance:image:$GLANCE_URL")
for e in $OPENSTACK_EXTRA_ENDPOINTS; do endpoints+=("$e"); done
# Skipped when this same Keystone process was provisioned with the same inputs (OPENSTACK_RECHECK=1 forces it).
EXTRA_ROLES=(baremetal_denied)
provisioned="keystone_pid=$(cat "$KSPIDFILE") users=${SERVICE_USERS[*]} roles=${EXTRA_ROLES[*]} endpoints=${endpoints[*]} passwords_sha256="
provisioned+=$(printf '%s\n' "$OS_ADMIN_PASSWORD" "$OPENSTACK_SERVICE_PASSWORD" "$OPENSTACK_DEMO_PASSWORD" | sha256sum | cut -d' ' -f1)
if [[ $OPENSTACK_RECHECK != 1 && -f $KSDIR/provisioned && $(cat "$KSDIR/provisioned") == "$provisioned" ]]; then
	log "Keystone's projects, users, roles and catalog are in place (provisioned by this Keystone process)"
else
	log "provisioning projects, users, roles and the catalog"
	rm -f "$KSDIR/provisioned"
	env -u PYTHONPATH -u PYTHONHOME KS_URL="$KEYSTONE_URL/v3" ADMIN_PASSWORD="$OS_ADMIN_PASSWORD" \
		SERVICE_USERS="${SERVICE_USERS[*]}" SERVICE_PASSWORD="$OPENSTACK_SERVICE_PASSWORD" \
		DEMO_PASSWORD="$OPENSTACK_DEMO_PASSWORD" ENDPOINTS="${endpoints[*]}" EXTRA_ROLES="${EXTRA_ROLES[*]}" "$PY" - <<'EOF' ||
import json, os, sys, time, urllib.error, urllib.request

URL = os.environ["KS_URL"]
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(method, path, body=None, token=None, ok=(200, 201, 204), tries=5):
    data = json.dumps(body).encode() if body is not None else None
    for attempt in range(tries):
        req = urllib.request.Request(URL + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("X-Auth-Token", token)
        try:
            with OPENER.open(req, timeout=30) as resp:
                raw = resp.read()
                return resp.status, resp.headers, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            text = e.read()[:400].decode(errors="replace")
            if e.code in ok:
                return e.code, e.headers, None
            if e.code >= 500 and attempt + 1 < tries:
                time.sleep(0.5 * (attempt + 1))
                continue
            raise SystemExit("%s %s: HTTP %d %s" % (method, path, e.code, text))
        except (urllib.error.URLError, OSError) as e:
            if attempt + 1 < tries:
                time.sleep(0.5 * (attempt + 1))
                continue
            raise SystemExit("%s %s: %s" % (method, path, e))


def password_token(user, password, project):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    status, headers, _ = call("POST", "/auth/tokens?nocatalog", body, ok=(201, 401), tries=3)
    return headers.get("X-Subject-Token") if status == 201 else None


admin = password_token("admin", os.environ["ADMIN_PASSWORD"], "admin")
if not admin:
    raise SystemExit("Keystone refused admin's password (OS_ADMIN_PASSWORD differs from the one bootstrapped; "
                     "use OPENSTACK_FRESH=1 to start over)")


def find(collection, key, **query):
    q = "&".join("%s=%s" % kv for kv in query.items())
    _, _, body = call("GET", "/%s?%s" % (collection, q), token=admin)
    return body[key]


def ensure_project(name):
    found = find("projects", "projects", name=name, domain_id="default")
    if found:
        return found[0]["id"]
    _, _, body = call("POST", "/projects", {"project": {"name": name, "domain_id": "default",
                                                        "description": "corral test project"}}, admin)
    print("created project", name, file=sys.stderr)
    return body["project"]["id"]


def ensure_user(name, password, project_name, project_id):
    found = find("users", "users", name=name, domain_id="default")
    if not found:
        _, _, body = call("POST", "/users", {"user": {"name": name, "domain_id": "default", "password": password,
                                                      "default_project_id": project_id, "enabled": True}}, admin)
        print("created user", name, file=sys.stderr)
        return body["user"]["id"]
    uid = found[0]["id"]
    # Change the password only when it differs: a change revokes the user's tokens.
    if not password_token(name, password, project_name):
        call("PATCH", "/users/" + uid, {"user": {"password": password, "enabled": True}}, admin)
        print("reset the password of", name, file=sys.stderr)
    return uid


roles = {r["name"]: r["id"] for r in find("roles", "roles")}
for needed in ("admin", "member", "reader"):
    if needed not in roles:
        raise SystemExit("Keystone has no role %r after bootstrap" % needed)
for name in os.environ["EXTRA_ROLES"].split():
    if name not in roles:
        _, _, body = call("POST", "/roles", {"role": {"name": name}}, admin)
        roles[name] = body["role"]["id"]
        print("created role", name, file=sys.stderr)


def grant(project_id, user_id, role):
    call("PUT", "/projects/%s/users/%s/roles/%s" % (project_id, user_id, roles[role]), token=admin)


service = ensure_project("service")
for name in os.environ["SERVICE_USERS"].split():
    grant(service, ensure_user(name, os.environ["SERVICE_PASSWORD"], "service", service), "admin")
demo_pw = os.environ["DEMO_PASSWORD"]
for user, project, role in (("alice", "demo-a", "member"), ("carol", "demo-a", "reader"),
                            ("bob", "demo-b", "member")):
    pid = ensure_project(project)
    grant(pid, ensure_user(user, demo_pw, project, pid), role)

for entry in os.environ["ENDPOINTS"].split():
    name, stype, url = entry.split(":", 2)
    found = [s for s in find("services", "services", type=stype) if s["name"] == name]
    if found:
        sid = found[0]["id"]
    else:
        _, _, body = call("POST", "/services", {"service": {"name": name, "type": stype, "enabled": True}}, admin)
        sid = body["service"]["id"]
        print("created service", name, stype, file=sys.stderr)
    have = {e["interface"]: e for e in find("endpoints", "endpoints", service_id=sid)}
    for iface in ("public", "internal", "admin"):
        e = have.get(iface)
        if e is None:
            call("POST", "/endpoints", {"endpoint": {"service_id": sid, "interface": iface, "url": url,
                                                     "region_id": "RegionOne", "enabled": True}}, admin)
        elif e["url"] != url or e.get("region_id") != "RegionOne":
            call("PATCH", "/endpoints/" + e["id"], {"endpoint": {"url": url, "region_id": "RegionOne"}}, admin)
            print("updated endpoint", name, iface, url, file=sys.stderr)
EOF
		die "provisioning Keystone failed (Keystone's log: $LOGDIR/keystone.log, $LOGDIR/keystone-server.log)"
	echo "$provisioned" >"$KSDIR/provisioned"
fi

# --- Glance (SQLite, file store; its service user exists now) -----------------------------------
glance_answers() {
	local body
	body=$(curl -s -m 2 --noproxy '*' "$GLANCE_URL/" 2>/dev/null) || return 1
	[[ $body == *'"versions"'* ]]
}

write_glance_conf() {
	local debug=false
	[[ $OPENSTACK_DEBUG == 1 ]] && debug=true
	cat >"$GLDIR/glance-api.conf" <<EOF
[DEFAULT]
bind_host = $OPENSTACK_HOST
bind_port = $GLANCE_PORT
workers = 1
log_file = $LOGDIR/glance.log
use_stderr = false
debug = $debug
enabled_backends = file:file

[database]
connection = sqlite:///$GLDIR/glance.sqlite

[glance_store]
default_backend = file

[file]
filesystem_store_datadir = $GLDIR/images/

[paste_deploy]
flavor = keystone
config_file = /etc/glance/glance-api-paste.ini

[keystone_authtoken]
www_authenticate_uri = $KEYSTONE_URL/v3
auth_url = $KEYSTONE_URL/v3
auth_type = password
interface = public
project_domain_name = Default
user_domain_name = Default
project_name = service
username = glance
password = $OPENSTACK_SERVICE_PASSWORD
EOF
}

start_glance() {
	local pid conf="$GLDIR/glance-api.conf"
	if pid=$(pid_of "$GLPIDFILE" "$conf") && glance_answers; then
		return 0
	fi
	if [[ -n ${pid:-} ]]; then
		log "glance $pid is alive but does not answer; restarting it"
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$GLPIDFILE"
	port_busy "$GLANCE_URL" && die "something else answers on $GLANCE_URL; refusing to start Glance"
	mkdir -p "$GLDIR/images"
	write_glance_conf
	if [[ ! -f $GLDIR/db_sync.done ]]; then
		log "Glance: db_sync"
		(cd "$GLDIR" && env -u PYTHONPATH -u PYTHONHOME "$PY" -c \
			"import sys; sys.argv=['glance-manage','--config-file','$conf','db_sync']; from glance.cmd import manage; manage.main()" \
			>>"$LOGDIR/glance-manage.log" 2>&1) ||
			{ tail -n 20 "$LOGDIR/glance-manage.log" >&2; die "Glance's db_sync failed"; }
		: >"$GLDIR/db_sync.done"
	fi
	log "starting Glance on $GLANCE_URL"
	(
		cd "$GLDIR"
		exec setsid env -u PYTHONPATH -u PYTHONHOME "$PY" -c \
			"import sys; sys.argv=['glance-api','--config-file','$conf']; from glance.cmd import api; api.main()" \
			</dev/null >>"$LOGDIR/glance-api.out" 2>&1
	) &
	pid=$!
	echo "$pid" >"$GLPIDFILE"
	wait_for glance "$pid" glance_answers || { tail -n 30 "$LOGDIR/glance-api.out" "$LOGDIR/glance.log" >&2 2>/dev/null; exit 1; }
}
[[ $OPENSTACK_WITH_GLANCE == 1 ]] && start_glance

if [[ -n $ironic_job ]]; then
	wait "$ironic_job" || die "starting Ironic failed (log: $OPENSTACK_DIR/ironic/log/ironic.log)"
fi

# --- openstack.env -----------------------------------------------------------------------------
tmp="$ENVFILE.tmp"
{
	echo "OPENSTACK_DIR=$OPENSTACK_DIR"
	echo "OS_AUTH_URL=$KEYSTONE_URL/v3"
	echo "OS_IDENTITY_API_VERSION=3"
	echo "OS_AUTH_TYPE=password"
	echo "OS_USERNAME=admin"
	echo "OS_PASSWORD=$OS_ADMIN_PASSWORD"
	echo "OS_PROJECT_NAME=admin"
	echo "OS_USER_DOMAIN_NAME=Default"
	echo "OS_PROJECT_DOMAIN_NAME=Default"
	echo "OS_REGION_NAME=RegionOne"
	echo "OS_INTERFACE=public"
	echo "KEYSTONE_URL=$KEYSTONE_URL"
	echo "KEYSTONE_PID=$(cat "$KSPIDFILE")"
	echo "MARIADB_PID=$(cat "$DBPIDFILE")"
	if [[ $OPENSTACK_WITH_IRONIC == 1 ]]; then
		echo "IRONIC_URL=$IRONIC_URL"
		echo "OPENSTACK_IRONIC_URL=$IRONIC_URL"
		echo "IRONIC_DIR=$OPENSTACK_DIR/ironic"
		echo "IRONIC_PID=$(cat "$OPENSTACK_DIR/ironic/ironic.pid")"
		echo "OPENSTACK_IRONIC_NETWORK_INTERFACES=$ironic_network_interfaces"
		if [[ $OPENSTACK_IRONIC_NEUTRON == 1 ]]; then
			echo "OPENSTACK_IRONIC_NEUTRON_NETWORK=$OPENSTACK_IRONIC_NEUTRON_NETWORK"
		fi
	fi
	if [[ $OPENSTACK_WITH_GLANCE == 1 ]]; then
		echo "GLANCE_URL=$GLANCE_URL"
		echo "GLANCE_PID=$(cat "$GLPIDFILE")"
	fi
	echo "CORRAL_COMPUTE_URL=$CORRAL_COMPUTE_URL"
	echo "CORRAL_PLACEMENT_URL=$CORRAL_PLACEMENT_URL"
	echo "SERVICE_PROJECT=service"
	echo "BAREMETAL_DENIED_ROLE=baremetal_denied"
	for u in "${SERVICE_USERS[@]}"; do
		U=${u^^}
		echo "${U}_SERVICE_USERNAME=$u"
		echo "${U}_SERVICE_PASSWORD=$OPENSTACK_SERVICE_PASSWORD"
	done
	echo "DEMO_A_PROJECT=demo-a"
	echo "DEMO_B_PROJECT=demo-b"
	for spec in alice:demo-a:member carol:demo-a:reader bob:demo-b:member; do
		IFS=: read -r u p r <<<"$spec"
		U=${u^^}
		echo "${U}_USERNAME=$u"
		echo "${U}_PASSWORD=$OPENSTACK_DEMO_PASSWORD"
		echo "${U}_PROJECT=$p"
		echo "${U}_ROLE=$r"
	done
} >"$tmp"
mv "$tmp" "$ENVFILE"
log "up in $((SECONDS - started)) s: Keystone $KEYSTONE_URL$([[ $OPENSTACK_WITH_IRONIC == 1 ]] && echo ", Ironic $IRONIC_URL")$([[ $OPENSTACK_WITH_GLANCE == 1 ]] && echo ", Glance $GLANCE_URL")"
echo "$ENVFILE"
