#!/usr/bin/env bash
# corral's Debian package under a real systemd (CI runs this after `make
# deb`): a Debian bookworm container with systemd as PID 1 (podman, host
# network); dpkg -i, then `systemctl start corral` serves /readyz with the
# package's default configuration; an upgrade keeps a local edit of the
# conffile and restarts the peer on the new package; a removal stops it and
# keeps the configuration, the data and the user; a purge removes them.
#   scripts/deb-test.sh DEB UPGRADE_DEB
# UPGRADE_DEB is a later version of the same package. The container's root
# file system is made once with mmdebstrap (or debootstrap) from the
# machine's Debian mirror and kept in $CORRAL_SYSTEMD_ROOTFS.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(realpath "$1") upgrade=$(realpath "$2")
t0=$(date +%s%N)
step() { local ms=$((($(date +%s%N) - t0) / 1000000)); printf 'deb-test: [%d.%01d s] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"; }
fail() { echo "deb-test: $*" >&2; exit 1; }
. scripts/podman-env.sh
image=localhost/corral-ci-systemd:bookworm
rootfs=${CORRAL_SYSTEMD_ROOTFS:-/var/cache/corral-ci/debian-bookworm-systemd.tar}
name=corral-sysd
debs=$(mktemp -d /tmp/corral-deb-test.XXXXXX)
cleanup() {
	podman rm -f -t 2 --ignore "$name" >/dev/null 2>&1 || true
	rm -rf "$debs"
}
trap cleanup EXIT
podman rm -f --ignore "$name" >/dev/null 2>&1 || true

if ! podman image exists "$image"; then
	if [ ! -s "$rootfs" ]; then
		mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
		mirror=${mirror:-http://deb.debian.org/debian}
		mkdir -p "$(dirname "$rootfs")"
		pkgs=systemd,systemd-sysv,dbus,ca-certificates
		if command -v mmdebstrap >/dev/null; then
			# Without documentation, manual pages and translations: a
			# smaller file system imports faster.
			mmdebstrap --quiet --variant=minbase --include="$pkgs" \
				--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
				--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
				--format=tar bookworm "$rootfs.tmp" "$mirror"
		else
			dir=$(mktemp -d)
			debootstrap --variant=minbase --include="$pkgs" bookworm "$dir" "$mirror" >/dev/null
			tar -C "$dir" -cf "$rootfs.tmp" .
			rm -rf "$dir"
		fi
		mv "$rootfs.tmp" "$rootfs"
		step "made a Debian root file system with systemd in $rootfs"
	fi
	podman import -q --change CMD=/sbin/init "$rootfs" "$image" >/dev/null
	step "imported it as $image"
fi
cp "$deb" "$debs/corral.deb"
cp "$upgrade" "$debs/corral-upgrade.deb"
podman run -d --name "$name" --systemd=always -v "$debs:/debs:ro" "$image" /sbin/init >/dev/null
inside() { podman exec "$name" "$@"; }
deadline=$(($(date +%s) + 60))
until state=$(inside systemctl is-system-running 2>/dev/null) || [ "$state" = degraded ]; do
	[ "$(date +%s)" -lt "$deadline" ] || fail "systemd in the container is $state"
	sleep 0.2
done
step "systemd runs in the container ($state)"

dpkg_in() { local out; out=$(inside dpkg "$@" 2>&1) || fail "dpkg $*: $out"; }
dpkg_in -i /debs/corral.deb
inside id corral >/dev/null || fail "no user corral"
[ "$(inside stat -c '%U:%G %a' /var/lib/corral)" = "corral:corral 750" ] || fail "/var/lib/corral is $(inside stat -c '%U:%G %a' /var/lib/corral)"
[ "$(inside stat -c '%U:%G %a' /etc/default/corral)" = "root:corral 640" ] || fail "/etc/default/corral is not root:corral 0640"
inside dpkg-query -W -f='${Conffiles}\n' corral | grep -q ' /etc/corral/corral.conf ' || fail "/etc/corral/corral.conf is no conffile"
[ "$(inside systemctl is-enabled corral)" = disabled ] || fail "the unit is enabled on install"
out=$(inside systemd-analyze verify /lib/systemd/system/corral.service 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify: $out"
step "installed: user, data dir, secrets, conffile; the unit verifies"

# The peer's address: 127.0.0.61, a local edit of the conffile that the
# upgrade must keep.
inside sed -i 's/^bind = 127.0.0.1$/bind = 127.0.0.61/' /etc/corral/corral.conf
ready() { curl -fs -o /dev/null --max-time 2 http://127.0.0.61:7480/readyz; }
wait_ready() {
	local deadline=$(($(date +%s) + 30))
	until ready; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			inside journalctl -u corral --no-pager | tail -n 20 >&2
			fail "/readyz did not answer 200 $1"
		fi
		sleep 0.1
	done
}
inside systemctl start corral
wait_ready "after systemctl start corral"
step "systemctl start corral: /readyz answers 200"
token=$(inside sh -c '. /etc/default/corral; echo $CORRAL_ADMIN_TOKEN')
cli() { inside env CORRAL_ADDR=http://127.0.0.61:7480 CORRAL_TOKEN="$token" corral "$@"; }
cli flavor create before-upgrade --vcpus 1 --ram 512 --disk 1 >/dev/null
pid=$(inside systemctl show -p MainPID --value corral)
[ "$(inside stat -c %U "/proc/$pid")" = corral ] || fail "the peer does not run as corral"

dpkg_in -i /debs/corral-upgrade.deb
inside grep -q '^bind = 127.0.0.61$' /etc/corral/corral.conf || fail "the upgrade lost the conffile's edit"
[ "$(inside systemctl show -p MainPID --value corral)" != "$pid" ] || fail "the upgrade did not restart the peer"
wait_ready "after the upgrade"
cli flavor show before-upgrade >/dev/null || fail "the upgrade lost the data"
step "upgraded to $(inside dpkg-query -W -f='${Version}' corral): conffile kept, peer restarted, data kept"

dpkg_in -r corral
[ "$(inside systemctl is-active corral)" != active ] || fail "the peer runs after dpkg -r"
! inside test -e /usr/bin/corral || fail "/usr/bin/corral is left after dpkg -r"
inside test -f /etc/corral/corral.conf || fail "dpkg -r removed the configuration"
inside test -d /var/lib/corral -a -f /etc/default/corral || fail "dpkg -r removed the data or the secrets"
inside id corral >/dev/null || fail "dpkg -r removed the user"
step "removed: stopped; configuration, data and user kept"

dpkg_in -P corral
for p in /etc/corral /var/lib/corral /etc/default/corral; do ! inside test -e "$p" || fail "$p is left after dpkg -P"; done
! inside id corral >/dev/null 2>&1 || fail "the user corral is left after dpkg -P"
step "purged: configuration, data, secrets and user gone"
podman stop -t 5 "$name" >/dev/null
step "container stopped"
