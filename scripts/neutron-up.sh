#!/usr/bin/env bash
# Start a real OpenStack Neutron on loopback for corral's tenant-network tests, from Debian packages
# (python3-neutron, Zed; python3-ironic-neutron-agent for the "baremetal" ML2 mechanism driver):
#   neutron-server (eventlet) with the API in its parent process; Neutron always forks one "rpc
#     worker" and one "periodic worker" too (three processes, ~200-250 MB PSS together)
#   transport_url = fake:/ : no RabbitMQ, no agents (no DHCP, L3 or OVS agent is ever started)
#   ML2 with type drivers flat + vlan; a port given binding:host_id ends in binding:vif_type
#     binding_failed (status DOWN) unless a "Baremetal Node" agent row exists for the host
#     (NEUTRON_BAREMETAL_AGENT_HOSTS); that state stops nothing (IP, MAC, VIF attach, delete all work)
#   SQLite: alembic cannot migrate SQLite, so the schema is metadata.create_all() + `neutron-db-manage
#     stamp heads`; another NEUTRON_DB_URL (MariaDB) gets `neutron-db-manage upgrade heads`
#   Keystone auth against the Keystone of scripts/openstack-up.sh (its env file: OPENSTACK_ENV):
#     creates the service user neutron (role admin in project service), registers Neutron in the
#     catalog as service neutron, type network, region RegionOne, public/internal/admin = NEUTRON_URL
#   a shared provider network "provider" (flat, physnet1) with an IPv4 subnet, made as admin, which
#     the demo projects (alice, bob) can use
# (the facts behind these choices: docs/neutron.md).
#
# stdout: exactly one line, the path of $NEUTRON_DIR/neutron.env (KEY=VALUE lines: NEUTRON_URL,
# NEUTRON_PID, NEUTRON_DIR, NEUTRON_AUTH, NEUTRON_KEYSTONE_URL, NEUTRON_REGION, NEUTRON_PHYSNET,
# NEUTRON_PROVIDER_NETWORK(_ID), NEUTRON_PROVIDER_SUBNET_ID, NEUTRON_PROVIDER_CIDR, NEUTRON_NOTIFY_NOVA (0 or 1,
# as the running instance was started), NEUTRON_OPENSTACK_ENV (with Keystone: the OPENSTACK_ENV used),
# NEUTRON_BAREMETAL_AGENT_HOSTS (this run's, comma-separated); load with
# `set -a; . FILE; set +a`). Everything else goes to stderr. Idempotent: while up it only checks the
# registration and the provider network again, (re)writes the agent rows and prints the path again.
#
# Measured on a 2-core Debian 12 machine shared with other builds (load 1-4):
#   install, once per machine (NEUTRON_NO_INSTALL=1 refuses it): python3-neutron ~8 s (17 packages),
#     python3-ironic-neutron-agent ~4 s
#   fresh start (empty NEUTRON_DIR or NEUTRON_FRESH=1, packages installed): 9.5-14 s (Keystone user +
#     catalog 0.5 s, schema 4-7 s, API answering 4-6 s after the start, provider network 1 s);
#     28 s with the install
#   on a kept NEUTRON_DIR after neutron-down.sh: 4.9 s;  again while up: 0.9 s (Keystone and the
#     network checked again);  neutron-down.sh: 1.1 s
#   "start: Ns" in the last stderr line is the time of that run
#
# Knobs (environment):
#   NEUTRON_DIR=/tmp/corral-neutron   state dir (configs, sqlite, logs, lock dir, pid, env file)
#   NEUTRON_HOST=127.0.0.1            bind address (keep it on loopback)
#   NEUTRON_PORT=9696                 bind port
#   NEUTRON_AUTH=keystone             keystone | noauth (noauth: a request without X-Project-Id is admin)
#   OPENSTACK_ENV                     openstack.env of scripts/openstack-up.sh (default
#                                     ${OPENSTACK_DIR:-/tmp/corral-openstack}/openstack.env): Keystone's
#                                     URL and admin credentials (needed for NEUTRON_AUTH=keystone)
#   NEUTRON_KEYSTONE_USERNAME=neutron Neutron's own service user (keystonemiddleware)
#   NEUTRON_KEYSTONE_PASSWORD=corral-neutron  its password
#   NEUTRON_KEYSTONE_PROJECT=service  its project (domains Default)
#   NEUTRON_REGION=RegionOne          catalog region
#   NEUTRON_PHYSNET=physnet1          physical network of the provider network and of the VLAN range
#   NEUTRON_PROVIDER_NETWORK=provider name of the shared flat provider network ('' : make none)
#   NEUTRON_PROVIDER_CIDR=192.0.2.0/24  its subnet (provider-v4; DHCP off: nothing would serve it)
#   NEUTRON_MARIADB_ENV               mariadb.env of scripts/mariadb-up.sh: Neutron's database is the
#                                     database "neutron" there (made, with its user, if missing; dropped
#                                     and made again with NEUTRON_FRESH=1), as a deployment has it
#   NEUTRON_DB_URL                    SQLAlchemy URL (default: the MariaDB above when given, else
#                                     sqlite:///$NEUTRON_DIR/neutron.sqlite)
#   NEUTRON_API_POOL                  requests the API serves at once ([DEFAULT] wsgi_default_pool_size):
#                                     1 with SQLite (default), 100 (Neutron's default) otherwise. SQLite takes
#                                     one writer; under eventlet a second write waits for it with the whole
#                                     process blocked (the first cannot finish) for SQLite's 5 s busy timeout,
#                                     then fails with 500 "database is locked". One at a time, nothing fails,
#                                     but every request waits for the one before: use MariaDB under load
#   NEUTRON_MECHANISM_DRIVERS=baremetal  ML2 mechanism drivers
#   NEUTRON_VLAN_RANGES=$NEUTRON_PHYSNET:100:199  [ml2_type_vlan] network_vlan_ranges
#   NEUTRON_TENANT_NETWORK_TYPES=     '' (only admins make networks) or vlan
#   NEUTRON_NOTIFY_NOVA=0             1: Neutron posts port events to the catalog's compute endpoint
#                                     (POST /os-server-external-events), as it does for Nova
#   NEUTRON_BAREMETAL_AGENT_HOSTS     Ironic node UUIDs, separated by spaces or commas: a live "Baremetal
#                                     Node" agent row for each, so that the baremetal driver binds their
#                                     ports (vif_type other, ACTIVE) at the first attempt instead of failing
#                                     ten; physnets NEUTRON_BAREMETAL_AGENT_PHYSNETS (default
#                                     $NEUTRON_PHYSNET); sets agent_down_time to a year at (re)start. Tests
#                                     enroll their nodes with these UUIDs (testkit/realneutron AgentHosts)
#   NEUTRON_FRESH=1                   stop a running instance and wipe the SQLite database first
#   NEUTRON_START_TIMEOUT=90          seconds to wait for the API
#   NEUTRON_DEBUG=1                   debug logging in log/neutron-server.log
#   NEUTRON_NO_INSTALL=1              fail instead of running apt-get
#   NEUTRON_EXTRA_CONF='...'          ini text appended to neutron.conf (takes effect on a (re)start)
# Stop with scripts/neutron-down.sh (same NEUTRON_DIR).
set -euo pipefail

