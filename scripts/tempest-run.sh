#!/usr/bin/env bash
# Run OpenStack's own test suite, Tempest (Debian's `tempest`, 33.0.0 on bookworm), against corral:
# its compute API tests that apply to bare metal (scripts/tempest/include-list.txt), with dynamic
# credentials made by the Keystone admin, against
#   the control plane of scripts/openstack-up.sh (Keystone and Glance; its env file), and
#   a corral cluster this script starts: TEMPEST_PEERS agents (`corral agent`, [auth] strategy =
#   keystone, [glance] url) on the embedded Ironic simulator (`corral sim ironic`), the first one
#   serving where Keystone's catalog puts the compute service (CORRAL_COMPUTE_URL of the env file),
#   and, with NEUTRON_ENV, the Neutron of scripts/neutron-up.sh on that Keystone: the agents get
#   [neutron], the simulated nodes the flat network interface and physical ports, and Tempest
#   runs with Neutron on (servers on its shared provider network).
# It creates the flavors and images tempest.conf names, writes tempest.conf (the switches and why:
# docs/tempest.md), runs `tempest run --concurrency TEMPEST_CONCURRENCY`, and prints the summary:
# passed / failed / skipped, each skip's reason, the counts per test module.
#
# Exit status: 0 no failure (or, with TEMPEST_KNOWN_FAILURES, exactly the known ones failed);
# 1 a failure not in that file, or a test in it that did not fail (take it out: the list only
# shrinks); 2 Tempest could not run (setup).
#
# Everything it needs comes from Debian's packages (tempest; the control plane's own) and `go`.
# Measured on a shared 2-core machine: corral built, up and provisioned in ~10 s; the default
# selection (276 tests) in ~1 minute at concurrency 2 (2-3 minutes with TEMPEST_SCHEMA_LENIENT=1).
#
# Knobs (environment):
#   OPENSTACK_ENV            env file of scripts/openstack-up.sh (default $OPENSTACK_DIR/openstack.env,
#                            OPENSTACK_DIR defaulting to /tmp/corral-openstack)
#   NEUTRON_ENV              env file of scripts/neutron-up.sh (a Neutron on that Keystone): Neutron on
#                            (docs/tempest.md says what changes); unset: no Neutron
#   TEMPEST_NODE_PORTS       physical ports of each simulated node with Neutron (default 4): the VIFs
#                            one server can have (a boot's ports and the interfaces attached later);
#                            the first nodes get the UUIDs of NEUTRON_ENV's NEUTRON_BAREMETAL_AGENT_HOSTS,
#                            whose ports Neutron binds at the first attempt
#   TEMPEST_DIR              work directory: tempest.conf, corral's data and logs, results
#                            (default a new /tmp/corral-tempest.XXXXXX; kept after the run)
#   TEMPEST_CONCURRENCY      Tempest's workers (default 2)
#   TEMPEST_KNOWN_FAILURES   file of known failures (scripts/tempest/known-failures.txt in CI);
#                            unset: every failure fails the run
#   TEMPEST_INCLUDE_LIST     the selection (default scripts/tempest/include-list.txt)
#   TEMPEST_PRUNE_KNOWN=1    take the tests of TEMPEST_KNOWN_FAILURES that did not fail out of that file
#                            (it never adds one); then only a new failure fails the run
#   TEMPEST_REGEX            run only the tests matching this regex instead (known failures outside it
#                            are then not reported as stale)
#   TEMPEST_PEERS            corral agents (default 3)
#   TEMPEST_NODES            simulated Ironic nodes (default 48)
#   TEMPEST_TEST_TIMEOUT     seconds one test may take (OS_TEST_TIMEOUT, default 300)
#   TEMPEST_RUN_TIMEOUT      seconds the whole Tempest run may take (default 1800)
#   TEMPEST_CONF_EXTRA       text appended to tempest.conf (a later value wins), for diagnosis: e.g.
#                            $'[compute-feature-enabled]\nenable_instance_password = false' shows what
#                            a failure in every class's setup hides; never in CI
#   TEMPEST_SCHEMA_LENIENT=1 diagnosis: record every response-schema violation in TEMPEST_DIR/schema.jsonl
#                            and let the test go on (scripts/tempest/lenient), so that one run shows
#                            what the first bad body hides; its counts prove nothing; never in CI
#   CORRAL_BIN               the corral binary (default: built from this tree with go build)
#   TEMPEST_KEEP=1           leave corral and the simulator running at the end (pids in TEMPEST_DIR)
#   TEMPEST_NO_INSTALL=1     never apt-get install tempest
set -euo pipefail

SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SCRIPTS_DIR/.." && pwd)
OPENSTACK_ENV=${OPENSTACK_ENV:-${OPENSTACK_DIR:-/tmp/corral-openstack}/openstack.env}
TEMPEST_DIR=${TEMPEST_DIR:-}
TEMPEST_CONCURRENCY=${TEMPEST_CONCURRENCY:-2}
TEMPEST_KNOWN_FAILURES=${TEMPEST_KNOWN_FAILURES:-}
TEMPEST_INCLUDE_LIST=${TEMPEST_INCLUDE_LIST:-$SCRIPTS_DIR/tempest/include-list.txt}
TEMPEST_REGEX=${TEMPEST_REGEX:-}
TEMPEST_PRUNE_KNOWN=${TEMPEST_PRUNE_KNOWN:-0}
TEMPEST_PEERS=${TEMPEST_PEERS:-3}
TEMPEST_NODES=${TEMPEST_NODES:-48}
TEMPEST_NODE_PORTS=${TEMPEST_NODE_PORTS:-4}
NEUTRON_ENV=${NEUTRON_ENV:-}
TEMPEST_TEST_TIMEOUT=${TEMPEST_TEST_TIMEOUT:-300}
TEMPEST_RUN_TIMEOUT=${TEMPEST_RUN_TIMEOUT:-1800}
TEMPEST_KEEP=${TEMPEST_KEEP:-0}
TEMPEST_NO_INSTALL=${TEMPEST_NO_INSTALL:-0}
TEMPEST_CONF_EXTRA=${TEMPEST_CONF_EXTRA:-}
TEMPEST_SCHEMA_LENIENT=${TEMPEST_SCHEMA_LENIENT:-0}
CORRAL_BIN=${CORRAL_BIN:-}
PY=/usr/bin/python3
RESOURCE_CLASS=baremetal
# No bytecode next to scripts/tempest's helpers.
export PYTHONDONTWRITEBYTECODE=1

started=$SECONDS
log() { echo "tempest-run: [$((SECONDS - started))s] $*" >&2; }
die() {
	log "error: $*"
	exit 2
}

# --- inputs ------------------------------------------------------------------------------------
[[ -f $OPENSTACK_ENV ]] || die "no env file $OPENSTACK_ENV: start the control plane with scripts/openstack-up.sh (it prints the file's path) and set OPENSTACK_ENV"
[[ -f $TEMPEST_INCLUDE_LIST ]] || die "no include list $TEMPEST_INCLUDE_LIST"
if [[ -n $TEMPEST_KNOWN_FAILURES ]]; then
	[[ -f $TEMPEST_KNOWN_FAILURES ]] || die "TEMPEST_KNOWN_FAILURES=$TEMPEST_KNOWN_FAILURES does not exist"
	TEMPEST_KNOWN_FAILURES=$(cd "$(dirname "$TEMPEST_KNOWN_FAILURES")" && pwd)/$(basename "$TEMPEST_KNOWN_FAILURES")
fi
[[ $TEMPEST_PEERS =~ ^[1-9]$ ]] || die "TEMPEST_PEERS=$TEMPEST_PEERS: 1 to 9"
[[ $TEMPEST_NODES =~ ^[1-9][0-9]*$ ]] || die "TEMPEST_NODES=$TEMPEST_NODES is not a positive number"
[[ $TEMPEST_NODE_PORTS =~ ^[1-9][0-9]?$ ]] || die "TEMPEST_NODE_PORTS=$TEMPEST_NODE_PORTS: 1 to 99"

# The control plane's env, read in a subshell: only the names used below come out.
envget() { (set -a && . "$OPENSTACK_ENV" && set +a && printf '%s' "${!1:-}"); }
for v in OS_AUTH_URL OS_USERNAME OS_PASSWORD OS_PROJECT_NAME OS_USER_DOMAIN_NAME OS_PROJECT_DOMAIN_NAME \
	OS_REGION_NAME GLANCE_URL CORRAL_COMPUTE_URL CORRAL_SERVICE_USERNAME CORRAL_SERVICE_PASSWORD SERVICE_PROJECT; do
	declare "$v=$(envget "$v")"
