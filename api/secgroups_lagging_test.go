package api_test

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/wire"
)

// addSecurityGroup and removeSecurityGroup wait for the owner in the
// replica of the peer that took them: taken by a peer whose replica lags
// the leader (a follower), the action is answered once that replica has
// applied the request and then the owner's outcome (202), not 500 "the
// request was dropped" because the replica did not hold the request yet.
func TestSecurityGroupActionThroughALaggingReplica(t *testing.T) {
	const (
		node   = "6fae68da-108b-4a9d-87c4-0000000000d1"
		server = "a1b2c3d4-0000-4000-8000-0000000000d1"
		netA   = "0a000000-0000-4000-8000-0000000000d1"
		port   = "0b000000-0000-4000-8000-0000000000d1"
		sgDef  = "5e000000-0000-4000-8000-0000000000d1"
		sgWeb  = "5e000000-0000-4000-8000-0000000000d2"
	)
	l := newLaggingCluster(false)
	nt := &lockedNetworks{fakeNetworks: fakeNetworks{
		nets:  map[string]neutron.Network{netA: {ID: netA, Name: "provider", Shared: true}},
		ports: map[string]neutron.Port{port: {ID: port, NetworkID: netA, ProjectID: "p1", DeviceID: server}},
		groups: []neutron.SecurityGroup{{ID: sgDef, Name: "default", ProjectID: "p1"},
			{ID: sgWeb, Name: "web", ProjectID: "p1"}},
	}}
	srv, err := api.New(api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin}, Keystone: projectTokens{},
		Networks: nt, Logger: slog.New(slog.DiscardHandler)}, l)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	l.propose(t, &fsm.RegisterHost{Name: "h1", Kind: fsm.KindIronic})
	for _, f := range slices.Sorted(maps.Keys(fsm.FeatureCommands)) {
		l.propose(t, &fsm.EnableFeature{Name: f})
	}
	l.propose(t, &fsm.SyncNodes{Upserts: []fsm.Node{{UUID: node, ResourceClass: "baremetal", ProvisionState: "active",
		InstanceUUID: server, AllocationUUID: server}}})
	adopt := `{"id": "` + server + `", "name": "db-1", "image_ref": "img", "node_uuid": "` + node + `", "allocation_uuid": "` + server + `",
		"project_id": "p1", "user_id": "u-p1", "flavor": {"id": "bm", "name": "bm", "vcpus": 1, "ram": 1, "disk": 1}}`
	if r := do(t, ts, http.MethodPost, wire.AdoptServerPath, adminToken, adopt, nil); r.code != http.StatusCreated {
		t.Fatalf("adopt: %s", r)
	}
	l.catchUp()
	s, err := l.leader.Server(server)
	if err != nil || s.Host == "" {
		t.Fatalf("adopted server %+v, %v", s, err)
	}
	def := []fsm.SecurityGroupRef{{ID: sgDef, Name: "default"}}
	l.propose(t, &fsm.RecordServerPort{ID: server, Host: s.Host, Epoch: s.Epoch,
		Port: fsm.ServerPort{ID: port, NetworkID: netA, SecurityGroups: def, GroupsKnown: true}})

	// The owner, played: once this peer's replica holds a request, it
	// commits the outcome, and the replica catches up with the leader
	// some time after, as a follower's does.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for ctx.Err() == nil {
			idx := l.local.AppliedIndex()
			if req := l.local.ServerNet(server).SecurityGroup; req != nil && !req.Done {
				groups := def
				if req.Kind == fsm.ActionAddSecurityGroup {
					groups = append(slices.Clone(def), req.Group)
				}
				_, _ = l.ProposeCommitted(ctx, &fsm.FinishSecurityGroupAction{ID: server, Host: s.Host, Epoch: s.Epoch,
					Kind: req.Kind, RequestedAt: req.RequestedAt, Ports: []fsm.PortSecurityGroups{{PortID: port, Groups: groups}}})
				l.catchUp()
			}
			wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			_ = l.local.WaitApplied(wctx, idx+1)
			cancel()
		}
	}()

	r := do(t, ts, http.MethodPost, computeBase+"/servers/"+server+"/action", adminToken, `{"addSecurityGroup": {"name": "web"}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("addSecurityGroup through a lagging replica: %s, want 202", r)
	}
	if got := l.local.ServerNet(server).Ports[0].SecurityGroups; len(got) != 2 || got[1].ID != sgWeb {
		t.Fatalf("the replica that answered holds groups %+v, want default and web", got)
	}
}