NEUTRON_DIR=${NEUTRON_DIR:-/tmp/corral-neutron}
NEUTRON_HOST=${NEUTRON_HOST:-127.0.0.1}
NEUTRON_PORT=${NEUTRON_PORT:-9696}
NEUTRON_AUTH=${NEUTRON_AUTH:-keystone}
OPENSTACK_ENV=${OPENSTACK_ENV:-${OPENSTACK_DIR:-/tmp/corral-openstack}/openstack.env}
NEUTRON_KEYSTONE_USERNAME=${NEUTRON_KEYSTONE_USERNAME:-neutron}
NEUTRON_KEYSTONE_PASSWORD=${NEUTRON_KEYSTONE_PASSWORD:-corral-neutron}
NEUTRON_KEYSTONE_PROJECT=${NEUTRON_KEYSTONE_PROJECT:-service}
NEUTRON_REGION=${NEUTRON_REGION:-RegionOne}
NEUTRON_PHYSNET=${NEUTRON_PHYSNET:-physnet1}
NEUTRON_PROVIDER_NETWORK=${NEUTRON_PROVIDER_NETWORK-provider}
NEUTRON_PROVIDER_CIDR=${NEUTRON_PROVIDER_CIDR:-192.0.2.0/24}
NEUTRON_MECHANISM_DRIVERS=${NEUTRON_MECHANISM_DRIVERS:-baremetal}
NEUTRON_FLAT_NETWORKS=${NEUTRON_FLAT_NETWORKS:-*}
NEUTRON_VLAN_RANGES=${NEUTRON_VLAN_RANGES:-$NEUTRON_PHYSNET:100:199}
NEUTRON_TENANT_NETWORK_TYPES=${NEUTRON_TENANT_NETWORK_TYPES:-}
NEUTRON_NOTIFY_NOVA=${NEUTRON_NOTIFY_NOVA:-0}
NEUTRON_BAREMETAL_AGENT_HOSTS=${NEUTRON_BAREMETAL_AGENT_HOSTS:-}
NEUTRON_BAREMETAL_AGENT_PHYSNETS=${NEUTRON_BAREMETAL_AGENT_PHYSNETS:-$NEUTRON_PHYSNET}
NEUTRON_FRESH=${NEUTRON_FRESH:-0}
NEUTRON_START_TIMEOUT=${NEUTRON_START_TIMEOUT:-90}
NEUTRON_DEBUG=${NEUTRON_DEBUG:-0}
NEUTRON_NO_INSTALL=${NEUTRON_NO_INSTALL:-0}
NEUTRON_EXTRA_CONF=${NEUTRON_EXTRA_CONF:-}

