package security

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit"
)

// startTLS starts n agents on 127.0.0.base.. with certificates from p,
// [tls] verify_incoming on and the gossip key.
func startTLS(t *testing.T, p *pki, n, base int, key string) *e2e.Cluster {
	t.Helper()
	return e2e.StartWith(t, n, e2e.Options{BaseIP: base, TLS: p.clientTLS(fmt.Sprintf("cli-%d", base)), Env: []string{"CORRAL_GOSSIP_ENCRYPT=" + key}},
		func(_ int, a *e2e.Agent) { p.agentEnv(a) })
}

func names[T any](xs []T, name func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, name(x))
	}
	sort.Strings(out)
	return out
}

// TestTLSClusterRefusesStranger: three agents with TLS and gossip
// encryption elect a leader, forward a write from a follower to the leader
// over HTTPS, list their keyrings over HTTPS (`corral keyring list` with
// CORRAL_CACERT and a client certificate), and refuse a fourth agent that
// holds the gossip key but a certificate another CA signed: it shows up in
// gossip but never in raft nor in the host list, gets none of the state
// and cannot write; the API refuses plain HTTP, clients without a
// certificate and clients with a stranger's one.
func TestTLSClusterRefusesStranger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := e2e.Binary(t)
	p := newPKI(t, bin)
	key := keygen(t, bin)
	c := startTLS(t, p, 3, 2, key)
	c.AwaitReady(45 * time.Second)
	leader := c.Leader(15 * time.Second)
	var follower *e2e.Agent
	for _, a := range c.Agents {
		if a != leader {
			follower = a
			break
		}
	}
	testkit.Eventually(t, 20*time.Second, func() error { return createFlavor(follower, "through-follower") })
	for _, a := range c.Agents {
		testkit.Eventually(t, 10*time.Second, func() error {
			fl, err := flavorNames(a)
			if err != nil || !slices.Contains(fl, "through-follower") {
				return fmt.Errorf("%s flavors %v: %v", a.Name, fl, err)
			}
			return nil
		})
	}

	// The keyring of every member, fetched over HTTPS with mutual TLS.
	cliCert, cliKey := p.cert("operator", "")
	cmd := exec.Command(bin, "keyring", "list", "-f", "json")
	cmd.Env = []string{"CORRAL_ADDR=" + follower.URL(), "CORRAL_TOKEN=" + c.Token, "CORRAL_CACERT=" + p.ca(),
		"CORRAL_CLIENT_CERT=" + cliCert, "CORRAL_CLIENT_KEY=" + cliKey}
	out, err := cmd.Output()
	if err != nil || strings.Count(string(out), key) != 6 {
		t.Fatalf("keyring list over TLS: %v\n%s", err, out)
	}

	// The API: HTTPS only, with a client certificate from the CA.
	plain := client.New(fmt.Sprintf("http://%s:%d", leader.IP, leader.HTTPPort), c.Token)
	ctx, cancel := ctx10()
	defer cancel()
	if err := plain.Do(ctx, http.MethodGet, "/v1/cluster/raft", nil, nil); err == nil {
		t.Fatal("the API answered plain HTTP")
	}
	noCert := client.New(leader.URL(), c.Token)
	caOnly, err := client.TLSConfig(p.ca(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	_ = noCert.UseTLS(caOnly)
	if err := noCert.Do(ctx, http.MethodGet, "/v1/cluster/raft", nil, nil); err == nil {
		t.Fatal("the API (verify_incoming) answered a client without a certificate")
	}

	// A stranger: same binary, certificates from its own CA, joins gossip.
	sp := newPKI(t, bin)
	strangerTLS := sp.clientTLS("stranger-cli")
	wrongCert := client.New(leader.URL(), c.Token)
	mixed := strangerTLS.Clone()
	mixed.RootCAs = caOnly.RootCAs // trusts the cluster, but holds a stranger's certificate
	_ = wrongCert.UseTLS(mixed)
	if err := wrongCert.Do(ctx, http.MethodGet, "/v1/cluster/raft", nil, nil); err == nil {
		t.Fatal("the API answered a client whose certificate another CA signed")
	}
	// It means to join (bootstrap_expect 0): to it the cluster's peers are
	// strangers too, so with bootstrap_expect 1 it would lead a cluster of
	// its own, apart from this one.
	s := e2e.StartWith(t, 1, e2e.Options{BaseIP: 9, TLS: strangerTLS, ExtraArgs: []string{"--join", c.Agents[0].GossipAddr(), "--bootstrap-expect", "0"},
		Env: []string{"CORRAL_GOSSIP_ENCRYPT=" + key}},
		func(_ int, a *e2e.Agent) { a.Name = "stranger"; sp.agentEnv(a) })
	stranger := s.Agents[0]

	// The leader sees it in gossip and refuses it.
	testkit.Eventually(t, 30*time.Second, func() error {
		ms, err := members(leader)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(ms, func(m member) bool { return m.Name == "stranger" && m.Status == "alive" }) {
			return fmt.Errorf("stranger not alive in gossip: %+v", ms)
		}
		v, err := metric(leader, "corral_admission_refused_total")
		if err != nil || v < 1 {
			return fmt.Errorf("admission refusals %v: %v", v, err)
		}
		return nil
	})
	// A few reconcile rounds later nothing has changed.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		st, err := leader.Raft(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := append(slices.Clone(st.Voters), st.Nonvoters...); len(got) != 3 || slices.Contains(got, "stranger") {
			t.Fatalf("raft configuration changed: voters %v non-voters %v", st.Voters, st.Nonvoters)
		}
		hs, err := hosts(leader)
		if err != nil {
			t.Fatal(err)
		}
		if hn := names(hs, func(h host) string { return h.Name }); !slices.Equal(hn, []string{"peer1", "peer2", "peer3"}) {
			t.Fatalf("hosts %v", hn)
		}
		time.Sleep(200 * time.Millisecond) // pacing the observation window
	}
	// The stranger has no state and cannot write.
	fl, err := flavorNames(stranger)
	if err != nil {
		t.Fatalf("stranger's own API: %v", err)
	}
	if len(fl) != 0 {
		t.Fatalf("stranger got state: flavors %v", fl)
	}
	if err := createFlavor(stranger, "from-stranger"); err == nil {
		t.Fatal("a write through the stranger was accepted")
	}
	fl, err = flavorNames(leader)
	if err != nil || slices.Contains(fl, "from-stranger") {
		t.Fatalf("cluster flavors %v: %v", fl, err)
	}
}
