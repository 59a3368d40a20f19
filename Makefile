# corral — common tasks. `make run` starts a local 3-peer cluster; `make test`
# runs every test tier with the race detector (CI runs it through .ci/run).
GO      ?= go
BIN     ?= bin/corral
PKGS    ?= ./...
TIMEOUT ?= 25m
# A release is a tag vX.Y.Z; between releases the version is the next one
# (CHANGELOG.md's first heading) with -dev+g<commit>, the same for every
# build of one commit (the image's digest depends on it).
RELEASE ?= $(shell sed -n 's/^## \([0-9][0-9.]*\).*/\1/p' CHANGELOG.md 2>/dev/null | head -n 1)
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --exact-match --dirty 2>/dev/null || \
	echo $(RELEASE)-dev+g$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD -- 2>/dev/null || echo .dirty))
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS ?= -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build run test test-short vet bench bench-micro bench-failover bench-auth bench-boot bench-mass-boot bench-migrate bench-scale bench-accept bench-scale-agents bench-snapshot bench-failover-scale bench-api-writes bench-list jepsen-quick jepsen jepsen-massboot jepsen-actions ironic-up ironic-down clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/corral

run: build
	./$(BIN) dev

vet:
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Every tier: pure, in-process clusters, real processes (and the real Ironic
# when IRONIC_URL is set; see scripts/ironic-up.sh). One package at a time:
# the real-process tiers measure failure detection, which a machine shared
# with other test packages would distort.
test: vet
	$(GO) test -race -count=1 -p 1 -timeout $(TIMEOUT) $(PKGS)

# Fast tier only: skips the tests that start processes.
test-short:
	$(GO) test -short -count=1 $(PKGS)

# Benchmarks (goals live here, never in timed tests).
# bench: every performance goal of docs/benchmarks.md in one table
# (testkit/benchtable): the benchmarks below run one after the other at
# BENCH_SIZE (small: seconds to tens of seconds each, for CI; full: the
# documented sizes), each printing its rows (testkit/benchrow) beside its
# own tables; the table goes to stdout, bin/bench.md and bin/bench.json,
# each benchmark's output to bin/bench/logs/. It fails only when a
# benchmark fails to run or prints no row: a goal not met is reported.
# BENCH_FLAGS adds flags, e.g. BENCH_FLAGS="-only failover -v".
BENCH_SIZE  ?= small
BENCH_FLAGS ?=
bench:
	$(GO) run ./testkit/benchtable -size $(BENCH_SIZE) $(BENCH_FLAGS)

# Every Go micro-benchmark (what `make bench` ran before the table).
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Failover: R runs of host SIGKILL, SIGSTOP and partition -> all servers
# re-owned, and leader SIGKILL and SIGTERM -> next committed write (p50/p99),
# plus fault-free, 5 % loss and CPU-starved windows (no reassignment, no
# election). CORRAL_BENCH_RUNS, CORRAL_BENCH_ONLY=kill,leader,stop,pause,
# partition,loss,starve, CORRAL_BENCH_ENV (agent settings); same-run
# comparison with a second cluster: CORRAL_BENCH_B_ENV, CORRAL_BENCH_B_BIN.
bench-failover:
	CORRAL_BENCH=1 $(GO) test -v -count=1 -timeout 60m -run TestFailoverBenchmark ./e2e/failover/

# Keystone's cost to the API: reads/s with a Keystone token (validated once,
# then cached) / reads/s with a static token, interleaved rounds of one run
# (goal >= 0.9), and one Keystone validation for a cold token carried by 64
# concurrent requests. Uses the real Keystone when the env file of
# scripts/openstack-up.sh is exported (OS_AUTH_URL, ...), else a fake one.
bench-auth:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^TestBenchAuth$$' -v -timeout 10m ./api/

# Boots on the simulator (and on IRONIC_URL when set) through three agents:
# boots/s, p50/p99 to ACTIVE, and corral's overhead beside direct Ironic calls.
bench-boot:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^TestBootBenchmark$$' -v -timeout 20m ./e2e/

# Mass provisioning: 100, 300 and 1,000 boots at once (30 s simulated
# deploys) on an in-process 3-peer cluster, with deploy_wait = watch, beside
# 100 boots the old way (deploy_wait = poll) in the same run: wall time to
# all ACTIVE / deploy time and Ironic requests per boot, polling included.
# CORRAL_BENCH_MASS_N, CORRAL_BENCH_MASS_POLL_N, CORRAL_BENCH_MASS_DEPLOY
# change the runs.
bench-mass-boot:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^TestMassBootBenchmark$$' -v -timeout 60m ./ironic/driver/

# 10^5 Ironic nodes in the simulator mirrored by an in-process 3-peer
# cluster: first full mirror (wall), a steady sync pass (CPU), heap per
# peer. CORRAL_BENCH_SCALE_NODES changes the count.
bench-scale:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^$$' -bench '^BenchmarkMirrorScale$$' -benchtime 1x -timeout 40m ./ironic/mirror/

# Snapshot and restore of a replicated state of 10^5 nodes and 10^5 servers.
# 10^5 simulator nodes under three real agent processes: first mirror, RSS
# per agent, leader CPU at steady state, 200 boots, snapshot, a host kill.
# Boots accepted per second through the API: 1,000 POST /servers from 64
# clients over three real agent processes.
bench-accept:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^TestBootAcceptBenchmark$$' -v -timeout 20m ./e2e/

bench-scale-agents:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^TestScaleAgentsBenchmark$$' -v -timeout 30m ./e2e/

bench-snapshot:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^$$' -bench '^Benchmark(Snapshot|Restore|RestoreHeap)Scale$$' -benchtime 3x -benchmem -timeout 30m ./fsm/

# SIGKILL-like stop of an in-process peer owning 10^4 servers: time until
# every server has a live owner. CORRAL_BENCH_FAILOVER_SERVERS changes it.
bench-failover-scale:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^$$' -bench '^BenchmarkFailoverScale$$' -benchtime 1x -timeout 30m ./cluster/

# API writes beside raw hashicorp/raft + raft-boltdb commits, 3 peers, 64
# clients, same run: POST /compute/v2.1/flavors through the leader and
# spread over the peers, ÷ raw commits/s. CORRAL_BENCH_WRITES_SECONDS and
# CORRAL_BENCH_WRITES_ROUNDS change the rounds.
bench-api-writes:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^$$' -bench '^BenchmarkAPIWritesVsRaft$$' -benchtime 1x -timeout 30m ./api/

# GET /servers against 10^4 live servers and 10^5 deleted ones retained:
# the list from the indexes and the reference that sorts every server,
# in the same run (docs/benchmarks.md).
bench-list:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^$$' -bench '^BenchmarkServerList$$' -benchtime 5x -timeout 60m ./api/nova/

# Migration from nova baremetal: 10^3 nodes, half of them deployed, into the
# simulator and (when IRONIC_URL is set) into the real Ironic, through the
# migrator and ironic client of `corral manage baremetal-migrate` (corral
# faked in memory): wall time, nodes/s, Ironic requests per node.
# CORRAL_BENCH_MIGRATE_NODES (default 1000) sets the real Ironic's count;
# the nodes it creates there are removed afterwards.
bench-migrate:
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkMigrate$$' -benchtime 1x -timeout 90m ./upgrade/novabm/

# Fault injection (jepsen/, its own module; its processes and partitions
# come from testkit/, shared with e2e/). jepsen-quick: the checkers' tests
# and ~3 minutes of kill, pause and partition faults; jepsen: the tests and
# every nemesis (key rotation included) for ~7 minutes over TLS with
# encrypted gossip (CI runs it). Needs root for the partitions. JEPSEN_FLAGS
# adds flags to either run, e.g. JEPSEN_FLAGS=-keystone with OPENSTACK_ENV
# set to the env file of scripts/openstack-up.sh, or JEPSEN_FLAGS="-keystone
# -neutron" with NEUTRON_ENV too (scripts/neutron-up.sh: boots on Neutron's
# ports, checked after the run; CI runs jepsen-quick so). The agents are race-built
# when CORRAL_RACE=1 or CI=true. Exit 2 means a fault could not be injected
# or healed: the run proves nothing. Results land in jepsen/results/<run>/.
JEPSEN_FLAGS ?=

jepsen-quick:
	cd jepsen && $(GO) test -count=1 ./... && $(GO) run . -duration 150s -nemesis kill,pause,partition $(JEPSEN_FLAGS)

jepsen:
	cd jepsen && $(GO) test -count=1 ./... && $(GO) run . -duration 400s -nemesis all -tls $(JEPSEN_FLAGS)

# Mass boots under faults: three waves of 200 boots at once (150 nodes, so
# "No valid host" must happen) while peers are killed and partitioned; no
# node held twice, no acknowledged boot lost, no "No valid host" while a
# node stayed free. About 2-3 minutes.
jepsen-massboot:
	cd jepsen && $(GO) test -count=1 ./... && $(GO) run . -workload massboot -waves 3 -nemesis kill,partition $(JEPSEN_FLAGS)

# Server actions under faults: stop, start, reboot and rebuild of live
# servers (the simulator's rebuilds take 3 s, power changes 2 s) while the
# owners of servers with an action just accepted are killed, paused and cut
# off from the other peers; each action's request id must reach Ironic's
# side effects once (the simulator's side-effect log). About 3-4 minutes.
jepsen-actions:
	cd jepsen && $(GO) test -count=1 ./... && $(GO) run . -workload actions -duration 120s -nemesis kill,pause,partition $(JEPSEN_FLAGS)

ironic-up:
	@scripts/ironic-up.sh

ironic-down:
	@scripts/ironic-down.sh

clean:
	rm -rf bin

# ---- Packaging: the container image, the Debian package and the Kubernetes
# manifests (deploy/; tools/ is a module of its own for their tools). ----
STATIC_BIN  ?= bin/corral-static
IMAGE_TAR   ?= bin/corral-image.tar
IMAGE_OCI   ?= bin/corral-image-oci
DEB_DIR     ?= bin/deb
DEB_VERSION ?= $(subst -,~,$(patsubst v%,%,$(VERSION)))

.PHONY: static image deb manifests-check image-test deb-test

# The static binary the image and the package ship (no libc needed).
static:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(STATIC_BIN) ./cmd/corral

# OCI image without a registry or a daemon: an OCI layout and a
# docker-archive for `podman load`; the same commit gives the same digest.
image: static
	cd tools && $(GO) run ./mkimage -bin $(abspath $(STATIC_BIN)) -conf $(abspath deploy/container/corral.conf) \
		-version $(VERSION) -commit $(COMMIT) -oci $(abspath $(IMAGE_OCI)) -tar $(abspath $(IMAGE_TAR)) \
		-digest $(abspath bin/corral-image.digest)

# Debian package (dpkg-deb): /usr/bin/corral, the systemd unit, /etc/corral/corral.conf.
deb: static
	deploy/debian/build.sh $(STATIC_BIN) $(DEB_VERSION) $(DEB_DIR)

# The StatefulSet and the Helm chart, checked offline: strict decoding,
# Kubernetes' OpenAPI schema, helm lint and helm template.
manifests-check:
	cd tools && $(GO) test -count=1 ./k8scheck/

# The image in podman: three peers and the simulator on 127.0.0.2-4.
image-test: image
	scripts/image-test.sh $(IMAGE_TAR) $(STATIC_BIN)

# The package under systemd in a container: install, start, upgrade, remove, purge.
deb-test: deb
	deploy/debian/build.sh $(STATIC_BIN) $(DEB_VERSION).1 $(DEB_DIR)/upgrade
	scripts/deb-test.sh $(DEB_DIR)/corral_$(DEB_VERSION)_amd64.deb $(DEB_DIR)/upgrade/corral_$(DEB_VERSION).1_amd64.deb