PY=/usr/bin/python3   # not "python3": a pyenv/venv python earlier on PATH has no neutron module
mkdir -p "$NEUTRON_DIR"
NEUTRON_DIR=$(cd "$NEUTRON_DIR" && pwd)
NEUTRON_MARIADB_ENV=${NEUTRON_MARIADB_ENV:-}
NEUTRON_MARIADB_PASSWORD=corral-neutron-db
mariadb_url=
if [[ -n $NEUTRON_MARIADB_ENV ]]; then
	[[ -r $NEUTRON_MARIADB_ENV ]] || { echo "neutron-up: NEUTRON_MARIADB_ENV=$NEUTRON_MARIADB_ENV is not readable (scripts/mariadb-up.sh writes it)" >&2; exit 1; }
	mariadb_host=$(sed -n 's/^MARIADB_HOST=//p' "$NEUTRON_MARIADB_ENV")
	mariadb_port=$(sed -n 's/^MARIADB_PORT=//p' "$NEUTRON_MARIADB_ENV")
	mariadb_socket=$(sed -n 's/^MARIADB_SOCKET=//p' "$NEUTRON_MARIADB_ENV")
	[[ -n $mariadb_host && -n $mariadb_port && -n $mariadb_socket ]] || { echo "neutron-up: $NEUTRON_MARIADB_ENV lacks MARIADB_HOST, MARIADB_PORT or MARIADB_SOCKET" >&2; exit 1; }
	mariadb_url="mysql+pymysql://neutron:$NEUTRON_MARIADB_PASSWORD@$mariadb_host:$mariadb_port/neutron?charset=utf8"
