package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/wire"
)

func serveLimited(t *testing.T, p *clustertest.Peer, cfg api.Config) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Tokens = map[string]core.Role{adminToken: core.RoleAdmin, readerToken: core.RoleReader}
	cfg.Peers = p.Node
	cfg.Logger, cfg.Registry, cfg.Gatherer = slog.New(slog.DiscardHandler), reg, reg
	srv, err := api.New(cfg, p.Node)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func TestBodyOverLimitIs413(t *testing.T) {
	p := startCluster(t, 1).Leader(10 * time.Second)
	ts := serveLimited(t, p, api.Config{Limits: core.Limits{MaxBodyBytes: 4096}})
	big := `{"flavor": {"name": "` + strings.Repeat("x", 8000) + `", "vcpus": 1, "ram": 1, "disk": 1}}`
	for _, path := range []string{computeBase + "/flavors", "/v1/hosts/h1/drain", wire.KeyringPath} {
		r := do(t, ts, "POST", path, adminToken, big, nil)
		if r.code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with %d bytes: %s", path, len(big), r)
		}
	}
	// Without a Content-Length the limit holds while reading.
	req, _ := http.NewRequest("POST", ts.URL+computeBase+"/flavors", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("X-Auth-Token", adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked body over the limit: %d", resp.StatusCode)
	}
	// A body under the limit goes through.
	if r := do(t, ts, "POST", computeBase+"/flavors", adminToken, `{"flavor": {"name": "small", "vcpus": 1, "ram": 1, "disk": 1}}`, nil); r.code != http.StatusOK {
		t.Fatalf("small body: %s", r)
	}
}

func TestWriteRateLimit(t *testing.T) {
	p := startCluster(t, 1).Leader(10 * time.Second)
	ts := serveLimited(t, p, api.Config{Limits: core.Limits{WriteRate: 0.5, WriteBurst: 2}})
	body := func(i int) string {
		return `{"flavor": {"name": "r` + strconv.Itoa(i) + `", "vcpus": 1, "ram": 1, "disk": 1}}`
	}
	for i := range 2 {
		if r := do(t, ts, "POST", computeBase+"/flavors", adminToken, body(i), nil); r.code != http.StatusOK {
			t.Fatalf("write %d within the burst: %s", i, r)
		}
	}
	r := do(t, ts, "POST", computeBase+"/flavors", adminToken, body(3), nil)
	if r.code != http.StatusTooManyRequests {
		t.Fatalf("write over the rate: %s", r)
	}
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// The refused write was not applied; reads are not limited.
	for range 5 {
		if r := do(t, ts, "GET", computeBase+"/flavors/detail", readerToken, "", nil); r.code != http.StatusOK {
			t.Fatalf("read after the limit: %s", r)
		}
	}
	if strings.Contains(string(do(t, ts, "GET", computeBase+"/flavors", readerToken, "", nil).body), `"r3"`) {
		t.Fatal("a refused write was applied")
	}
	if m := do(t, ts, "GET", "/metrics", "", "", nil); !strings.Contains(string(m.body), "corral_http_rate_limited_total 1") {
		t.Fatal("refusal not counted")
	}
}

func TestMetricsRequireAuth(t *testing.T) {
	p := startCluster(t, 1).Leader(10 * time.Second)
	open := serveLimited(t, p, api.Config{})
	if r := do(t, open, "GET", "/metrics", "", "", nil); r.code != http.StatusOK {
		t.Fatalf("public metrics: %s", r)
	}
	closed := serveLimited(t, p, api.Config{MetricsRequireAuth: true})
	if r := do(t, closed, "GET", "/metrics", "", "", nil); r.code != http.StatusUnauthorized {
		t.Fatalf("metrics without token: %d", r.code)
	}
	if r := do(t, closed, "GET", "/metrics", readerToken, "", nil); r.code != http.StatusOK || !strings.Contains(string(r.body), "corral_http_request_duration_seconds") {
		t.Fatalf("metrics with a reader token: %d", r.code)
	}
}
