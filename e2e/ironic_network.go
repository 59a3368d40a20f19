package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"

	"github.com/corral-dev/corral/ironic/contract"
)

// KeystoneIronic is the Keystone-protected Ironic at url (scripts/openstack-up.sh),
// driven as the logged-in user of pc (e.g. corral's service user) with
// the baremetal endpoint of Keystone's catalog. Its node names and
// resource classes start with prefix and random hex.
func KeystoneIronic(t testing.TB, url string, pc *gophercloud.ProviderClient, prefix string) *Ironic {
	t.Helper()
	env, err := contract.NewEnv(url, true)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := openstack.NewBareMetalV1(pc, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatalf("baremetal endpoint in Keystone's catalog: %v", err)
	}
	sc.Microversion = contract.Microversion
	env.Client = sc
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	env.Prefix = prefix + hex.EncodeToString(b)
	return &Ironic{URL: env.Root, Real: true, Env: env}
}

// NIC is the one network card EnrollNetworkNodes gives a node: an Ironic
// port with a MAC, a physical network and the switch port it is cabled to.
type NIC struct {
	MAC     string
	Physnet string
	// Agent: the node's UUID is one Neutron has a (networking-baremetal)
	// agent for, so its ports bind.
	Agent bool
}

// EnrollNetworkNodes enrolls n available nodes of the resource class, as
// EnrollNodes does on a real Ironic, each with network_interface iface
// (e.g. flat) and one NIC on physnet with a unique MAC and a
// local_link_connection; it returns the nodes' NICs by node UUID. The
// nodes take the UUIDs of agentHosts that no node in Ironic has, in
// order (one another test took since is passed over), then random ones.
// They are enrolled by four clients at once.
func (ir *Ironic) EnrollNetworkNodes(t testing.TB, n int, class, iface, physnet string, agentHosts []string) map[string]NIC {
	t.Helper()
	return ir.StartEnrollNetworkNodes(t, n, class, iface, physnet, agentHosts)()
}

// StartEnrollNetworkNodes is EnrollNetworkNodes in the background, so that
// a test starts its agents meanwhile: it returns the wait for the nodes,
// to be called from the test's goroutine, which fails the test when the
// enrollment failed. The nodes are deleted when the test ends.
func (ir *Ironic) StartEnrollNetworkNodes(t testing.TB, n int, class, iface, physnet string, agentHosts []string) func() map[string]NIC {
	t.Helper()
	if ir.Sim != nil {
		t.Fatal("EnrollNetworkNodes needs a real Ironic")
	}
	var poolMu sync.Mutex
	pool := slices.Clone(agentHosts)
	next := func() string {
		poolMu.Lock()
		defer poolMu.Unlock()
		if len(pool) == 0 {
			return ""
		}
		h := pool[0]
		pool = pool[1:]
		return h
	}
	ir.mu.Lock()
	first := ir.seq
	ir.seq += n
	ir.mu.Unlock()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	specs := make([]contract.NodeSpec, n)
	macs := make([]string, n)
	for i := range specs {
		// 52:54:00 is QEMU's prefix: a NIC MAC no Neutron port gets by itself (fa:16:3e).
		macs[i] = fmt.Sprintf("52:54:00:%02x:%02x:%02x", b[0], b[1], byte(first+i))
		specs[i] = contract.NodeSpec{UUIDs: next, Name: fmt.Sprintf("%s-%s-%d", ir.Env.Prefix, strings.TrimPrefix(class, ir.Env.Prefix+"-"), first+i),
			ResourceClass: class, NetworkInterface: iface, Ports: []ports.CreateOpts{{Address: macs[i], PhysicalNetwork: physnet,
				LocalLinkConnection: map[string]any{"switch_id": fmt.Sprintf("aa:bb:cc:%02x:%02x:%02x", b[0], b[1], b[2]),
					"port_id": fmt.Sprintf("Ethernet1/%d", first+i+1), "switch_info": "e2e-switch"}}}}
	}
	const clients = 4
	ids := make([]string, n)
	errs := make([]error, clients)
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		for c := range clients {
			lo, hi := c*n/clients, (c+1)*n/clients
			if lo == hi {
				continue
			}
			wg.Go(func() {
				got, err := ir.Env.Enroll(ctx, specs[lo:hi]...)
				copy(ids[lo:hi], got)
				errs[c] = err
			})
		}
		wg.Wait()
	}()
	t.Cleanup(func() {
		<-done
		var enrolled []string
		for _, id := range ids {
			if id != "" {
				enrolled = append(enrolled, id)
			}
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer ccancel()
		ir.Env.Cleanup(cctx, []string{class}, enrolled)
	})
	return func() map[string]NIC {
		t.Helper()
		<-done
		for _, err := range errs {
			if err != nil {
				t.Fatalf("enroll %d nodes of %s with network interface %s: %v", n, class, iface, err)
			}
		}
		out := make(map[string]NIC, n)
		agents := 0
		for i, id := range ids {
			out[id] = NIC{MAC: macs[i], Physnet: physnet, Agent: slices.Contains(agentHosts, id)}
			if out[id].Agent {
				agents++
			}
		}
		t.Logf("enrolled %d %s nodes with a NIC each in %s", n, iface, time.Since(began).Round(time.Millisecond))
		if agents < n {
			t.Logf("%d of the %d nodes have a Neutron agent (%d agent hosts, the others taken): the others' ports end in binding_failed",
				agents, n, len(agentHosts))
		}
		return out
	}
}

// VIFs lists the VIFs (Neutron port ids) Ironic has attached to the node:
// the tenant_vif_port_id of its ports, which is what Ironic's VIF list of
// a flat or neutron node answers. Read from the ports, not through that
// list: Ironic validates the node's network interface before it lists,
// which asks Neutron for the cleaning network, and the tests' checks
// would add that to what they measure.
func (ir *Ironic) VIFs(ctx context.Context, node string) ([]string, error) {
	pages, err := ports.ListDetail(ir.Env.Client, ports.ListOpts{Node: node}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("ports of node %s: %w", node, err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, fmt.Errorf("ports of node %s: %w", node, err)
	}
	var out []string
	for _, p := range ps {
		if vif, _ := p.InternalInfo["tenant_vif_port_id"].(string); vif != "" {
			out = append(out, vif)
		}
	}
	return out, nil
}