fi
NEUTRON_DB_URL=${NEUTRON_DB_URL:-${mariadb_url:-sqlite:///$NEUTRON_DIR/neutron.sqlite}}
api_pool=100
[[ $NEUTRON_DB_URL == sqlite* ]] && api_pool=1
NEUTRON_API_POOL=${NEUTRON_API_POOL:-$api_pool}
[[ $NEUTRON_API_POOL =~ ^[1-9][0-9]*$ ]] || { echo "neutron-up: NEUTRON_API_POOL=$NEUTRON_API_POOL is not a positive number" >&2; exit 1; }
URL="http://${NEUTRON_HOST}:${NEUTRON_PORT}"
CONF="$NEUTRON_DIR/neutron.conf"
ML2="$NEUTRON_DIR/ml2_conf.ini"
PASTE="$NEUTRON_DIR/api-paste.ini"
PIDFILE="$NEUTRON_DIR/neutron.pid"
ENVFILE="$NEUTRON_DIR/neutron.env"
LOG="$NEUTRON_DIR/log/neutron-server.log"
OUT="$NEUTRON_DIR/log/stdout.log"
SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
started=$SECONDS

say() { echo "neutron-up: [$((SECONDS - started))s] $*" >&2; }
die() { say "error: $*"; exit 1; }

is_ours() { # pid -> true if it is a neutron-server started with our config file
	[[ -n ${1:-} && -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "--config-file $CONF"
}
# The version document answers without a token: {"versions": [{"id": "v2.0", ...}]}
api_up() { curl -s -m 2 --noproxy '*' "$URL/" 2>/dev/null | grep -q '"v2.0"'; }
port_busy() {
	curl -s -o /dev/null -m 2 --noproxy '*' "$URL/" 2>/dev/null && return 0
	[[ $? -ne 7 ]]
}
# envval KEY: KEY's value in OPENSTACK_ENV (KEY=VALUE lines, no quoting)
envval() { sed -n "s/^$1=//p" "$OPENSTACK_ENV" | tail -n 1; }

for v in NEUTRON_KEYSTONE_PASSWORD NEUTRON_PROVIDER_CIDR NEUTRON_PHYSNET NEUTRON_REGION; do
	[[ ${!v} =~ ^[A-Za-z0-9._:/@%+=,-]+$ ]] || die "$v holds characters that need quoting; use [A-Za-z0-9._:/@%+=,-]"
done
[[ $NEUTRON_BAREMETAL_AGENT_HOSTS =~ ^[A-Za-z0-9._:,\ -]*$ ]] ||
	die "NEUTRON_BAREMETAL_AGENT_HOSTS holds characters that are no host's; use [A-Za-z0-9._:-], spaces or commas"
NEUTRON_KEYSTONE_URL=
case $NEUTRON_AUTH in
keystone)
	[[ -r $OPENSTACK_ENV ]] || die "NEUTRON_AUTH=keystone needs OPENSTACK_ENV, the env file of scripts/openstack-up.sh ($OPENSTACK_ENV is not readable)"
	ks=$(envval KEYSTONE_URL)
	[[ -n $ks ]] || die "$OPENSTACK_ENV has no KEYSTONE_URL"
	NEUTRON_KEYSTONE_URL="$ks/v3"
	export OS_AUTH_URL=$(envval OS_AUTH_URL) OS_USERNAME=$(envval OS_USERNAME) OS_PASSWORD=$(envval OS_PASSWORD)
	export OS_PROJECT_NAME=$(envval OS_PROJECT_NAME) OS_USER_DOMAIN_NAME=$(envval OS_USER_DOMAIN_NAME)
	export OS_PROJECT_DOMAIN_NAME=$(envval OS_PROJECT_DOMAIN_NAME)
	;;
noauth)
	[[ $NEUTRON_NOTIFY_NOVA == 1 ]] && die "NEUTRON_NOTIFY_NOVA=1 needs NEUTRON_AUTH=keystone (the notifier finds Nova in the catalog)"
	;;
*) die "NEUTRON_AUTH must be keystone or noauth" ;;
esac

# ---------------------------------------------------------------- 1. install
pkgs=()
[[ -f /usr/lib/python3/dist-packages/neutron/cmd/eventlet/server/__init__.py ]] || pkgs+=(python3-neutron)
if [[ " ${NEUTRON_MECHANISM_DRIVERS//,/ } " == *" baremetal "* && ! -d /usr/lib/python3/dist-packages/networking_baremetal ]]; then
	pkgs+=(python3-ironic-neutron-agent) # networking-baremetal's Python module (the ML2 driver); no daemon runs
fi
command -v curl >/dev/null || pkgs+=(curl)
if ((${#pkgs[@]} > 0)); then
	[[ $NEUTRON_NO_INSTALL == 1 ]] && die "missing ${pkgs[*]} and NEUTRON_NO_INSTALL=1"
	command -v apt-get >/dev/null || die "missing ${pkgs[*]} and apt-get is not available"
	sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
	say "installing ${pkgs[*]} (--no-install-recommends)"
	export DEBIAN_FRONTEND=noninteractive
	if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}" >"$NEUTRON_DIR/apt.log" 2>&1; then
		"${sudo[@]}" apt-get update -q >>"$NEUTRON_DIR/apt.log" 2>&1
		"${sudo[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}" >>"$NEUTRON_DIR/apt.log" 2>&1 ||
			{ tail -n 20 "$NEUTRON_DIR/apt.log" >&2; die "apt-get install ${pkgs[*]} failed"; }
	fi
	say "installed"
fi
[[ -x $PY ]] || die "$PY not found"

# ---------------------------------------------------------------- 2. Keystone: service user and catalog entry
register() {
	[[ -n ${OS_AUTH_URL:-} && -n ${OS_USERNAME:-} && -n ${OS_PASSWORD:-} ]] ||
		die "$OPENSTACK_ENV lacks the admin credentials (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD)"
	env -u PYTHONPATH -u PYTHONHOME NEUTRON_URL="$URL" SVC_USER="$NEUTRON_KEYSTONE_USERNAME" \
		SVC_PASSWORD="$NEUTRON_KEYSTONE_PASSWORD" SVC_PROJECT="$NEUTRON_KEYSTONE_PROJECT" REGION="$NEUTRON_REGION" "$PY" - <<'EOF'
import json, os, sys, urllib.error, urllib.request

ks = os.environ["OS_AUTH_URL"].rstrip("/")
if not ks.endswith("/v3"):
    ks += "/v3"
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(method, path, body=None, token=None, ok=(200, 201, 204)):
    req = urllib.request.Request(ks + path, data=json.dumps(body).encode() if body is not None else None,
                                 method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    try:
        with opener.open(req, timeout=30) as r:
            raw = r.read()
            return r.status, r.headers, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        if e.code in ok:
            return e.code, e.headers, None
        sys.exit("%s %s: HTTP %d %s" % (method, path, e.code, e.read()[:300].decode(errors="replace")))


def token(user, password, project, udom="Default", pdom="Default"):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"name": udom}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"name": pdom}}}}}
    status, headers, _ = call("POST", "/auth/tokens?nocatalog", body, ok=(201, 401))
    return headers.get("X-Subject-Token") if status == 201 else None


adm = token(os.environ["OS_USERNAME"], os.environ["OS_PASSWORD"], os.environ.get("OS_PROJECT_NAME", "admin"),
            os.environ.get("OS_USER_DOMAIN_NAME", "Default"), os.environ.get("OS_PROJECT_DOMAIN_NAME", "Default"))
if not adm:
    sys.exit("Keystone refused the admin credentials in OS_*")
get = lambda path, key: call("GET", path, token=adm)[2][key]
user, pw, proj = os.environ["SVC_USER"], os.environ["SVC_PASSWORD"], os.environ["SVC_PROJECT"]
projects = get("/projects?name=%s&domain_id=default" % proj, "projects")
if not projects:
    sys.exit("project %s does not exist" % proj)
pid = projects[0]["id"]
users = get("/users?name=%s&domain_id=default" % user, "users")
if users:
    uid = users[0]["id"]
    if not token(user, pw, proj):
        call("PATCH", "/users/" + uid, {"user": {"password": pw, "enabled": True}}, adm)
else:
    uid = call("POST", "/users", {"user": {"name": user, "domain_id": "default", "password": pw,
                                           "default_project_id": pid, "enabled": True}}, adm)[2]["user"]["id"]
    print("created user", user, file=sys.stderr)
