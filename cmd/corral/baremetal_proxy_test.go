package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/api/nova"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
)

func TestBaremetalSource(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	s := sim.New(sim.Options{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("X-Auth-Token")] = true
		mu.Unlock()
		if r.Header.Get("X-Auth-Token") == "refused-token" {
			http.Error(w, `{"error_message": "{\"faultstring\": \"baremetal:node:list is disallowed by policy\"}"}`, http.StatusForbidden)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.Close(); s.Close() })
	ctx := context.Background()
	c, err := ironic.New(ctx, ironic.Options{URL: ts.URL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const node = "6fae68da-108b-4a9d-87c4-88831ee1241b"
	if _, err := c.CreateNode(ctx, ironic.NodeSpec{UUID: node, Driver: "fake-hardware",
		Properties: map[string]any{"cpus": 8, "memory_mb": 4096, "local_gb": 40}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePort(ctx, ironic.PortSpec{NodeUUID: node, Address: "52:54:00:00:00:01"}); err != nil {
		t.Fatal(err)
	}

	src := &baremetalSource{forward: true}
	if _, err := src.BaremetalNodes(ctx, "tok"); !errors.Is(err, cluster.ErrNotReady) {
		t.Fatalf("before Ironic answers: %v, want ErrNotReady", err)
	}
	src.set(c)
	list, err := src.BaremetalNodes(ctx, "caller-token")
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if n := list[0]; n.UUID != node || n.CPUs != 8 || n.MemoryMB != 4096 || n.LocalGB != 40 || len(n.MACs) != 1 || n.ProvisionState != "enroll" {
		t.Fatalf("node: %+v", n)
	}
	mu.Lock()
	forwarded := seen["caller-token"]
	mu.Unlock()
	if !forwarded {
		t.Fatal("the caller's token did not reach Ironic")
	}
	if _, err := src.BaremetalNode(ctx, "00000000-0000-4000-8000-000000000000", ""); !errors.Is(err, nova.ErrBaremetalNodeNotFound) {
		t.Fatalf("unknown node: %v", err)
	}
	// Ironic's refusal of a forwarded token is the caller's: 403.
	if _, err := src.BaremetalNodes(ctx, "refused-token"); !errors.Is(err, core.ErrForbidden) {
		t.Fatalf("Ironic refused the caller's token: %v, want core.ErrForbidden", err)
	}
	// Without forwarding, the caller's token is not Ironic's business.
	noFwd := &baremetalSource{}
	noFwd.set(c)
	if _, err := noFwd.BaremetalNode(ctx, node, "corral-token"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["corral-token"] {
		t.Fatal("a corral token was sent to Ironic")
	}
}

// TestBaremetalSourceForwards: callers' tokens are forwarded only to a
// Keystone-protected Ironic (auth_type password), unless
// baremetal_proxy_auth = service.
func TestBaremetalSourceForwards(t *testing.T) {
	for _, c := range []struct {
		auth, proxy string
		want        bool
	}{
		{ironic.AuthPassword, proxyAuthUser, true},
		{ironic.AuthPassword, proxyAuthService, false},
		{ironic.AuthNone, proxyAuthUser, false},
		{ironic.AuthHTTPBasic, proxyAuthUser, false},
	} {
		if got := newBaremetalSource(ironicConfig{Auth: ironic.Auth{Type: c.auth}, ProxyAuth: c.proxy}).forward; got != c.want {
			t.Errorf("auth_type %s, baremetal_proxy_auth %s: forward %v, want %v", c.auth, c.proxy, got, c.want)
		}
	}
}
