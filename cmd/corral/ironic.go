package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/mirror"
	"github.com/corral-dev/corral/neutron/serverports"
)

// runIronic connects to Ironic (retrying until it answers) and then runs
// this host's driver and the leader's node sync until ctx ends; with nt
// ([neutron]) the driver gives servers Neutron ports.
func runIronic(ctx context.Context, cfg ironicConfig, build bool, node *cluster.Node, reg prometheus.Registerer, logger *slog.Logger, bm *baremetalSource, nt serverports.Neutron) {
	log := logger.With("component", "ironic", "url", cfg.URL)
	// 0.5 s, doubling up to 16 s, until Ironic answers or ctx ends.
	wait := &backoff.ExponentialBackOff{InitialInterval: 500 * time.Millisecond, Multiplier: 2, MaxInterval: 16 * time.Second}
	client, err := backoff.Retry(ctx, func() (*ironic.Client, error) {
		return ironic.New(ctx, ironic.Options{URL: cfg.URL, Auth: cfg.Auth, MaxVersion: cfg.MaxVersion,
			RequestTimeout: cfg.RequestTimeout, Logger: logger, Registerer: reg, UserAgent: "corral-host/" + node.Name()})
	}, backoff.WithBackOff(wait), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, in time.Duration) {
		log.Warn("Ironic is not reachable yet; retrying", "in", in, "err", err)
	}))
	if err != nil {
		return // ctx ended
	}
	bm.set(client)
	virt, err := driver.New(driver.Config{Reservation: cfg.Reservation, DeployTimeout: cfg.DeployTimeout, Wait: cfg.DeployWait, Logger: logger,
		Neutron: nt}, client)
	if err != nil {
		log.Error("cannot start the Ironic driver: servers of this host will not be built", "err", err)
		return
	}
	// The legacy inventory workaround reaches the mirror through the
	// settings every host advertises in gossip (see clusterConfig).
	sync, err := mirror.New(node, node, client, mirror.Config{Interval: cfg.SyncInterval, FullSyncInterval: cfg.FullSyncInterval, BriefFullPass: true, OrphanGrace: cfg.OrphanGrace,
		Logger: logger, Registerer: reg})
	if err != nil {
		log.Error("cannot start the node sync", "err", err)
		return
	}
	// A boot that finds no node has the leader run one sync pass before
	// it answers "No valid host" (nodes enrolled since the last sync).
	node.SetMirrorSync(sync)
	defer node.SetMirrorSync(nil)
	log.Info("connected to Ironic", "microversion", client.Version(), "reservation", virt.Mode(), "builds_servers", build)
	if !build {
		sync.Run(ctx)
		return
	}
	drv, err := compute.New(compute.Config{Workers: ironicWorkers(cfg), Logger: logger, Registerer: reg}, node, virt)
	if err != nil {
		log.Error("cannot start the compute manager", "err", err)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sync.Run(ctx)
	}()
	drv.Run(ctx)
	<-done
}

// ironicWorkers is [ironic] workers, or its default: 32 when deploys are
// watched (a worker takes only the short steps of a build, so many can run
// at once for few Ironic requests), 8 with deploy_wait = poll (each worker
// then polls its node every 100 ms for the whole deploy).
func ironicWorkers(cfg ironicConfig) int {
	switch {
	case cfg.Workers > 0:
		return cfg.Workers
	case cfg.DeployWait == "poll":
		return 8
	}
	return 32
}