role = [r["id"] for r in get("/roles?name=admin", "roles")][0]
call("PUT", "/projects/%s/users/%s/roles/%s" % (pid, uid, role), token=adm)
svcs = [s for s in get("/services?type=network", "services") if s["name"] == "neutron"]
sid = svcs[0]["id"] if svcs else call("POST", "/services", {"service": {"name": "neutron", "type": "network",
                                                                        "enabled": True}}, adm)[2]["service"]["id"]
url, region = os.environ["NEUTRON_URL"], os.environ["REGION"]
have = {e["interface"]: e for e in get("/endpoints?service_id=" + sid, "endpoints")}
for iface in ("public", "internal", "admin"):
    e = have.get(iface)
    if e is None:
        call("POST", "/endpoints", {"endpoint": {"service_id": sid, "interface": iface, "url": url,
                                                 "region_id": region, "enabled": True}}, adm)
    elif e["url"] != url or e.get("region_id") != region:
        call("PATCH", "/endpoints/" + e["id"], {"endpoint": {"url": url, "region_id": region}}, adm)
EOF
}
if [[ $NEUTRON_AUTH == keystone ]]; then
	register || die "registering Neutron in Keystone ($NEUTRON_KEYSTONE_URL) failed"
	say "Keystone: user $NEUTRON_KEYSTONE_USERNAME (admin in $NEUTRON_KEYSTONE_PROJECT), catalog neutron/network ($NEUTRON_REGION) = $URL"
fi

# ---------------------------------------------------------------- 3. fake "Baremetal Node" agents
write_agents() { # one live agent row per host, what ironic-neutron-agent would report (needs the schema)
	[[ -n $NEUTRON_BAREMETAL_AGENT_HOSTS ]] || return 0
	env -u PYTHONPATH -u PYTHONHOME DB_URL="$NEUTRON_DB_URL" HOSTS="$NEUTRON_BAREMETAL_AGENT_HOSTS" \
		PHYSNETS="$NEUTRON_BAREMETAL_AGENT_PHYSNETS" "$PY" - <<'EOF'
import datetime, json, os, uuid
import sqlalchemy as sa

eng = sa.create_engine(os.environ["DB_URL"])
now = datetime.datetime.utcnow().replace(microsecond=0)
conf = json.dumps({"bridge_mappings": {p: "yes" for p in os.environ["PHYSNETS"].replace(",", " ").split()},
                   "log_agent_heartbeats": False})
with eng.begin() as c:
    for host in os.environ["HOSTS"].replace(",", " ").split():
        n = c.execute(sa.text("UPDATE agents SET heartbeat_timestamp=:now, configurations=:conf, admin_state_up=1 "
                              "WHERE agent_type='Baremetal Node' AND host=:host"),
                      {"now": now, "conf": conf, "host": host}).rowcount
        if not n:
            c.execute(sa.text("INSERT INTO agents (id, agent_type, `binary`, topic, host, admin_state_up, created_at, "
                              "started_at, heartbeat_timestamp, configurations, `load`) VALUES (:id, 'Baremetal Node', "
                              "'ironic-neutron-agent', 'N/A', :host, 1, :now, :now, :now, :conf, 0)"),
                      {"id": str(uuid.uuid4()), "host": host, "now": now, "conf": conf})
EOF
	say "live 'Baremetal Node' agent rows for $(echo $NEUTRON_BAREMETAL_AGENT_HOSTS | tr ',' ' ' | wc -w) hosts"
}

# ---------------------------------------------------------------- 4. already running?
if [[ $NEUTRON_FRESH == 1 && -f $PIDFILE ]]; then
	NEUTRON_DIR="$NEUTRON_DIR" "$SCRIPTS_DIR/neutron-down.sh" >&2 || true
fi
running=0
if [[ -f $PIDFILE ]]; then
	pid=$(cat "$PIDFILE")
	if is_ours "$pid"; then
		for _ in $(seq 1 $((NEUTRON_START_TIMEOUT * 5))); do api_up && break; is_ours "$pid" || break; sleep 0.2; done
		api_up || die "pid $pid is alive but $URL does not answer; see $LOG (run neutron-down.sh)"
		say "already running (pid $pid)"
		running=1
	else
		say "removing stale pid file ($pid)"
		rm -f "$PIDFILE"
	fi
fi
if [[ $running == 1 ]]; then
	write_agents
else
port_busy && die "something else already answers on $URL (set NEUTRON_PORT)"

# ---------------------------------------------------------------- 5. configure
if [[ $NEUTRON_FRESH == 1 ]]; then
	rm -f "$NEUTRON_DIR/neutron.sqlite" "$NEUTRON_DIR/schema.done"
	if [[ -n $mariadb_url && $NEUTRON_DB_URL == "$mariadb_url" ]]; then
		mariadb --socket="$mariadb_socket" -uroot -e 'DROP DATABASE IF EXISTS neutron' || die "dropping the database neutron in MariaDB failed"
	elif [[ $NEUTRON_DB_URL != sqlite* ]]; then
		say "NEUTRON_FRESH=1 does not wipe a database it did not make ($NEUTRON_DB_URL)"
	fi
