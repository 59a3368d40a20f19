package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
)

var metricRE = regexp.MustCompile(`\bcorral_[a-z0-9_]+`)

// deployMetricNames returns every corral metric the dashboard and the
// alert rules name, by file.
func deployMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range []string{"../../deploy/grafana/corral.json", "../../deploy/prometheus/alerts.yml"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".json") {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		for _, m := range metricRE.FindAllString(string(raw), -1) {
			if !slices.Contains(out[f], m) {
				out[f] = append(out[f], m)
			}
		}
	}
	return out
}

// TestDeployMetricsExported starts an agent driving a simulated Ironic and
// checks that every metric the Grafana dashboard and the Prometheus rules
// name is one the agent exports (registered, or on /metrics).
func TestDeployMetricsExported(t *testing.T) {
	ir := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(ir.Close)
	cfg := defaultAgentConfig()
	cfg.Name, cfg.DataDir, cfg.Bind, cfg.BootstrapExpect = "metrics1", t.TempDir(), "127.0.0.1", 1
	cfg.AdminTokens = []string{"admin-token-metrics"}
	cfg.PeerToken = "peer-token-metrics-0123"
	cfg.Ironic.URL = ir.URL
	a, err := startTestAgent(t, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}

	named := deployMetricNames(t)
	total := 0
	for _, names := range named {
		total += len(names)
	}
	if total < 20 {
		t.Fatalf("only %d metric names found in the deploy files: %v", total, named)
	}
	// Drivers register their metrics as they start: poll until every name
	// is there or the deadline passes.
	var missing []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		exported := map[string]bool{}
		for _, n := range a.reg.Names() {
			exported[n] = true
		}
		if resp, err := http.Get("http://" + cfg.apiAddr() + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, m := range metricRE.FindAllString(string(body), -1) {
				exported[m] = true
			}
		}
		missing = missing[:0]
		for file, names := range named {
			for _, n := range names {
				base := n
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(n, suf); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] {
					missing = append(missing, file+": "+n)
				}
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // pacing the poll
	}
	if len(missing) > 0 {
		t.Fatalf("metrics named in the deploy files that the agent does not export:\n  %s", strings.Join(missing, "\n  "))
	}
}

// TestAlertRulesPassPromtool runs `promtool check rules` when promtool is
// installed (CI installs Debian's prometheus package).
func TestAlertRulesPassPromtool(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (apt-get install prometheus)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "check", "rules", filepath.Join("..", "..", "deploy", "prometheus", "alerts.yml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool: %s", out)
	}
}
