# Sourced: points podman at a configuration and storage of corral's own
# under PODMAN_DIR (default /tmp/corral-podman), with the three settings
# Debian's podman 4.3 needs on these machines: ulimits within the hard
# limits root has here (podman's defaults are refused), runc (crun refuses
# hybrid cgroups) and host networking (loopback only; no CNI bridge).
# Needs: apt-get install podman runc catatonit.
PODMAN_DIR=${PODMAN_DIR:-/tmp/corral-podman}
mkdir -p "$PODMAN_DIR"
podman_nofile=$(ulimit -Hn)
[ "$podman_nofile" = unlimited ] && podman_nofile=65536
podman_nproc=$(cat /proc/sys/kernel/pid_max)
[ "$podman_nproc" -gt 20000 ] && podman_nproc=20000
cat >"$PODMAN_DIR/containers.conf" <<EOT
[containers]
default_ulimits = ["nofile=$podman_nofile:$podman_nofile", "nproc=$podman_nproc:$podman_nproc"]
netns = "host"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOT
cat >"$PODMAN_DIR/storage.conf" <<EOT
[storage]
driver = "overlay"
graphroot = "$PODMAN_DIR/storage"
runroot = "$PODMAN_DIR/run"
EOT
export CONTAINERS_CONF="$PODMAN_DIR/containers.conf" CONTAINERS_STORAGE_CONF="$PODMAN_DIR/storage.conf"
