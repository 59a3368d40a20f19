// Package security runs real corral agents with TLS and checks that a
// stranger on the network gets nothing from the cluster.
package security

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/e2e"
)

func ctx10() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// pki is a CA made with `corral tls ca create` in dir.
type pki struct {
	t   *testing.T
	bin string
	dir string
}

// newPKI creates a CA with the corral binary, as an operator would.
func newPKI(t *testing.T, bin string) *pki {
	t.Helper()
	p := &pki{t: t, bin: bin, dir: t.TempDir()}
	p.run("tls", "ca", "create", "--dir", p.dir)
	return p
}

func (p *pki) run(args ...string) {
	p.t.Helper()
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("corral %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (p *pki) ca() string { return filepath.Join(p.dir, "corral-agent-ca.pem") }

// cert makes NAME.pem and NAME-key.pem; ip is the peer's bind address
// (empty for a client certificate).
func (p *pki) cert(name, ip string) (cert, key string) {
	p.t.Helper()
	args := []string{"tls", "cert", "create", "--name", name}
	if ip == "" {
		args = append(args, "--client")
	} else {
		args = append(args, "--ip", ip)
	}
	p.run(args...)
	return filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem")
}

// agentEnv gives an agent its [tls] section through the environment.
func (p *pki) agentEnv(a *e2e.Agent) {
	cert, key := p.cert(a.Name, a.IP)
	a.Env = append(a.Env, "CORRAL_TLS_CA_FILE="+p.ca(), "CORRAL_TLS_CERT_FILE="+cert,
		"CORRAL_TLS_KEY_FILE="+key, "CORRAL_TLS_VERIFY_INCOMING=true")
}

// clientTLS is the configuration of a client holding a certificate named
// name from this CA.
func (p *pki) clientTLS(name string) *tls.Config {
	p.t.Helper()
	cert, key := p.cert(name, "")
	tc, err := client.TLSConfig(p.ca(), cert, key)
	if err != nil {
		p.t.Fatal(err)
	}
	return tc
}

// metric sums every sample of a metric in a's /metrics.
func metric(a *e2e.Agent, name string) (float64, error) {
	var text string
	ctx, cancel := ctx10()
	defer cancel()
	if err := a.Client().Do(ctx, http.MethodGet, "/metrics", nil, &text); err != nil {
		return 0, err
	}
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}

type member struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Raft   struct {
		Suffrage string `json:"suffrage"`
	} `json:"raft"`
}

func members(a *e2e.Agent) ([]member, error) {
	var out struct {
		Members []member `json:"members"`
	}
	ctx, cancel := ctx10()
	defer cancel()
	err := a.Client().Do(ctx, http.MethodGet, "/v1/cluster/members", nil, &out)
	return out.Members, err
}

type host struct {
	Name string `json:"name"`
}

func hosts(a *e2e.Agent) ([]host, error) {
	var out struct {
		Hosts []host `json:"hosts"`
	}
	ctx, cancel := ctx10()
	defer cancel()
	err := a.Client().Do(ctx, http.MethodGet, "/v1/hosts", nil, &out)
	return out.Hosts, err
}

type flavor struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func createFlavor(a *e2e.Agent, name string) error {
	ctx, cancel := ctx10()
	defer cancel()
	body := map[string]any{"flavor": map[string]any{"name": name, "vcpus": 1, "ram": 512, "disk": 1}}
	return a.Client().Do(ctx, http.MethodPost, "/compute/v2.1/flavors", body, nil)
}

func flavorNames(a *e2e.Agent) ([]string, error) {
	var out struct {
		Flavors []flavor `json:"flavors"`
	}
	ctx, cancel := ctx10()
	defer cancel()
	if err := a.Client().Do(ctx, http.MethodGet, "/compute/v2.1/flavors?consistency=stale", nil, &out); err != nil {
		return nil, err
	}
	var names []string
	for _, f := range out.Flavors {
		names = append(names, f.Name)
	}
	return names, nil
}
