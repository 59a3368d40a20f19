package reaper

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/testkit/realneutron"
)

// realEnv is the env of the real Neutron (testkit/realneutron: without
// NEUTRON_ENV the test skips loudly, or fails in CI).
func realEnv(t *testing.T) map[string]string {
	t.Helper()
	return realneutron.Load(t, "the port reaper").All()
}

// only shows the reaper the ports this test made: the shared Neutron holds
// the ports of other tests, which a reaper fed a state of its own would
// take for orphans.
type only struct {
	*neutron.Client
	mu  sync.Mutex
	ids map[string]bool
}

func (o *only) add(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ids[id] = true
}

func (o *only) PortsDescribed(ctx context.Context, d string) ([]neutron.PortState, error) {
	all, err := o.Client.PortsDescribed(ctx, d)
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.DeleteFunc(all, func(p neutron.PortState) bool { return !o.ids[p.ID] }), err
}

func (o *only) guard(id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.ids[id] {
		return fmt.Errorf("the test's reaper reached port %s, not one of the test's", id)
	}
	return nil
}

func (o *only) DeletePortAtRevision(ctx context.Context, id string, rev int) error {
	if err := o.guard(id); err != nil {
		return err
	}
	return o.Client.DeletePortAtRevision(ctx, id, rev)
}

func (o *only) ReleasePortAtRevision(ctx context.Context, id string, rev int) (neutron.PortState, error) {
	if err := o.guard(id); err != nil {
		return neutron.PortState{}, err
	}
	return o.Client.ReleasePortAtRevision(ctx, id, rev)
}

func randomMAC(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", b[0], b[1], b[2])
}

// Against the real Neutron of scripts/neutron-up.sh, as corral's service
// user: Neutron's description filter finds the ports corral made; the
// leader deletes those of a deleted server once their grace is over,
// keeps the live server's, one of a server the cluster does not know
// (another cluster's) and one changed within its grace (its revision
// moved), and gives back a user's port still bound to the
// deleted server: no device, owner, host or profile, and a MAC of
// Neutron's instead of the NIC's.
func TestRealNeutronReaper(t *testing.T) {
	vars := realEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nc, err := neutron.New(neutron.Options{AuthType: neutron.AuthPassword, AuthURL: vars["OS_AUTH_URL"],
		Username: vars["CORRAL_SERVICE_USERNAME"], Password: vars["CORRAL_SERVICE_PASSWORD"],
		ProjectName: vars["SERVICE_PROJECT"], RegionName: "RegionOne", ValidInterfaces: "public"})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: vars["OS_AUTH_URL"],
		Username: vars["CORRAL_SERVICE_USERNAME"], Password: vars["CORRAL_SERVICE_PASSWORD"], DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: vars["SERVICE_PROJECT"], DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := openstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: "RegionOne", Availability: gophercloud.AvailabilityPublic})
	if err != nil {
		t.Fatal(err)
	}
	nt := &only{Client: nc, ids: map[string]bool{}}
	// create makes a port on the provider network bound to device, as
	// corral (description) or a user made it, with a NIC's MAC on a node.
	create := func(name, description, device string) neutron.PortState {
		t.Helper()
		opts := portsbinding.CreateOptsExt{CreateOptsBuilder: ports.CreateOpts{NetworkID: vars["NEUTRON_PROVIDER_NETWORK_ID"],
			Name: "reaper-" + name, Description: description, DeviceID: device, DeviceOwner: "compute:nova",
			MACAddress: randomMAC(t)}, VNICType: neutron.VNICBaremetal, HostID: "node-" + name,
			Profile: map[string]any{"local_link_information": []any{map[string]any{"switch_id": "aa:bb:cc:dd:ee:ff", "port_id": "Ethernet1/1"}}}}
		var p neutron.PortState
		if err := ports.Create(ctx, sc, opts).ExtractIntoStructPtr(&p, "port"); err != nil {
			t.Fatalf("creating port %s: %v", name, err)
		}
		t.Cleanup(func() { _ = nc.DeletePort(context.Background(), p.ID) })
		nt.add(p.ID)
		return p
	}

	c := newCluster(t)
	liveID, goneID, unknownID, changedID := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	user := create("user", "", goneID)
	c.boot(liveID, fsm.Network{UUID: vars["NEUTRON_PROVIDER_NETWORK_ID"]})
	c.boot(goneID, fsm.Network{UUID: vars["NEUTRON_PROVIDER_NETWORK_ID"]}, fsm.Network{Port: user.ID})
	c.remove(goneID, t0.Add(time.Minute))
	c.boot(changedID)
	c.remove(changedID, t0.Add(time.Minute))
	pLive := create("live", neutron.CreatedByCorral, liveID)
	c.apply(&fsm.RecordServerPort{ID: liveID, Host: "h1", Epoch: 1,
		Port: fsm.ServerPort{ID: pLive.ID, NetworkID: vars["NEUTRON_PROVIDER_NETWORK_ID"]}})
	pGone := create("gone", neutron.CreatedByCorral, goneID)
	pUnknown := create("unknown", neutron.CreatedByCorral, unknownID)
	pChanged := create("changed", neutron.CreatedByCorral, changedID)
	if pGone.Description != neutron.CreatedByCorral || pGone.RevisionNumber < 1 || pGone.CreatedAt.IsZero() {
		t.Fatalf("created port %+v: no description, revision or created_at", pGone)
	}

	clk := &clock{t: time.Now().UTC()}
	reg := prometheus.NewRegistry()
	r, err := New(c, nt, Config{Grace: grace, Registerer: reg, Now: clk.now,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(r.seen); got != 3 {
		t.Fatalf("%d ports seen orphaned, want 3 (gone, changed, the user's): %+v", got, r.seen)
	}
	newName := "reaper-changed-renamed"
	if _, err := nc.UpdatePort(ctx, pChanged.ID, neutron.PortUpdate{Name: &newName}); err != nil {
		t.Fatal(err)
	}
	clk.advance(grace)
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []neutron.PortState{pGone} {
		if _, err := nc.PortState(ctx, p.ID); !errors.Is(err, neutron.ErrNotFound) {
			t.Errorf("port %s (server %s) after its grace: %v, want deleted", p.Name, p.DeviceID, err)
		}
	}
	for _, p := range []neutron.PortState{pLive, pUnknown, pChanged} {
		if got, err := nc.PortState(ctx, p.ID); err != nil || got.DeviceID != p.DeviceID {
			t.Errorf("port %s: %+v, %v; want it kept", p.Name, got, err)
		}
	}
	got, err := nc.PortState(ctx, user.ID)
	if err != nil {
		t.Fatalf("the user's port: %v", err)
	}
	if got.DeviceID != "" || got.DeviceOwner != "" || got.HostID != "" || len(got.Profile) != 0 ||
		got.MACAddress == user.MACAddress || !strings.HasPrefix(got.MACAddress, "fa:16:3e") || got.VIFType != "unbound" {
		t.Errorf("the user's port was not given back: %+v (MAC before %s)", got, user.MACAddress)
	}
	for _, l := range []struct {
		action, reason string
		want           float64
	}{{ActionDelete, ReasonDeleted, 1}, {ActionRelease, ReasonDeleted, 1}} {
		if n := (&env{reg: reg}).reaped(t, l.action, l.reason); n != l.want {
			t.Errorf("reaped{%s, %s} = %v, want %v", l.action, l.reason, n, l.want)
		}
	}
}
