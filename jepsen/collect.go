package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Probe knows how to reach the cluster and Ironic from the outside.
type Probe struct {
	Cl  *Cluster
	API *Corral
	IR  *Ironic
	RC  string // Ironic resource class of the suite's nodes
}

func (pr *Probe) hosts(ctx context.Context, base string) ([]HostView, error) {
	var body struct {
		Hosts []HostView `json:"hosts"`
	}
	err := pr.API.GetJSON(ctx, base, "/v1/hosts?consistency=linearizable", &body)
	return body.Hosts, err
}

// anyURL is the leader's API, or the first running agent's.
func (pr *Probe) anyURL(ctx context.Context) string {
	if l := pr.Cl.Agent(pr.Cl.Leader(ctx, pr.API)); l != nil {
		return l.URL()
	}
	for _, a := range pr.Cl.Agents {
		if a.Running() && !a.Paused() {
			return a.URL()
		}
	}
	return pr.Cl.Agents[0].URL()
}

// ready checks that every agent answers /readyz, a leader is known and
// every host is up.
func (pr *Probe) ready(ctx context.Context) error {
	for _, a := range pr.Cl.Agents {
		o := pr.API.Do(ctx, http.MethodGet, a.URL(), "/readyz", nil)
		if o.Code != http.StatusOK {
			return fmt.Errorf("%s not ready: %s", a.Name, o)
		}
	}
	base := pr.anyURL(ctx)
	hs, err := pr.hosts(ctx, base)
	if err != nil {
		return err
	}
	up := 0
	for _, h := range hs {
		if h.Status == "up" {
			up++
		}
	}
	if up != len(pr.Cl.Agents) {
		return fmt.Errorf("%d of %d hosts up", up, len(pr.Cl.Agents))
	}
	return nil
}

// WaitReady waits until the cluster is ready and its node mirror shows
// the suite's nodes (nodes of them, or any when nodes is 0).
func (pr *Probe) WaitReady(ctx context.Context, nodes int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		last = pr.ready(cctx)
		if last == nil {
			var body struct {
				Nodes []MirrorNode `json:"nodes"`
			}
			last = pr.API.GetJSON(cctx, pr.anyURL(cctx), "/v1/nodes", &body)
			if last == nil {
				n := 0
				for _, x := range body.Nodes {
					if x.ResourceClass == pr.RC {
						n++
					}
				}
				if n < nodes || n == 0 {
					last = fmt.Errorf("node mirror shows %d of %d nodes", n, nodes)
				}
			}
		}
		ccancel()
		if last == nil {
			return nil
		}
		if !sleepCtx(ctx, 300*time.Millisecond) {
			return fmt.Errorf("cluster not ready after %s: %v", timeout, last)
		}
	}
}

// Recover waits until the cluster is ready and acknowledges a probe write
// (a flavor), returning how long that took.
func (pr *Probe) Recover(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for i := 0; ; i++ {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = pr.ready(cctx)
		if last == nil {
			id := fmt.Sprintf("jepsen-probe-%d-%d", time.Now().UnixNano(), i)
			o := pr.API.Do(cctx, http.MethodPost, pr.anyURL(cctx), "/compute/v2.1/flavors", map[string]any{
				"flavor": map[string]any{"name": id, "id": id, "vcpus": 1, "ram": 1, "disk": 1}})
			if o.Code != http.StatusOK && o.Code != http.StatusCreated {
				last = fmt.Errorf("probe write: %s", o)
			}
		}
		ccancel()
		if last == nil {
			return time.Since(start), nil
		}
		if !sleepCtx(ctx, 300*time.Millisecond) {
			return time.Since(start), fmt.Errorf("not recovered after %s: %v", timeout, last)
		}
	}
}

// Quiesce waits until no server is building, being deleted or in a
// server action.
func (pr *Probe) Quiesce(ctx context.Context, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		servers, err := pr.API.ListServers(cctx, pr.anyURL(cctx), Linearizable, false)
		ccancel()
		if err == nil {
			busy := 0
			for _, s := range servers {
				if s.Status == "BUILD" || s.Deleting() || s.Acting() {
					busy++
				}
			}
			if busy == 0 {
				return true, ""
			}
			last = fmt.Sprintf("%d servers still building or deleting", busy)
		} else {
			last = err.Error()
		}
		if !sleepCtx(ctx, 500*time.Millisecond) {
			return false, last
		}
	}
}

// Collect reads the final state from every peer and from Ironic.
func (pr *Probe) Collect(ctx context.Context) FinalState {
	fs := FinalState{Views: map[string][]ServerState{}, Owners: map[string]OwnerView{}, Running: pr.Cl.Running()}
	fail := func(what string, err error) {
		fs.Errors = append(fs.Errors, fmt.Sprintf("%s: %v", what, err))
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	base := pr.anyURL(cctx)
	var err error
	if fs.Servers, err = pr.API.ListServers(cctx, base, Linearizable, true); err != nil {
		fail("servers", err)
	}
	for _, a := range pr.Cl.Agents {
		v, err := pr.API.ListServers(cctx, a.URL(), Linearizable, false)
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
		var body struct {
			Owner OwnerView `json:"owner"`
		}
		if err := pr.API.GetJSON(cctx, base, "/v1/servers/"+url.PathEscape(s.ID)+"/owner?consistency=linearizable", &body); err != nil {
			fail("owner of "+s.ID, err)
			continue
		}
		fs.Owners[s.ID] = body.Owner
	}
	if fs.Hosts, err = pr.hosts(cctx, base); err != nil {
		fail("hosts", err)
	}
	var res struct {
		Reservations []Reservation `json:"reservations"`
	}
	if err := pr.API.GetJSON(cctx, base, "/v1/reservations?consistency=linearizable", &res); err != nil {
		fail("reservations", err)
	}
	fs.Reservations = res.Reservations
	if fs.IronicNodes, err = pr.IR.Nodes(cctx, pr.RC); err != nil {
		fail("Ironic nodes", err)
	}
	if fs.Allocations, err = pr.IR.Allocations(cctx, pr.RC); err != nil {
		fail("Ironic allocations", err)
	}
	return fs
}
