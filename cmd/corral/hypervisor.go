package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/compute/vmrecord"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/placement"
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

// runHypervisor reports this host's inventory once it is registered, then
// drives its VMs through the VM record driver until ctx ends.
func runHypervisor(ctx context.Context, cfg agentConfig, node *cluster.Node, reg prometheus.Registerer, logger *slog.Logger) {
	log := logger.With("component", "hypervisor")
	report := &fsm.ReportInventory{Host: cfg.Name, Inventory: hypervisorInventory(cfg.Hypervisor)}
	for backoff := 200 * time.Millisecond; ; {
		if h, err := node.Store().Host(cfg.Name); err == nil && h.Status == fsm.HostUp {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := node.Propose(pctx, report)
			cancel()
			if err == nil {
				log.Info("inventory reported", "vcpus", cfg.Hypervisor.VCPUs, "memory_mb", cfg.Hypervisor.MemoryMB, "disk_gb", cfg.Hypervisor.DiskGB)
				break
			}
			log.Warn("reporting inventory failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
	mgr, err := compute.New(compute.Config{Logger: logger, Registerer: reg}, node, vmrecord.New())
	if err != nil {
		log.Error("cannot start the compute manager", "err", err)
		return
	}
	mgr.Run(ctx)
}
