package main

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/neutron/reaper"
)

// minPortReapGrace is the least port_reap_grace: far above the lease of a
// port create intent (compute.DefaultIntentLease, 3 s) and the timeout of
// one Neutron request, after which Neutron may still carry a create out.
const minPortReapGrace = time.Minute

// neutronReapConfig is the leader's port reaper (neutron/reaper), set in
// [neutron] beside Nova's options.
type neutronReapConfig struct {
	Interval time.Duration // 0: reaper.DefaultInterval
	Grace    time.Duration // 0: reaper.DefaultGrace; negative: off
}

var neutronReapOptions = []option{
	{section: "neutron", key: "port_reap_interval", usage: "how often the leader lists the Neutron ports corral created, to reap those whose server is gone (default 1m)",
		set: duration(func(c *agentConfig) *time.Duration { return &c.NeutronReap.Interval })},
	{section: "neutron", key: "port_reap_grace", usage: "how long the leader must see a port's server gone, the port unchanged, before it deletes the port (corral's) or gives it back (a user's) (default 10m, at least 1m; off: never)",
		set: portReapGrace},
}

func init() { options = append(options, neutronReapOptions...) }

// portReapGrace sets [neutron] port_reap_grace: a duration, or off.
func portReapGrace(c *agentConfig, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		c.NeutronReap.Grace = -1
		return nil
	}
	return duration(func(c *agentConfig) *time.Duration { return &c.NeutronReap.Grace })(c, v)
}

// validateNeutronReap checks the reaper's options against each other and
// against [neutron] itself.
func (c *agentConfig) validateNeutronReap() error {
	r := c.NeutronReap
	if r == (neutronReapConfig{}) {
		return nil
	}
	if !c.Neutron.Enabled() {
		return fmt.Errorf("[neutron] port_reap_interval and port_reap_grace need Neutron: set [neutron] auth_type and its options, or remove them")
	}
	grace, interval := r.Grace, r.Interval
	if grace == 0 {
		grace = reaper.DefaultGrace
	}
	if interval == 0 {
		interval = reaper.DefaultInterval
	}
	if grace < 0 {
		return nil
	}
	if grace < minPortReapGrace {
		return fmt.Errorf("[neutron] port_reap_grace %v is shorter than %v: a port's create may reach Neutron that late after its intent", grace, minPortReapGrace)
	}
	if interval > grace {
		return fmt.Errorf("[neutron] port_reap_interval %v is longer than port_reap_grace %v: the leader must look at a port more than once within its grace", interval, grace)
	}
	return nil
}

// portReaper is the leader's port reaper of an agent with [neutron] (nt,
// its client; nil: none), or nil when port_reap_grace is off.
func portReaper(cfg neutronReapConfig, node reaper.Cluster, nt reaper.Neutron, reg prometheus.Registerer, logger *slog.Logger) (*reaper.Reaper, error) {
	if nt == nil {
		return nil, nil
	}
	if cfg.Grace < 0 {
		logger.Info("the leader's Neutron port reaper is off ([neutron] port_reap_grace = off): ports of servers that are gone stay")
		return nil, nil
	}
	return reaper.New(node, nt, reaper.Config{Interval: cfg.Interval, Grace: cfg.Grace, Logger: logger, Registerer: reg})
}
