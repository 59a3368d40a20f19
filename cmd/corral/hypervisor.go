package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/compute/vmrecord"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/serverports"
)

// hypervisorInventory is what a hypervisor host reports to Placement.
func hypervisorInventory(h hypervisorConfig) map[string]placement.Inventory {
	inv := func(total int, ratio float64) placement.Inventory {
		return placement.Inventory{Total: int64(total), MinUnit: 1, MaxUnit: int64(total), StepSize: 1, AllocationRatio: ratio}
	}
	return map[string]placement.Inventory{
		"VCPU":      inv(h.VCPUs, h.CPUAllocationRatio),
		"MEMORY_MB": inv(h.MemoryMB, h.RAMAllocationRatio),
		"DISK_GB":   inv(h.DiskGB, h.DiskAllocationRatio),
	}
}

// errNotRegistered: this host is not registered and up yet; the inventory
// waits for it.
var errNotRegistered = errors.New("host not registered yet")

// hypervisorDriver is the VM record driver of a hypervisor host; with nt
// ([neutron]) its VMs get Neutron ports of vnic type normal, bound to
// this host.
func hypervisorDriver(nt serverports.Neutron, logger *slog.Logger) (*vmrecord.Driver, error) {
	if nt == nil {
		return vmrecord.New(vmrecord.Config{}), nil
	}
	p, err := serverports.New(nt, serverports.Config{VNICType: neutron.VNICNormal, Logger: logger})
	if err != nil {
		return nil, err
	}
	return vmrecord.New(vmrecord.Config{Ports: p}), nil
}

// runHypervisor reports this host's inventory once it is registered, then
// drives its VMs through the VM record driver until ctx ends; with nt
// ([neutron]) they get Neutron ports.
func runHypervisor(ctx context.Context, cfg agentConfig, node *cluster.Node, reg prometheus.Registerer, logger *slog.Logger, nt serverports.Neutron) {
	log := logger.With("component", "hypervisor")
	report := &fsm.ReportInventory{Host: cfg.Name, Inventory: hypervisorInventory(cfg.Hypervisor)}
	// 0.2 s, doubling up to 6.4 s, until the inventory is committed or ctx ends.
	wait := &backoff.ExponentialBackOff{InitialInterval: 200 * time.Millisecond, Multiplier: 2, MaxInterval: 6400 * time.Millisecond}
	_, err := backoff.Retry(ctx, func() (uint64, error) {
		if h, err := node.Store().Host(cfg.Name); err != nil || h.Status != fsm.HostUp {
			return 0, errNotRegistered
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return node.Propose(pctx, report)
	}, backoff.WithBackOff(wait), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, _ time.Duration) {
		if !errors.Is(err, errNotRegistered) {
			log.Warn("reporting inventory failed; retrying", "err", err)
		}
	}))
	if err != nil {
		return // ctx ended
	}
	log.Info("inventory reported", "vcpus", cfg.Hypervisor.VCPUs, "memory_mb", cfg.Hypervisor.MemoryMB, "disk_gb", cfg.Hypervisor.DiskGB)
	virt, err := hypervisorDriver(nt, logger)
	if err != nil {
		log.Error("cannot start the VM driver", "err", err)
		return
	}
	mgr, err := compute.New(compute.Config{Logger: logger, Registerer: reg}, node, virt)
	if err != nil {
		log.Error("cannot start the compute manager", "err", err)
		return
	}
	mgr.Run(ctx)
}
