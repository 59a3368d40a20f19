package api_test

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// apiCluster is an in-process cluster whose peers serve their API on
// real listeners named in gossip, as agents do: a follower forwards
// writes to the leader's API, reaches it for remove-peer and snapshots,
// and every peer is the operator of its own endpoints.
type apiCluster struct {
	h   *clustertest.Harness
	ts  []*httptest.Server // by peer, p1 first
	api []*api.Server
}

// startAPICluster starts n peers, each serving api.New of the config
// with (its tokens, Keystone, ...) given the peer, and waits until every
// peer is ready, every host is up and every feature enabled (waitSettled).
func startAPICluster(t *testing.T, n int, with func(*clustertest.Peer, *api.Config)) *apiCluster {
	t.Helper()
	listeners := map[string]net.Listener{}
	for i := 1; i <= n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[fmt.Sprintf("p%d", i)] = l
	}
	h := clustertest.Start(t, n, clustertest.Options{Tweak: func(cfg *cluster.Config) {
		cfg.APIAddr = listeners[cfg.Name].Addr().String()
		cfg.PeerPaths = api.PeerPaths()
		cfg.Forwarder = nil // forwarding over HTTP, through the API's peers' endpoints
	}})
	h.Leader(15 * time.Second)
	c := &apiCluster{h: h}
	for _, p := range h.Running() {
		cfg := api.Config{
			Tokens:   map[string]core.Role{adminToken: core.RoleAdmin, readerToken: core.RoleReader},
			Peers:    p.Node,
			Operator: p.Node,
			Registry: p.Registry,
			Gatherer: p.Registry,
			Logger:   slog.New(slog.DiscardHandler),
		}
		if with != nil {
			with(p, &cfg)
		}
		srv, err := api.New(cfg, p.Node)
		if err != nil {
			t.Fatalf("api.New for %s: %v", p.Name, err)
		}
		ts := httptest.NewUnstartedServer(srv.Handler())
		ts.Listener.Close()
		ts.Listener = listeners[p.Name]
		ts.Start()
		t.Cleanup(ts.Close)
		c.ts, c.api = append(c.ts, ts), append(c.api, srv)
	}
	for i, ts := range c.ts {
		testkit.Eventually(t, 15*time.Second, func() error {
			if r := do(t, ts, "GET", "/readyz", "", "", nil); r.code != http.StatusOK {
				return fmt.Errorf("p%d readyz: %s", i+1, r)
			}
			return nil
		})
	}
	waitSettled(t, h.Running()...)
	return c
}

// server is the test server of the named peer.
func (c *apiCluster) server(name string) *httptest.Server {
	for i, p := range c.h.Running() {
		if p.Name == name {
			return c.ts[i]
		}
	}
	panic("no peer " + name)
}
