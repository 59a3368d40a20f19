#!/usr/bin/env bash
# The container image as an operator runs it (CI runs this after `make
# image`): loaded into podman, the Ironic simulator and three peers on
# 127.0.0.2-4 (host network, read-only root, no capabilities), each with
# its configuration from a mounted file and its secrets from the
# environment; a server booted through the API; the container of a peer
# owning servers killed, its servers moved to the others; the peer
# started again; the cluster stopped, and everything removed.
#   scripts/image-test.sh [IMAGE_TAR] [CORRAL_CLI]
# Needs podman, runc and catatonit (see scripts/podman-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
tar=${1:-bin/corral-image.tar}
cli=${2:-bin/corral}
t0=$(date +%s%N)
step() { local ms=$((($(date +%s%N) - t0) / 1000000)); printf 'image-test: [%d.%01d s] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"; }
. scripts/podman-env.sh
# Without systemd as PID 1, podman cannot schedule the image's health check
# by itself and says so on every run: `podman healthcheck run` runs it.
quiet() { "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }
work=$(mktemp -d /tmp/corral-image-test.XXXXXX)
names=(corral-sim corral-1 corral-2 corral-3)
cleanup() {
	podman rm -f -v --ignore "${names[@]}" >/dev/null 2>&1 || true
	podman volume rm -f corral-data-1 corral-data-2 corral-data-3 >/dev/null 2>&1 || true
	podman volume prune -f >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
cleanup_first() { podman rm -f -v --ignore "${names[@]}" >/dev/null 2>&1 || true; }
cleanup_first

img=$(podman load -q -i "$tar" | sed -n 's/^Loaded image: //p' | tail -n 1)
[ -n "$img" ] || { echo "image-test: podman load named no image" >&2; exit 1; }
step "loaded $img"
quiet podman run --rm "$img" version | head -n 1
user=$(podman image inspect -f '{{.Config.User}}' "$img")
[ "$user" = 10001:10001 ] || { echo "image-test: the image runs as '$user', not 10001:10001" >&2; exit 1; }

export CORRAL_TOKEN=image-test-admin-token CORRAL_ADDR=http://127.0.0.2:7480
peer_token=image-test-peer-token-0123456789
quiet podman run -d --name corral-sim --entrypoint /usr/local/bin/corral "$img" \
	sim ironic --listen 127.0.0.1:16385 --nodes 8 --resource-class baremetal-gold >/dev/null
for i in 1 2 3; do
	cat >"$work/corral-$i.conf" <<EOT
[DEFAULT]
name = corral-$i
bind = 127.0.0.$((i + 1))
data_dir = /var/lib/corral
log_format = json
[raft]
bootstrap_expect = 3
[gossip]
join = 127.0.0.2:7482, 127.0.0.3:7482, 127.0.0.4:7482
[ironic]
sync_interval = 1s
EOT
	quiet podman run -d --name "corral-$i" --read-only --cap-drop all --security-opt no-new-privileges \
		-v "corral-data-$i:/var/lib/corral" -v "$work/corral-$i.conf:/etc/corral/corral.conf:ro" \
		-e CORRAL_ADMIN_TOKEN="$CORRAL_TOKEN" -e CORRAL_AUTH_PEER_TOKEN="$peer_token" \
		-e CORRAL_IRONIC_URL=http://127.0.0.1:16385 "$img" >/dev/null
done
step "started the simulator and three peers"

ready() { # ready IP...: every peer's /readyz answers 200
	local ip
	for ip in "$@"; do curl -fsS -o /dev/null --max-time 2 "http://$ip:7480/readyz" || return 1; done
}
wait_for() { # wait_for SECONDS WHAT COMMAND...
	local deadline=$(($(date +%s) + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "image-test: timed out waiting for $what" >&2
			for n in "${names[@]}"; do echo "--- $n"; podman logs --tail 20 "$n" 2>&1 || true; done >&2
			return 1
		fi
		sleep 0.2
	done
}
wait_for 30 "three ready peers" ready 127.0.0.2 127.0.0.3 127.0.0.4
step "all three peers ready"
podman healthcheck run corral-1 && echo "image-test: corral-1's health check (corral health) passes"
podman exec corral-1 /usr/local/bin/corral health --ready --config /etc/corral/corral.conf
[ "$(podman exec -e CORRAL_ADDR=http://127.0.0.3:7480 -e CORRAL_TOKEN corral-2 /usr/local/bin/corral members -f json |
	grep -c '"status": "alive"')" = 3 ] || {
	"$cli" members; echo "image-test: not three alive members" >&2; exit 1; }

"$cli" flavor create bm-gold --vcpus 1 --ram 1024 --disk 10 --property resources:CUSTOM_BAREMETAL_GOLD=1 \
	--property resources:VCPU=0 --property resources:MEMORY_MB=0 --property resources:DISK_GB=0 >/dev/null
for s in web-1 web-2 web-3; do "$cli" server create "$s" --flavor bm-gold --image img >/dev/null; done
active() { [ "$("$cli" server list -f json | grep -c '"status": "ACTIVE"')" = "$1" ]; }
wait_for 60 "three ACTIVE servers" active 3
step "booted three servers through the API"

owner() { "$cli" server owner "$1" -f json | sed -n 's/.*"host": *"\([^"]*\)".*/\1/p' | head -n 1; }
victim=$(owner web-1)
declare -A before
for s in web-1 web-2 web-3; do before[$s]=$(owner "$s"); done
[ -n "$victim" ] || { echo "image-test: web-1 has no owner" >&2; exit 1; }
survivor=127.0.0.2
[ "$victim" = corral-1 ] && survivor=127.0.0.3
export CORRAL_ADDR=http://$survivor:7480
podman kill -s KILL "$victim" >/dev/null
step "killed the container of $victim, the owner of web-1"
moved() {
	local s h
	for s in web-1 web-2 web-3; do
		h=$(owner "$s")
		[ -n "$h" ] && [ "$h" != "$victim" ] || return 1
	done
	active 3
}
wait_for 60 "the servers of $victim to move" moved
for s in web-1 web-2 web-3; do echo "image-test: $s ${before[$s]} -> $(owner "$s")"; done
step "every server of $victim has a live owner and is ACTIVE"

quiet podman start "$victim" >/dev/null
wait_for 30 "$victim to be ready again" ready 127.0.0.2 127.0.0.3 127.0.0.4
step "$victim restarted on its volume and ready"
"$cli" server delete web-1 web-2 web-3 --wait >/dev/null
quiet podman stop -t 10 corral-1 corral-2 corral-3 corral-sim >/dev/null
for n in corral-1 corral-2 corral-3; do
	code=$(podman inspect -f '{{.State.ExitCode}}' "$n")
	[ "$code" = 0 ] || [ "$code" = 143 ] || { echo "image-test: $n exited $code" >&2; exit 1; }
done
step "cluster stopped"
