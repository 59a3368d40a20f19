package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// Collect reads the final state from every peer and from Ironic.
func (pr *Probe) Collect(ctx context.Context) history.FinalState {
	fs := history.FinalState{Views: map[string][]history.ServerState{}, Owners: map[string]history.Owner{}, Running: pr.Cl.Running()}
	fail := func(what string, err error) {
		fs.Errors = append(fs.Errors, fmt.Sprintf("%s: %v", what, err))
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	base := pr.AnyURL(cctx)
	var err error
	if fs.Servers, err = pr.everyServer(cctx, base); err != nil {
		fail("servers", err)
	}
	for _, a := range pr.Cl.Agents {
		v, err := pr.servers(cctx, a.URL(), false)
		if err != nil {
			fail("servers as seen by "+a.Name, err)
			continue
		}
		fs.Views[a.Name] = v
	}
	for _, s := range fs.Servers {
		if s.Status == "DELETED" {
			continue
		}
		var body client.OwnerResponse
		if err := pr.API.GetJSON(cctx, base, client.OwnerPath(s.ID)+"?consistency=linearizable", &body); err != nil {
			fail("owner of "+s.ID, err)
			continue
		}
		fs.Owners[s.ID] = history.OwnerOf(body.Owner)
	}
	hosts, err := pr.hosts(cctx, base)
	if err != nil {
		fail("hosts", err)
	}
	fs.Hosts = history.HostsOf(hosts)
	var res client.ReservationsResponse
	if err := pr.API.GetJSON(cctx, base, client.ReservationsPath+"?consistency=linearizable", &res); err != nil {
		fail("reservations", err)
	}
	fs.Reservations = history.ReservationsOf(res.Reservations)
	if fs.IronicNodes, err = pr.IR.Nodes(cctx, pr.RC); err != nil {
		fail("Ironic nodes", err)
	}
	if fs.Allocations, err = pr.IR.Allocations(cctx, pr.RC); err != nil {
		fail("Ironic allocations", err)
	}
	return fs
}

// everyServer lists every server base holds, live and deleted (kept for
// deleted_retention), linearizably: deleted=true lists the deleted ones
// only, as Nova's filter, so it takes two reads, the live servers first.
// A server deleted between them is kept as the second read saw it.
func (pr *Probe) everyServer(ctx context.Context, base string) ([]history.ServerState, error) {
	live, err := pr.servers(ctx, base, false)
	if err != nil {
		return nil, err
	}
	deleted, err := pr.servers(ctx, base, true)
	if err != nil {
		return nil, err
	}
	gone := make(map[string]bool, len(deleted))
	for _, s := range deleted {
		gone[s.ID] = true
	}
	out := make([]history.ServerState, 0, len(live)+len(deleted))
	for _, s := range live {
		if !gone[s.ID] {
			out = append(out, s)
		}
	}
	return append(out, deleted...), nil
}
