package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/internal/pace"
)

// Probe knows how to reach the cluster and Ironic from the outside.
type Probe struct {
	Cl  *Cluster
	API *client.Corral
	IR  *client.Ironic
	RC  string // Ironic resource class of the suite's nodes
}

func (pr *Probe) hosts(ctx context.Context, base string) ([]client.HostView, error) {
	var body client.HostsResponse
	err := pr.API.GetJSON(ctx, base, client.HostsPath+"?consistency=linearizable", &body)
	return body.Hosts, err
}

// servers lists the servers linearizably (with the deleted ones when
// deleted is true), as the history records a read of them.
func (pr *Probe) servers(ctx context.Context, base string, deleted bool) ([]history.ServerState, error) {
	ss, err := pr.API.ListServers(ctx, base, history.Linearizable, deleted)
	if err != nil {
		return nil, err
	}
	return history.StatesOf(ss), nil
}

// AnyURL is the leader's API, or the first running agent's.
func (pr *Probe) AnyURL(ctx context.Context) string {
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
	base := pr.AnyURL(ctx)
	hs, err := pr.hosts(ctx, base)
	if err != nil {
		return err
	}
	up := 0
	for _, h := range hs {
		if h.Status == client.HostUp {
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
			var body client.NodesResponse
			last = pr.API.GetJSON(cctx, pr.AnyURL(cctx), client.NodesPath, &body)
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
		if !pace.Sleep(ctx, 300*time.Millisecond) {
			return fmt.Errorf("cluster not ready after %s: %w", timeout, last)
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
			o := pr.API.Do(cctx, http.MethodPost, pr.AnyURL(cctx), client.FlavorsPath, client.NewFlavor(id))
			if o.Code != http.StatusOK && o.Code != http.StatusCreated {
				last = fmt.Errorf("probe write: %s", o)
			}
		}
		ccancel()
		if last == nil {
			return time.Since(start), nil
		}
		if !pace.Sleep(ctx, 300*time.Millisecond) {
			return time.Since(start), fmt.Errorf("not recovered after %s: %w", timeout, last)
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
		servers, err := pr.servers(cctx, pr.AnyURL(cctx), false)
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
		if !pace.Sleep(ctx, 500*time.Millisecond) {
			return false, last
		}
	}
}