fi
if [[ -n $mariadb_url && $NEUTRON_DB_URL == "$mariadb_url" ]]; then
	# Neutron's user connects over TCP with a password; root's socket login makes them.
	mariadb --socket="$mariadb_socket" -uroot <<SQL || die "making the database neutron and its user in MariaDB ($mariadb_socket) failed"
CREATE DATABASE IF NOT EXISTS neutron CHARACTER SET utf8;
CREATE USER IF NOT EXISTS 'neutron'@'127.0.0.1' IDENTIFIED BY '$NEUTRON_MARIADB_PASSWORD';
CREATE USER IF NOT EXISTS 'neutron'@'localhost' IDENTIFIED BY '$NEUTRON_MARIADB_PASSWORD';
GRANT ALL PRIVILEGES ON neutron.* TO 'neutron'@'127.0.0.1';
GRANT ALL PRIVILEGES ON neutron.* TO 'neutron'@'localhost';
SQL
	say "MariaDB database neutron at $mariadb_host:$mariadb_port"
fi
mkdir -p "$NEUTRON_DIR"/{log,lock,state}
debug=false
[[ $NEUTRON_DEBUG == 1 ]] && debug=true
notify=false
[[ $NEUTRON_NOTIFY_NOVA == 1 ]] && notify=true
agent_down_time=75
[[ -n $NEUTRON_BAREMETAL_AGENT_HOSTS ]] && agent_down_time=31536000

# The api-paste.ini of Debian's neutron-common (which this script does not install), verbatim.
cat >"$PASTE" <<'EOF'
[composite:neutron]
use = egg:Paste#urlmap
/: neutronversions_composite
/healthcheck: healthcheck
/v2.0: neutronapi_v2_0

[composite:neutronapi_v2_0]
use = call:neutron.auth:pipeline_factory
noauth = cors http_proxy_to_wsgi request_id fake_project_id catch_errors osprofiler extensions neutronapiapp_v2_0
keystone = cors http_proxy_to_wsgi request_id catch_errors osprofiler authtoken keystonecontext extensions neutronapiapp_v2_0

[composite:neutronversions_composite]
use = call:neutron.auth:pipeline_factory
noauth = cors http_proxy_to_wsgi neutronversions
keystone = cors http_proxy_to_wsgi neutronversions

[filter:request_id]
paste.filter_factory = oslo_middleware:RequestId.factory

[filter:catch_errors]
paste.filter_factory = oslo_middleware:CatchErrors.factory

[filter:cors]
paste.filter_factory = oslo_middleware.cors:filter_factory
oslo_config_project = neutron

[filter:project_id]
paste.filter_factory = neutron.api.extensions:ProjectIdMiddleware.factory
oslo_config_project = neutron

[filter:fake_project_id]
paste.filter_factory = neutron.auth:NoauthFakeProjectId.factory

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory

[filter:keystonecontext]
paste.filter_factory = neutron.auth:NeutronKeystoneContext.factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory

[filter:extensions]
paste.filter_factory = neutron.api.extensions:plugin_aware_extension_middleware_factory

[app:neutronversions]
paste.app_factory = neutron.pecan_wsgi.app:versions_factory

[app:neutronapiapp_v2_0]
paste.app_factory = neutron.api.v2.router:APIRouter.factory

[filter:osprofiler]
paste.filter_factory = osprofiler.web:WsgiMiddleware.factory

[app:healthcheck]
paste.app_factory = oslo_middleware:Healthcheck.app_factory
backends = disable_by_file
disable_by_file_path = /etc/neutron/healthcheck_disable
EOF

cat >"$CONF" <<EOF
# written by scripts/neutron-up.sh
[DEFAULT]
core_plugin = ml2
service_plugins =
auth_strategy = $NEUTRON_AUTH
bind_host = $NEUTRON_HOST
bind_port = $NEUTRON_PORT
api_paste_config = $PASTE
state_path = $NEUTRON_DIR/state
log_dir = $NEUTRON_DIR/log
log_file = neutron-server.log
use_stderr = false
debug = $debug
# no RabbitMQ: oslo.messaging's in-process fake driver (nothing can talk to agents)
transport_url = fake:/
api_workers = 0
# requests served at once (NEUTRON_API_POOL; 1 with SQLite: the header says why)
wsgi_default_pool_size = $NEUTRON_API_POOL
rpc_workers = 0
rpc_state_report_workers = 0
agent_down_time = $agent_down_time
# Every answer closes its connection. The API serves at most wsgi_default_pool_size
# connections at once, and an idle kept-alive one holds its place for client_socket_timeout
# (900 s): clients that open a connection per request and leave it open (Ironic's Neutron calls
# with a caller's token do) filled it within minutes, and Neutron then stopped accepting.
wsgi_keep_alive = false
notify_nova_on_port_status_changes = $notify
notify_nova_on_port_data_changes = $notify

[database]
connection = $NEUTRON_DB_URL

