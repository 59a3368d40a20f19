package cluster

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/internal/pace"
)

// NeutronRun is what a run with -neutron knows of its ports, to read
// them after the quiescence.
type NeutronRun struct {
	NT        *Neutron
	Admin     *client.Neutron // the control plane's admin
	ProjectID string          // the workload user's project
	Since     time.Time       // the run's start
	UserPorts []string        // the ports made as the user for boots
	Grace     time.Duration   // the reaper's grace (see NeutronReapGraceOption)
}

// ports reads the run's ports on the network: those whose device is a
// server of the run, the user's ports, and those of the user's project
// made since the run started with a device (history.NeutronState.Ports).
func (nr *NeutronRun) ports(ctx context.Context, known map[string]bool) ([]client.NeutronPort, error) {
	all, err := nr.Admin.Ports(ctx, url.Values{"network_id": {nr.NT.NetworkID}})
	if err != nil {
		return nil, err
	}
	user := history.Set(nr.UserPorts)
	since := nr.Since.UTC().Truncate(time.Second)
	var out []client.NeutronPort
	for _, p := range all {
		created, err := time.Parse(time.RFC3339, p.CreatedAt)
		recent := err == nil && !created.Before(since)
		if known[p.DeviceID] || user[p.ID] || (p.DeviceID != "" && p.ProjectID == nr.ProjectID && recent) {
			out = append(out, p)
		}
	}
	return out, nil
}

// AwaitReaped gives the leader's reaper its grace (plus NeutronReapSlack)
// to delete the ports whose server is gone, and returns how long it
// waited: at once when Neutron shows none.
func (nr *NeutronRun) AwaitReaped(ctx context.Context, fs history.FinalState, known map[string]bool) history.ReapWait {
	rw := history.ReapWait{Option: NeutronReapGraceOption, GraceS: nr.Grace.Seconds(), WaitS: (nr.Grace + NeutronReapSlack).Seconds()}
	live, user := history.LiveIDs(fs.Servers), history.Set(nr.UserPorts)
	start := time.Now()
	deadline := start.Add(nr.Grace + NeutronReapSlack)
	rw.OrphansBefore = -1 // until Neutron answers
	for {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ports, err := nr.ports(rctx, known)
		cancel()
		n := len(history.Orphans(ports, live, known, user))
		if err == nil && rw.OrphansBefore < 0 {
			rw.OrphansBefore = n
		}
		if (err == nil && n == 0) || time.Now().After(deadline) || !pace.Sleep(ctx, time.Second) {
			break
		}
	}
	rw.WaitedS = time.Since(start).Seconds()
	return rw
}

// CollectNeutron reads the run's ports and the live servers' addresses
// in corral's view into fs.Neutron; known are the ids of every server of
// the run (corral's list and the history).
func (pr *Probe) CollectNeutron(ctx context.Context, fs *history.FinalState, nr *NeutronRun, known []string, reap history.ReapWait) {
	ns := &history.NeutronState{URL: nr.NT.URL, Network: nr.NT.Network, NetworkID: nr.NT.NetworkID, ProjectID: nr.ProjectID,
		Since: nr.Since.UTC().Format(time.RFC3339), UserPorts: slices.Clone(nr.UserPorts), Addresses: map[string][]history.Address{},
		Networks: map[string]string{nr.NT.NetworkID: nr.NT.Network}, Reap: reap}
	ks := history.Set(known)
	for _, s := range fs.Servers {
		ks[s.ID] = true
	}
	ns.KnownServers = slices.Sorted(maps.Keys(ks))
	fail := func(what string, err error) { ns.Errors = append(ns.Errors, fmt.Sprintf("%s: %v", what, err)) }
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ports, err := nr.ports(cctx, ks)
	if err != nil {
		fail("Neutron ports", err)
	}
	ns.Ports = ports
	for _, p := range ports {
		if _, ok := ns.Networks[p.NetworkID]; ok {
			continue
		}
		n, err := nr.Admin.Network(cctx, p.NetworkID)
		if err != nil {
			fail("Neutron network "+p.NetworkID, err)
			continue
		}
		ns.Networks[n.ID] = n.Name
	}
	ss, err := pr.API.ListServers(cctx, pr.AnyURL(cctx), history.Linearizable, false)
	if err != nil {
		fail("servers' addresses", err)
	}
	for _, s := range ss {
		ns.Addresses[s.ID] = history.AddressesOf(s)
	}
	reap.OrphansAfter = len(history.Orphans(ports, history.LiveIDs(fs.Servers), ks, history.Set(nr.UserPorts)))
	ns.Reap = reap
	fs.Neutron = ns
}

// RunPorts are the ports of the run that the suite removes at its end:
// the user's, and those whose device is a server of the run (corral's
// leftovers, and the ports of the servers still live when the agents
// stop). Ports of the user's project whose device is no server of the
// run may be another client's and are left alone.
func RunPorts(ns *history.NeutronState) []string {
	if ns == nil {
		return nil
	}
	known, user := history.Set(ns.KnownServers), history.Set(ns.UserPorts)
	out := slices.Clone(ns.UserPorts)
	for _, p := range ns.Ports {
		if known[p.DeviceID] && !user[p.ID] {
			out = append(out, p.ID)
		}
	}
	return out
}