done
for v in OS_AUTH_URL OS_USERNAME OS_PASSWORD OS_PROJECT_NAME GLANCE_URL CORRAL_COMPUTE_URL \
	CORRAL_SERVICE_USERNAME CORRAL_SERVICE_PASSWORD SERVICE_PROJECT; do
	[[ -n ${!v} ]] || die "$OPENSTACK_ENV has no $v (an env file of scripts/openstack-up.sh with Glance holds it)"
done
OS_USER_DOMAIN_NAME=${OS_USER_DOMAIN_NAME:-Default}
OS_PROJECT_DOMAIN_NAME=${OS_PROJECT_DOMAIN_NAME:-Default}
OS_REGION_NAME=${OS_REGION_NAME:-RegionOne}

# Neutron (NEUTRON_ENV): the one of scripts/neutron-up.sh on this Keystone, found by Tempest and by
# corral's service user in the catalog; its shared provider network is every server's network.
neutron=0
if [[ -n $NEUTRON_ENV ]]; then
	[[ -f $NEUTRON_ENV ]] || die "NEUTRON_ENV=$NEUTRON_ENV does not exist (scripts/neutron-up.sh prints its env file)"
	nenvget() { (set -a && . "$NEUTRON_ENV" && set +a && printf '%s' "${!1:-}"); }
	NEUTRON_URL=$(nenvget NEUTRON_URL)
	NEUTRON_AUTH=$(nenvget NEUTRON_AUTH)
	NEUTRON_KEYSTONE_URL=$(nenvget NEUTRON_KEYSTONE_URL)
	NEUTRON_REGION=$(nenvget NEUTRON_REGION)
	NEUTRON_PROVIDER_NETWORK=$(nenvget NEUTRON_PROVIDER_NETWORK)
	NEUTRON_BAREMETAL_AGENT_HOSTS=$(nenvget NEUTRON_BAREMETAL_AGENT_HOSTS)
	[[ -n $NEUTRON_URL && -n $NEUTRON_PROVIDER_NETWORK ]] ||
		die "$NEUTRON_ENV has no NEUTRON_URL or NEUTRON_PROVIDER_NETWORK (an env file of scripts/neutron-up.sh with its provider network holds them)"
	[[ $NEUTRON_AUTH == keystone && ${NEUTRON_KEYSTONE_URL%/} == "${OS_AUTH_URL%/}" ]] ||
		die "the Neutron of $NEUTRON_ENV (auth $NEUTRON_AUTH, Keystone ${NEUTRON_KEYSTONE_URL:-none}) is not in the catalog of $OS_AUTH_URL: start it with OPENSTACK_ENV=$OPENSTACK_ENV scripts/neutron-up.sh"
	NEUTRON_REGION=${NEUTRON_REGION:-$OS_REGION_NAME}
	neutron=1
fi

