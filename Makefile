# corral — common tasks. `make run` starts a local 3-peer cluster; `make test`
# runs every test tier with the race detector (CI runs it through .ci/run).
GO      ?= go
BIN     ?= bin/corral
PKGS    ?= ./...
TIMEOUT ?= 25m

.PHONY: all build run test test-short vet bench bench-failover bench-boot jepsen-quick jepsen ironic-up ironic-down clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/corral

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
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Failover: R runs of host SIGKILL -> all servers re-owned, and leader SIGKILL
# -> next committed write (p50/p99), plus a fault-free window (no reassignment).
bench-failover:
	CORRAL_BENCH=1 $(GO) test -v -count=1 -timeout 30m -run TestFailoverBenchmark ./e2e/failover/

# Boots on the simulator (and on IRONIC_URL when set) through three agents:
# boots/s, p50/p99 to ACTIVE, and corral's overhead beside direct Ironic calls.
bench-boot:
	CORRAL_BENCH=1 $(GO) test -count=1 -run '^TestBootBenchmark$$' -v -timeout 20m ./e2e/

# Fault injection (jepsen/, its own module; its processes and partitions
# come from testkit/, shared with e2e/). jepsen-quick: the checkers' tests
# and ~3 minutes of kill, pause and partition faults; jepsen: the tests and
# every nemesis for ~7 minutes (CI runs it). Needs root for the partitions.
# The agents are race-built when CORRAL_RACE=1 or CI=true. Exit 2 means a
# fault could not be injected or healed: the run proves nothing. Results
# land in jepsen/results/<run>/.
jepsen-quick:
	cd jepsen && $(GO) test -count=1 ./... && $(GO) run . -duration 150s -nemesis kill,pause,partition

jepsen:
	cd jepsen && $(GO) test -count=1 ./... && $(GO) run . -duration 400s -nemesis all

ironic-up:
	@scripts/ironic-up.sh

ironic-down:
	@scripts/ironic-down.sh

clean:
	rm -rf bin