[oslo_concurrency]
lock_path = $NEUTRON_DIR/lock

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
EOF
if [[ $NEUTRON_AUTH == keystone ]]; then
	for section in keystone_authtoken nova; do
		[[ $section == nova && $NEUTRON_NOTIFY_NOVA != 1 ]] && continue
		cat >>"$CONF" <<EOF

[$section]
auth_type = password
auth_url = $NEUTRON_KEYSTONE_URL
username = $NEUTRON_KEYSTONE_USERNAME
password = $NEUTRON_KEYSTONE_PASSWORD
project_name = $NEUTRON_KEYSTONE_PROJECT
user_domain_name = Default
project_domain_name = Default
region_name = $NEUTRON_REGION
EOF
		if [[ $section == keystone_authtoken ]]; then
			printf 'www_authenticate_uri = %s\ninterface = public\n' "$NEUTRON_KEYSTONE_URL" >>"$CONF"
		else
			printf 'endpoint_type = public\n' >>"$CONF"
		fi
	done
fi
[[ -n $NEUTRON_EXTRA_CONF ]] && printf '\n# NEUTRON_EXTRA_CONF\n%s\n' "$NEUTRON_EXTRA_CONF" >>"$CONF"

cat >"$ML2" <<EOF
# written by scripts/neutron-up.sh
[ml2]
type_drivers = flat,vlan
tenant_network_types = $NEUTRON_TENANT_NETWORK_TYPES
mechanism_drivers = $NEUTRON_MECHANISM_DRIVERS
extension_drivers = port_security

[ml2_type_flat]
flat_networks = $NEUTRON_FLAT_NETWORKS

[ml2_type_vlan]
network_vlan_ranges = $NEUTRON_VLAN_RANGES
EOF

# ---------------------------------------------------------------- 6. database
dbmanage() {
	(cd "$NEUTRON_DIR" && env -u PYTHONPATH -u PYTHONHOME "$PY" -c \
		'import sys; from neutron.db.migration.cli import main; sys.exit(main())' \
		--config-file "$CONF" --config-file "$ML2" "$@" >>"$NEUTRON_DIR/log/db-manage.log" 2>&1)
}
if [[ $NEUTRON_DB_URL == sqlite* ]]; then
	if [[ ! -s $NEUTRON_DIR/neutron.sqlite || ! -f $NEUTRON_DIR/schema.done ]]; then
		say "creating the schema in $NEUTRON_DIR/neutron.sqlite (create_all + stamp heads)"
		rm -f "$NEUTRON_DIR/neutron.sqlite"
		(cd "$NEUTRON_DIR" && env -u PYTHONPATH -u PYTHONHOME DB_URL="$NEUTRON_DB_URL" "$PY" -c '
import os, sqlalchemy
from neutron.db.migration.models import head
head.get_metadata().create_all(sqlalchemy.create_engine(os.environ["DB_URL"]))' >>"$NEUTRON_DIR/log/db-manage.log" 2>&1) ||
			{ tail -n 20 "$NEUTRON_DIR/log/db-manage.log" >&2; die "create_all failed"; }
		dbmanage stamp heads || { tail -n 20 "$NEUTRON_DIR/log/db-manage.log" >&2; die "neutron-db-manage stamp heads failed"; }
		: >"$NEUTRON_DIR/schema.done"
	fi
else
	say "neutron-db-manage upgrade heads ($NEUTRON_DB_URL)"
	dbmanage upgrade heads || { tail -n 20 "$NEUTRON_DIR/log/db-manage.log" >&2; die "neutron-db-manage upgrade heads failed"; }
fi
write_agents

# ---------------------------------------------------------------- 7. start
say "starting neutron-server on $URL (auth $NEUTRON_AUTH, ML2 $NEUTRON_MECHANISM_DRIVERS), state in $NEUTRON_DIR"
# setsid: own session, so a Ctrl-C / SIGHUP of the caller does not reach it; stop it with neutron-down.sh.
# In a non-interactive shell the background child is not a group leader, so setsid does not fork: $! is python's PID.
cd "$NEUTRON_DIR"
setsid env -u PYTHONPATH -u PYTHONHOME "$PY" -c 'import sys; from neutron.cmd.eventlet.server import main; sys.exit(main())' \
	--config-file "$CONF" --config-file "$ML2" >>"$OUT" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$PIDFILE"
t0=$SECONDS
for _ in $(seq 1 $((NEUTRON_START_TIMEOUT * 10))); do
	api_up && break
	if ! kill -0 "$pid" 2>/dev/null; then
		tail -n 30 "$OUT" "$LOG" >&2 || true
		rm -f "$PIDFILE"
		die "neutron-server exited during start-up"
	fi
	sleep 0.1
done
api_up || { tail -n 30 "$LOG" >&2 || true; die "API did not answer within ${NEUTRON_START_TIMEOUT}s (pid $pid still running; use neutron-down.sh)"; }
say "API answering after $((SECONDS - t0))s, pid $pid"
fi

# ---------------------------------------------------------------- 8. provider network
# provider (flat, $NEUTRON_PHYSNET, shared) and its subnet provider-v4, made as admin; found by name again.
net_id= subnet_id=
if [[ -n $NEUTRON_PROVIDER_NETWORK ]]; then
	ids=$(env -u PYTHONPATH -u PYTHONHOME NEUTRON_URL="$URL" AUTH="$NEUTRON_AUTH" NET="$NEUTRON_PROVIDER_NETWORK" \
		PHYSNET="$NEUTRON_PHYSNET" CIDR="$NEUTRON_PROVIDER_CIDR" "$PY" - <<'EOF'
import json, os, sys, urllib.error, urllib.parse, urllib.request

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(base, method, path, body=None, token=None):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                 method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    try:
        with opener.open(req, timeout=60) as r:
            raw = r.read()
            return r.headers, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        sys.exit("%s %s: HTTP %d %s" % (method, path, e.code, e.read()[:300].decode(errors="replace")))


token = None
if os.environ["AUTH"] == "keystone":
    ks = os.environ["OS_AUTH_URL"].rstrip("/")
    ks = ks if ks.endswith("/v3") else ks + "/v3"
    auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": os.environ["OS_USERNAME"], "domain": {"name": os.environ.get("OS_USER_DOMAIN_NAME") or "Default"},
        "password": os.environ["OS_PASSWORD"]}}}, "scope": {"project": {
        "name": os.environ.get("OS_PROJECT_NAME") or "admin",
        "domain": {"name": os.environ.get("OS_PROJECT_DOMAIN_NAME") or "Default"}}}}}
    token = call(ks, "POST", "/auth/tokens?nocatalog", auth)[0]["X-Subject-Token"]