# Keystone's catalog sends Tempest to CORRAL_COMPUTE_URL: the first peer serves there.
[[ $CORRAL_COMPUTE_URL =~ ^http://127\.0\.0\.([0-9]+):([0-9]+)/ ]] ||
	die "CORRAL_COMPUTE_URL=$CORRAL_COMPUTE_URL: the catalog's compute endpoint must be http://127.0.0.N:PORT/... (loopback)"
first_ip=${BASH_REMATCH[1]}
http_port=${BASH_REMATCH[2]}
((first_ip >= 2 && first_ip + TEMPEST_PEERS - 1 <= 250)) || die "CORRAL_COMPUTE_URL: 127.0.0.$first_ip leaves no room for $TEMPEST_PEERS peers"

# --- tempest -----------------------------------------------------------------------------------
if [[ ! -d /usr/lib/python3/dist-packages/tempest ]] || ! command -v tempest >/dev/null; then
	[[ $TEMPEST_NO_INSTALL == 1 ]] && die "tempest is not installed and TEMPEST_NO_INSTALL=1 (apt-get install tempest)"
	sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
	log "installing tempest (Debian's package)"
	export DEBIAN_FRONTEND=noninteractive
	if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends tempest >&2; then
		"${sudo[@]}" apt-get update -q >&2 || die "apt-get update failed"
		"${sudo[@]}" apt-get install -y -q --no-install-recommends tempest >&2 || die "apt-get install tempest failed"
	fi
fi
tempest_version=$(dpkg-query -W -f '${Version}' tempest 2>/dev/null || echo unknown)

# --- work directory ----------------------------------------------------------------------------
if [[ -z $TEMPEST_DIR ]]; then
	TEMPEST_DIR=$(mktemp -d /tmp/corral-tempest.XXXXXX)
else
	mkdir -p "$TEMPEST_DIR"
	TEMPEST_DIR=$(cd "$TEMPEST_DIR" && pwd)
	[[ -z $(ls -A "$TEMPEST_DIR") ]] || die "TEMPEST_DIR=$TEMPEST_DIR is not empty; use a new directory"
fi
WS=$TEMPEST_DIR/workspace
LOGDIR=$TEMPEST_DIR/log
mkdir -p "$WS/etc" "$LOGDIR" "$TEMPEST_DIR/lock"
log "work directory $TEMPEST_DIR (tempest $tempest_version)"

# --- corral: the simulator and the agents ------------------------------------------------------
pids=()
cleanup() {
	local rc=$?
	if [[ $TEMPEST_KEEP == 1 ]]; then
		printf '%s\n' "${pids[@]}" >"$TEMPEST_DIR/pids"
		log "leaving corral running (TEMPEST_KEEP=1): pids $(tr '\n' ' ' <"$TEMPEST_DIR/pids")"
		exit "$rc"
	fi
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	exit "$rc"
}
trap cleanup EXIT

if [[ -z $CORRAL_BIN ]]; then
	command -v go >/dev/null || die "go is not installed and CORRAL_BIN is not set"
	CORRAL_BIN=$TEMPEST_DIR/corral
	log "building corral"
	(cd "$ROOT" && go build -o "$CORRAL_BIN" ./cmd/corral) >&2 || die "go build failed"
fi
[[ -x $CORRAL_BIN ]] || die "CORRAL_BIN=$CORRAL_BIN is not executable"

# busy IP PORT: something accepts connections there.
busy() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
for ((i = 0; i < TEMPEST_PEERS; i++)); do
	ip=127.0.0.$((first_ip + i))
	for port in "$http_port" $((http_port + 1)) $((http_port + 2)); do
		busy "$ip" "$port" && die "$ip:$port is in use: stop what listens there (another corral?) first"
	done
done

# wait_line FILE PID WHAT: until FILE has a line; fails when PID exits or 30 s pass.
wait_line() {
	local deadline=$((SECONDS + 30))
	until [[ -s $1 ]]; do
		kill -0 "$2" 2>/dev/null || die "$3 exited during start-up"
		((SECONDS < deadline)) || die "$3 did not start within 30 s"
		sleep 0.1
	done
}

# With Neutron, the nodes have the flat network interface and TEMPEST_NODE_PORTS NICs each, as
# the nodes of Nova's Ironic jobs: each VIF (a server's port) takes a free NIC of its node.
# The nodes Neutron has a "Baremetal Node" agent for (neutron-up.sh's NEUTRON_BAREMETAL_AGENT_HOSTS,
# as networking-baremetal's agent reports them) come first: Neutron binds their ports at the first
# attempt; another node's port binding fails after ML2's ten (binding_failed), each a cost to Neutron.
sim_args=(--listen 127.0.0.1:0 --nodes "$TEMPEST_NODES" --resource-class "$RESOURCE_CLASS")
agent_nodes=0
if ((neutron)); then
	sim_args+=(--network-interface flat --ports-per-node "$TEMPEST_NODE_PORTS")
	hosts=()
	IFS=', ' read -ra all_hosts <<<"${NEUTRON_BAREMETAL_AGENT_HOSTS:-}"
	for h in "${all_hosts[@]}"; do
		[[ -n $h ]] && ((${#hosts[@]} < TEMPEST_NODES)) && hosts+=("$h")
	done
	agent_nodes=${#hosts[@]}
	((agent_nodes)) && sim_args+=(--node-uuids "$(IFS=,; echo "${hosts[*]}")")
fi
"$CORRAL_BIN" sim ironic "${sim_args[@]}" >"$TEMPEST_DIR/sim.url" 2>"$LOGDIR/sim.log" &
pids+=($!)
wait_line "$TEMPEST_DIR/sim.url" "${pids[-1]}" "the Ironic simulator (log: $LOGDIR/sim.log)"
sim_url=$(head -n 1 "$TEMPEST_DIR/sim.url")
if ((neutron)); then
	log "Ironic simulator at $sim_url ($TEMPEST_NODES nodes of $RESOURCE_CLASS, flat network interface, $TEMPEST_NODE_PORTS ports each; $agent_nodes with a Neutron agent)"
else
	log "Ironic simulator at $sim_url ($TEMPEST_NODES nodes of $RESOURCE_CLASS)"
fi

peer_token=tempest-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
cat >"$TEMPEST_DIR/corral.conf" <<EOF
[auth]
strategy = keystone
peer_token = $peer_token

[keystone_authtoken]
auth_url = $OS_AUTH_URL
username = $CORRAL_SERVICE_USERNAME
password = $CORRAL_SERVICE_PASSWORD
project_name = $SERVICE_PROJECT
user_domain_name = $OS_USER_DOMAIN_NAME
project_domain_name = $OS_PROJECT_DOMAIN_NAME
token_cache_time = 300

[ironic]
url = $sim_url
sync_interval = 1s

[glance]
url = $GLANCE_URL
EOF
if ((neutron)); then
	# corral's service user (docs/neutron.md, "A corral agent against it"): Neutron from the catalog.
	cat >>"$TEMPEST_DIR/corral.conf" <<EOF

[neutron]
auth_type = password
auth_url = $OS_AUTH_URL
username = $CORRAL_SERVICE_USERNAME
password = $CORRAL_SERVICE_PASSWORD
project_name = $SERVICE_PROJECT
user_domain_name = $OS_USER_DOMAIN_NAME
project_domain_name = $OS_PROJECT_DOMAIN_NAME
region_name = $NEUTRON_REGION
valid_interfaces = public
EOF
fi
chmod 600 "$TEMPEST_DIR/corral.conf"

seed=127.0.0.$first_ip:$((http_port + 2))
for ((i = 0; i < TEMPEST_PEERS; i++)); do
	name=tempest-$((i + 1))
	args=(agent --config "$TEMPEST_DIR/corral.conf" --name "$name" --data-dir "$TEMPEST_DIR/data/$name"
		--bind "127.0.0.$((first_ip + i))" --http-port "$http_port" --raft-port $((http_port + 1))
		--gossip-port $((http_port + 2)) --bootstrap-expect "$TEMPEST_PEERS")
	((i == 0)) || args+=(--join "$seed")
	"$CORRAL_BIN" "${args[@]}" >"$LOGDIR/$name.log" 2>&1 &
	pids+=($!)
done
with_neutron=
((neutron)) && with_neutron=", with Neutron at $NEUTRON_URL"
log "started $TEMPEST_PEERS corral agents on 127.0.0.$first_ip-$((first_ip + TEMPEST_PEERS - 1))$with_neutron (logs: $LOGDIR)"

# Ready: the catalog's compute endpoint answers, every peer's compute service is up and the
# nodes are hypervisors; then the flavors and images tempest.conf names.
prepared=$TEMPEST_DIR/prepared.env
env -u PYTHONPATH -u PYTHONHOME OS_AUTH_URL="$OS_AUTH_URL" OS_USERNAME="$OS_USERNAME" OS_PASSWORD="$OS_PASSWORD" \
	OS_PROJECT_NAME="$OS_PROJECT_NAME" OS_USER_DOMAIN_NAME="$OS_USER_DOMAIN_NAME" \
	OS_PROJECT_DOMAIN_NAME="$OS_PROJECT_DOMAIN_NAME" OS_REGION_NAME="$OS_REGION_NAME" GLANCE_URL="$GLANCE_URL" \
	TEMPEST_RESOURCE_CLASS="$RESOURCE_CLASS" TEMPEST_MIN_HYPERVISORS="$TEMPEST_NODES" \
	TEMPEST_MIN_SERVICES="$TEMPEST_PEERS" TEMPEST_READY_TIMEOUT=90 \
	"$PY" "$SCRIPTS_DIR/tempest/prepare.py" >"$prepared" ||
	die "corral did not become ready for Tempest (agents' logs: $LOGDIR)"
prep() { sed -n "s/^$1=//p" "$prepared"; }
compute_url=$(prep COMPUTE_URL)
[[ $compute_url == "${CORRAL_COMPUTE_URL%/}" ]] ||
	die "Keystone's catalog puts compute at $compute_url, the env file says $CORRAL_COMPUTE_URL: run scripts/openstack-up.sh again"
max_microversion=$(prep MAX_MICROVERSION)
log "corral ready: compute API up to microversion $max_microversion, flavors $(prep FLAVOR_REF) $(prep FLAVOR_REF_ALT), images $(prep IMAGE_REF) $(prep IMAGE_REF_ALT)"

# --- tempest.conf ------------------------------------------------------------------------------
# With Neutron: every project's servers on its shared provider network (no isolated networks:
# the test Neutron has no router plugin), and os-interface on (Nova's Ironic driver attaches a
# port as a VIF of the node). docs/tempest.md says why for each.
fixed_network=
interface_attach=false
neutron_on=false
if ((neutron)); then
	fixed_network=$NEUTRON_PROVIDER_NETWORK
	interface_attach=true
	neutron_on=true
fi
# Each switch of [compute-feature-enabled] is one Nova's own Ironic jobs set (devstack's lib/tempest
# for VIRT_DRIVER=ironic, Ironic's devstack plugin); docs/tempest.md says why for each.
cat >"$WS/etc/tempest.conf" <<EOF
[DEFAULT]
log_dir = $LOGDIR
log_file = tempest.log
debug = true

[oslo_concurrency]
lock_path = $TEMPEST_DIR/lock

[auth]
use_dynamic_credentials = true
create_isolated_networks = false
admin_username = $OS_USERNAME
admin_password = $OS_PASSWORD
admin_project_name = $OS_PROJECT_NAME
admin_domain_name = $OS_USER_DOMAIN_NAME
default_credentials_domain_name = Default

[identity]
auth_version = v3
uri_v3 = $OS_AUTH_URL
region = $OS_REGION_NAME
v3_endpoint_type = public

[identity-feature-enabled]
api_v2 = false

[compute]
region = $OS_REGION_NAME
endpoint_type = publicURL
image_ref = $(prep IMAGE_REF)
image_ref_alt = $(prep IMAGE_REF_ALT)
flavor_ref = $(prep FLAVOR_REF)
flavor_ref_alt = $(prep FLAVOR_REF_ALT)
# Tempest tests every microversion corral announces (GET /compute/v2.1: "version").
max_microversion = $max_microversion
# With Neutron, its shared provider network; without, servers are created without a network.
fixed_network_name = $fixed_network
build_timeout = 120
build_interval = 1
# Every peer is a nova-compute host (os-services), and server groups are over hosts.
min_compute_nodes = $TEMPEST_PEERS

[compute-feature-enabled]
# devstack's lib/tempest for VIRT_DRIVER=ironic, as Nova's Ironic jobs run it.
change_password = false
console_output = false
interface_attach = $interface_attach
live_migration = false
pause = false
rescue = false
resize = false
shelve = false
snapshot = false
suspend = false
# Ironic's devstack plugin (ironic_configure_tempest): the driver cannot repartition a node.
disk_config = false
# No console proxy (Tempest's defaults, written out).
vnc_console = false
serial_console = false
# devstack's settings for every driver.
personality = false
hostname_fqdn_sanitization = true

[validation]
# Simulated nodes: nothing to SSH into.
run_validation = false

[service_available]
nova = true
glance = true
neutron = $neutron_on
cinder = false
swift = false
horizon = false
EOF
if ((neutron)); then
	# The test Neutron has no L3 (no router plugin: no floating IP, no public network).
	cat >>"$WS/etc/tempest.conf" <<EOF

[network]
region = $NEUTRON_REGION
endpoint_type = publicURL
public_network_id =
floating_network_name =
project_networks_reachable = false

[network-feature-enabled]
floating_ips = false
EOF
fi
if [[ -n $TEMPEST_CONF_EXTRA ]]; then
	log "appending TEMPEST_CONF_EXTRA to tempest.conf (a diagnostic run: the switches differ from docs/tempest.md)"
	printf '\n# TEMPEST_CONF_EXTRA\n%s\n' "$TEMPEST_CONF_EXTRA" >>"$WS/etc/tempest.conf"
fi
cat >"$WS/.stestr.conf" <<EOF
[DEFAULT]
test_path=/usr/lib/python3/dist-packages/tempest/test_discover
top_dir=/usr/lib/python3/dist-packages/tempest
group_regex=([^\.]*\.)*
EOF
(cd "$WS" && env -u PYTHONPATH -u PYTHONHOME stestr init) >/dev/null || die "stestr init failed"

# --- the run -----------------------------------------------------------------------------------
select=(--include-list "$TEMPEST_INCLUDE_LIST")
partial=()
if [[ -n $TEMPEST_REGEX ]]; then
	select=(--regex "$TEMPEST_REGEX")
	partial=(--partial-selection)
fi
tempest_env=(env -u PYTHONPATH -u PYTHONHOME PATH="/usr/bin:/bin:$PATH" OS_TEST_TIMEOUT="$TEMPEST_TEST_TIMEOUT")
lenient=()
if [[ $TEMPEST_SCHEMA_LENIENT == 1 ]]; then
	log "TEMPEST_SCHEMA_LENIENT=1: response-schema violations are recorded in $TEMPEST_DIR/schema.jsonl, not failed on (diagnosis only)"
	: >"$TEMPEST_DIR/schema.jsonl"
	lenient=(PYTHONPATH="$SCRIPTS_DIR/tempest/lenient" TEMPEST_SCHEMA_LOG="$TEMPEST_DIR/schema.jsonl")
fi
(cd "$WS" && "${tempest_env[@]}" tempest run --config-file "$WS/etc/tempest.conf" "${select[@]}" --list-tests) \
	>"$TEMPEST_DIR/selected.raw" 2>"$LOGDIR/tempest-list.log" || { tail -n 20 "$LOGDIR/tempest-list.log" >&2; die "tempest could not list its tests"; }
grep '^tempest\.' "$TEMPEST_DIR/selected.raw" >"$TEMPEST_DIR/selected.txt" || die "the selection holds no test"
log "running $(wc -l <"$TEMPEST_DIR/selected.txt") Tempest tests, concurrency $TEMPEST_CONCURRENCY (log: $LOGDIR/tempest-run.log)"
run_rc=0
(cd "$WS" && timeout "$TEMPEST_RUN_TIMEOUT" "${tempest_env[@]}" "${lenient[@]}" tempest run --config-file "$WS/etc/tempest.conf" \
	"${select[@]}" --concurrency "$TEMPEST_CONCURRENCY") >"$LOGDIR/tempest-run.log" 2>&1 || run_rc=$?
((run_rc != 124)) || log "Tempest did not finish within ${TEMPEST_RUN_TIMEOUT}s; tests without a result count as failed"
(cd "$WS" && "${tempest_env[@]}" stestr last --subunit) >"$TEMPEST_DIR/results.subunit" 2>>"$LOGDIR/tempest-run.log" ||
	: >"$TEMPEST_DIR/results.subunit"
log "Tempest done (exit $run_rc)"

known=()
[[ -n $TEMPEST_KNOWN_FAILURES ]] && known=(--known "$TEMPEST_KNOWN_FAILURES")
[[ -n $TEMPEST_KNOWN_FAILURES && $TEMPEST_PRUNE_KNOWN == 1 ]] && known+=(--prune)
gate=0
env -u PYTHONPATH -u PYTHONHOME "$PY" "$SCRIPTS_DIR/tempest/results.py" --list "$TEMPEST_DIR/selected.txt" \
	--subunit "$TEMPEST_DIR/results.subunit" --out "$TEMPEST_DIR" "${known[@]}" "${partial[@]}" |
	tee "$TEMPEST_DIR/summary.txt" || gate=$?
log "results in $TEMPEST_DIR (summary.txt, results.json, failures.txt; Tempest's log: $LOGDIR/tempest.log)"
exit "$gate"
