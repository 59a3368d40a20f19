#!/usr/bin/env bash
# Builds corral's Debian package with dpkg-deb alone (no other tool):
#   deploy/debian/build.sh BIN VERSION OUTDIR
# BIN is a static corral binary, VERSION a Debian version (0.1.0,
# 0.1.0~dev+g1234). The package installs /usr/bin/corral, the systemd unit
# (deploy/systemd/corral.service, ExecStart=/usr/bin/corral), the default
# /etc/corral/corral.conf (a conffile), the sysusers entry of the user
# corral; its scripts make the user, /var/lib/corral and /etc/default/corral.
# SOURCE_DATE_EPOCH (default: the commit's time) makes rebuilds identical.
set -euo pipefail
bin=$1 version=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}
root=$(mktemp -d)
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
install -D -m 0755 "$bin" "$root/usr/bin/corral"
install -d -m 0755 "$root/lib/systemd/system"
sed 's|^ExecStart=/usr/local/bin/corral |ExecStart=/usr/bin/corral |' "$repo/deploy/systemd/corral.service" \
	>"$root/lib/systemd/system/corral.service"
grep -q '^ExecStart=/usr/bin/corral ' "$root/lib/systemd/system/corral.service" || {
	echo "build.sh: the unit's ExecStart is not /usr/local/bin/corral" >&2; exit 1; }
chmod 0644 "$root/lib/systemd/system/corral.service"
install -D -m 0640 "$here/corral.conf" "$root/etc/corral/corral.conf"
install -D -m 0644 "$here/sysusers.conf" "$root/usr/lib/sysusers.d/corral.conf"
install -D -m 0644 "$repo/CHANGELOG.md" "$root/usr/share/doc/corral/CHANGELOG.md"
install -d -m 0755 "$root/DEBIAN"
for s in postinst prerm postrm; do install -m 0755 "$here/$s" "$root/DEBIAN/$s"; done
echo /etc/corral/corral.conf >"$root/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOT
Package: corral
Version: $version
Architecture: amd64
Maintainer: corral maintainers <maintainers@corral.invalid>
Depends: ca-certificates, passwd
Section: net
Priority: optional
Installed-Size: $size
Homepage: https://github.com/corral-dev/corral
Description: clustered compute hosts for OpenStack Ironic
 corral lets several peer compute hosts manage one OpenStack Ironic
 bare-metal cloud together, serving Nova's API: raft for the state,
 gossip for membership, servers reassigned in seconds when a host dies.
EOT
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$out"
deb="$out/corral_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zzstd --build "$root" "$deb" >/dev/null
echo "$deb"