n = os.environ["NEUTRON_URL"] + "/v2.0"
name, physnet, cidr = os.environ["NET"], os.environ["PHYSNET"], os.environ["CIDR"]
nets = call(n, "GET", "/networks?name=" + urllib.parse.quote(name), token=token)[1]["networks"]
if nets:
    net = nets[0]
    if not net.get("shared"):
        call(n, "PUT", "/networks/" + net["id"], {"network": {"shared": True}}, token)
else:
    net = call(n, "POST", "/networks", {"network": {"name": name, "shared": True, "admin_state_up": True,
                                                    "provider:network_type": "flat",
                                                    "provider:physical_network": physnet}}, token)[1]["network"]
    print("created network %s (flat, %s, shared)" % (name, physnet), file=sys.stderr)
subs = call(n, "GET", "/subnets?network_id=" + net["id"], token=token)[1]["subnets"]
sub = next((s for s in subs if s["cidr"] == cidr), None)
if sub is None:
    sub = call(n, "POST", "/subnets", {"subnet": {"name": name + "-v4", "network_id": net["id"], "ip_version": 4,
                                                  "cidr": cidr, "enable_dhcp": False}}, token)[1]["subnet"]
    print("created subnet %s-v4 (%s)" % (name, cidr), file=sys.stderr)
print(net["id"], sub["id"])
EOF
	) || die "creating the provider network $NEUTRON_PROVIDER_NETWORK failed"
	read -r net_id subnet_id <<<"$ids"
fi

pid=$(cat "$PIDFILE")
{
	printf 'NEUTRON_URL=%s\nNEUTRON_PID=%s\nNEUTRON_DIR=%s\nNEUTRON_AUTH=%s\n' "$URL" "$pid" "$NEUTRON_DIR" "$NEUTRON_AUTH"
	printf 'NEUTRON_KEYSTONE_URL=%s\nNEUTRON_REGION=%s\nNEUTRON_PHYSNET=%s\n' "$NEUTRON_KEYSTONE_URL" "$NEUTRON_REGION" "$NEUTRON_PHYSNET"
	printf 'NEUTRON_PROVIDER_NETWORK=%s\nNEUTRON_PROVIDER_NETWORK_ID=%s\n' "$NEUTRON_PROVIDER_NETWORK" "$net_id"
	printf 'NEUTRON_PROVIDER_SUBNET_ID=%s\nNEUTRON_PROVIDER_CIDR=%s\n' "$subnet_id" "$NEUTRON_PROVIDER_CIDR"
	hosts=$(echo $NEUTRON_BAREMETAL_AGENT_HOSTS | tr ', ' '\n\n' | sed '/^$/d' | paste -sd, -)
	printf 'NEUTRON_BAREMETAL_AGENT_HOSTS=%s\n' "$hosts"
	# What the running instance was started with (not this run's knob).
	notifying=0
	grep -q '^notify_nova_on_port_data_changes = true' "$CONF" && notifying=1
	printf 'NEUTRON_NOTIFY_NOVA=%s\n' "$notifying"
	if [[ $NEUTRON_AUTH == keystone ]]; then
		printf 'NEUTRON_OPENSTACK_ENV=%s\n' "$(cd "$(dirname "$OPENSTACK_ENV")" && pwd)/$(basename "$OPENSTACK_ENV")"
	fi
} >"$ENVFILE.tmp"
mv "$ENVFILE.tmp" "$ENVFILE"
say "up (start: $((SECONDS - started))s), pid $pid"
echo "$ENVFILE"
