package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/auth/keystone"
)

// authBench is an API with Keystone on, and a way to get a fresh Keystone token and to count the
// validations Keystone answered.
type authBench struct {
	ts          *httptest.Server
	keystone    string // "real Keystone at ..." or "fake Keystone"
	newToken    func(t *testing.T) string
	validations func() float64
}

// newAuthBench uses the real Keystone of scripts/openstack-up.sh when its env file is exported
// (alice's tokens, the corral service user), else a fake Keystone.
func newAuthBench(t *testing.T) *authBench {
	t.Helper()
	authURL := os.Getenv("OS_AUTH_URL")
	if authURL == "" || os.Getenv("ALICE_USERNAME") == "" {
		e := newKeystoneEnv(t, time.Hour)
		var n atomic.Int64
		return &authBench{ts: e.ts, keystone: "fake Keystone (httptest)",
			newToken: func(*testing.T) string {
				tok := "gAAAAA-bench-" + strconv.FormatInt(n.Add(1), 10)
				e.ks.issue(tok, "alice", "demo-a", "member", "reader")
				return tok
			},
			validations: func() float64 { return float64(e.ks.validates.Load()) }}
	}
	reg := prometheus.NewRegistry()
	v, err := keystone.New(keystone.Options{AuthURL: authURL, Username: os.Getenv("CORRAL_SERVICE_USERNAME"),
		Password: os.Getenv("CORRAL_SERVICE_PASSWORD"), ProjectName: os.Getenv("SERVICE_PROJECT"),
		TokenCacheTime: time.Hour}, reg, keystone.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	h := startCluster(t, 1)
	p := h.Leader(10 * time.Second)
	srv, err := api.New(api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin}, Keystone: v,
		Registry: p.Registry, Gatherer: p.Registry, Logger: slog.New(slog.DiscardHandler)}, p.Node)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	(&env{t: t, h: h, peer: p, ts: ts}).waitReady()
	return &authBench{ts: ts, keystone: "real Keystone at " + authURL,
		newToken: func(t *testing.T) string {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: authURL,
				Username: os.Getenv("ALICE_USERNAME"), Password: os.Getenv("ALICE_PASSWORD"), DomainName: "Default",
				Scope: &gophercloud.AuthScope{ProjectName: os.Getenv("ALICE_PROJECT"), DomainName: "Default"}})
			if err != nil {
				t.Fatalf("alice's token: %v", err)
			}
			return pc.Token()
		},
		validations: func() float64 {
			mfs, _ := reg.Gather()
			total := 0.0
			for _, mf := range mfs {
				if mf.GetName() != "corral_keystone_requests_total" {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "call" && l.GetValue() == "validate" {
							total += m.GetCounter().GetValue()
						}
					}
				}
			}
			return total
		}}
}

func benchEnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// load sends GET path with the token from clients goroutines for d and returns requests per second.
func load(t *testing.T, hc *http.Client, url, token string, clients int, d time.Duration) float64 {
	t.Helper()
	var n, bad atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("X-Auth-Token", token)
				resp, err := hc.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
					continue
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d requests failed", bad.Load())
	}
	return float64(n.Load()) / d.Seconds()
}

// loadInProcess is load without the network: requests go straight to the handler, so that the
// authentication's share of each request is larger than over HTTP.
func loadInProcess(t *testing.T, h http.Handler, path, token string, clients int, d time.Duration) float64 {
	t.Helper()
	var n, bad atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("X-Auth-Token", token)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					bad.Add(1)
					continue
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d in-process requests failed", bad.Load())
	}
	return float64(n.Load()) / d.Seconds()
}

// TestBenchAuth (make bench-auth; CORRAL_BENCH=1) measures what Keystone costs the API: reads per
// second with a Keystone token (validated once, then cached) ÷ the same load with a static token,
// in interleaved rounds of the same run (goal ≥ 0.9), and checks that a cold token carried by many
// concurrent requests costs one Keystone validation. It prints; the goal is not asserted.
func TestBenchAuth(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("CORRAL_BENCH=1 runs the benchmark (make bench-auth)")
	}
	b := newAuthBench(t)
	clients := benchEnvInt("CORRAL_BENCH_AUTH_CLIENTS", 8)
	rounds := benchEnvInt("CORRAL_BENCH_AUTH_ROUNDS", 10)
	d := time.Duration(benchEnvInt("CORRAL_BENCH_AUTH_SECONDS", 2)) * time.Second
	burst := benchEnvInt("CORRAL_BENCH_AUTH_BURST", 64)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2}}
	url := b.ts.URL + computeBase + "/servers"
	ksToken := b.newToken(t)
	load(t, hc, url, ksToken, clients, 200*time.Millisecond) // warm: the token is validated and cached
	load(t, hc, url, adminToken, clients, 200*time.Millisecond)
	var staticSum, ksSum float64
	t.Logf("%s; %d clients, %d rounds of %s each, GET %s", b.keystone, clients, rounds, d, computeBase+"/servers")
	for r := range rounds {
		// Alternate which goes first, so that a drift of the machine's load cancels out.
		var s, k float64
		if r%2 == 0 {
			s, k = load(t, hc, url, adminToken, clients, d), load(t, hc, url, ksToken, clients, d)
		} else {
			k, s = load(t, hc, url, ksToken, clients, d), load(t, hc, url, adminToken, clients, d)
		}
		staticSum += s
		ksSum += k
		t.Logf("round %d: static %.0f req/s, keystone %.0f req/s, ratio %.3f", r+1, s, k, k/s)
	}
	t.Logf("RESULT over HTTP reads/s static %.0f, keystone (cached) %.0f, ratio %.3f (goal >= 0.9)",
		staticSum/float64(rounds), ksSum/float64(rounds), ksSum/staticSum)

	// The same without the network.
	h := b.ts.Config.Handler
	staticSum, ksSum = 0, 0
	for r := range rounds {
		var s, k float64
		if r%2 == 0 {
			s, k = loadInProcess(t, h, computeBase+"/servers", adminToken, clients, d), loadInProcess(t, h, computeBase+"/servers", ksToken, clients, d)
		} else {
			k, s = loadInProcess(t, h, computeBase+"/servers", ksToken, clients, d), loadInProcess(t, h, computeBase+"/servers", adminToken, clients, d)
		}
		staticSum += s
		ksSum += k
		t.Logf("in-process round %d: static %.0f req/s, keystone %.0f req/s, ratio %.3f", r+1, s, k, k/s)
	}
	t.Logf("RESULT in-process reads/s static %.0f, keystone (cached) %.0f, ratio %.3f (goal >= 0.9)",
		staticSum/float64(rounds), ksSum/float64(rounds), ksSum/staticSum)

	// A cold token carried by burst concurrent requests: one validation.
	cold := b.newToken(t)
	before := b.validations()
	start := make(chan struct{})
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range burst {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("X-Auth-Token", cold)
			resp, err := hc.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				bad.Add(1)
			}
			if err == nil {
				_ = resp.Body.Close()
			}
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	calls := b.validations() - before
	t.Logf("RESULT cold token, %d concurrent requests: %.0f Keystone validation(s), all answered in %s",
		burst, calls, time.Since(t0).Round(time.Millisecond))
	if bad.Load() > 0 {
		t.Errorf("%d of the cold-token requests failed", bad.Load())
	}
	if calls != 1 {
		t.Errorf("a cold token carried by %d concurrent requests cost %.0f validations, want 1", burst, calls)
	}
}
