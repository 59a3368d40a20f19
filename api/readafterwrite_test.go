package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/glance"
	"github.com/corral-dev/corral/wire"
)

// laggingCluster is a core.Cluster whose own replica (Store) lags its
// leader's, as a follower's does: a write is decided and applied on the
// leader's store when it is proposed, and on this peer's only when
// AwaitApplied or a read barrier above stale asks for it. With eager, this
// peer applies every write at once, as the leader itself does. Every entry
// is stamped with the same clock, so that two such clusters given the same
// requests answer the same.
type laggingCluster struct {
	mu            sync.Mutex
	leader, local *fsm.Store
	log           [][]byte // the entry at index i is log[i-1]
	eager         bool
}

func newLaggingCluster(eager bool) *laggingCluster {
	return &laggingCluster{leader: fsm.New(), local: fsm.New(), eager: eager}
}

var laggingEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (l *laggingCluster) Name() string      { return "h1" }
func (l *laggingCluster) Store() *fsm.Store { return l.local }

func (l *laggingCluster) ProposeCommitted(_ context.Context, cmd fsm.Command) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.leader.Schedule(cmd, nil); ok {
		cmd = d.Command
	}
	idx := uint64(len(l.log) + 1)
	cmd.Header().At, cmd.Header().Bounded = laggingEpoch.Add(time.Duration(idx)*time.Second), true
	data, err := fsm.EncodeAs(cmd, fsm.EncodingMsgpack)
	if err != nil {
		return 0, err
	}
	l.log = append(l.log, data)
	err = l.leader.Apply(idx, data).Err
	if l.eager {
		l.applyThrough(idx)
	}
	return idx, err
}

// applyThrough applies this peer's replica up to idx (l.mu held).
func (l *laggingCluster) applyThrough(idx uint64) {
	for i := l.local.AppliedIndex() + 1; i <= idx; i++ {
		l.local.Apply(i, l.log[i-1])
	}
}

// catchUp applies every entry to this peer's replica.
func (l *laggingCluster) catchUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applyThrough(uint64(len(l.log)))
}

// lags reports whether this peer's replica misses entries the leader applied.
func (l *laggingCluster) lags() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.local.AppliedIndex() < uint64(len(l.log))
}

func (l *laggingCluster) AwaitApplied(_ context.Context, idx uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applyThrough(idx)
	return nil
}

func (l *laggingCluster) ReadBarrier(_ context.Context, c cluster.Consistency) error {
	if c != cluster.Stale {
		l.catchUp()
	}
	return nil
}

func (l *laggingCluster) ApplyForwarded(context.Context, []byte) (uint64, error) {
	return 0, cluster.ErrNotLeader
}
func (l *laggingCluster) ReadIndex(context.Context, bool) (uint64, error) {
	return 0, cluster.ErrNotLeader
}
func (l *laggingCluster) Members() []cluster.Member      { return nil }
func (l *laggingCluster) RaftStatus() cluster.RaftStatus { return cluster.RaftStatus{} }
func (l *laggingCluster) Ready() []cluster.Check         { return nil }
func (l *laggingCluster) CommandKnown(fsm.CommandType) bool {
	return true
}

// propose commits cmd and brings this peer's replica up to date.
func (l *laggingCluster) propose(t *testing.T, cmd fsm.Command) {
	t.Helper()
	if _, err := l.ProposeCommitted(context.Background(), cmd); err != nil {
		t.Fatalf("%s: %v", cmd.Type(), err)
	}
	l.catchUp()
}

// projectTokens is a Keystone of fixed tokens: a member of project p1,
// one of p2.
type projectTokens struct{}

const (
	memberP1 = "member-of-p1"
	memberP2 = "member-of-p2"
)

func (projectTokens) Validate(_ context.Context, token string) (keystone.Identity, error) {
	switch token {
	case memberP1, memberP2:
		p := strings.TrimPrefix(token, "member-of-")
		return keystone.Identity{UserID: "u-" + p, UserName: "u-" + p, ProjectID: p, ProjectName: p,
			Roles: []string{"member", "reader"}, ExpiresAt: time.Now().Add(time.Hour)}, nil
	}
	return keystone.Identity{}, fmt.Errorf("%w: unknown token", keystone.ErrInvalidToken)
}
func (projectTokens) WWWAuthenticate() string { return `Keystone uri="http://keystone.test"` }

// serveLagging serves the API of l, with Glance's fake images when images.
func serveLagging(t *testing.T, l *laggingCluster, images bool) *httptest.Server {
	t.Helper()
	cfg := api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin, readerToken: core.RoleReader},
		Keystone: projectTokens{}, Logger: slog.New(slog.DiscardHandler)}
	if images {
		gc, err := glance.New(fakeGlance(t).URL, nil, glance.WithServiceToken(staticSource(glanceServiceToken)))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Images = gc
	}
	srv, err := api.New(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// README's "Writes and the reads after them": a write whose answer shows
// what it left in the replica of the peer that took it is answered once
// that peer has applied it, and then answers the same as on a peer that
// applies every write at once; a creation answered from the request
// itself, and a deletion, do not wait for this peer. Writes sent one
// after the other through a peer whose replica lags them all (each
// checking what the ones before it left) are answered the same too.
func TestWritesAnsweredFromTheReplicaWaitForIt(t *testing.T) {
	const node1, node2 = "6fae68da-108b-4a9d-87c4-000000000001", "6fae68da-108b-4a9d-87c4-000000000002"
	const inst = "a1b2c3d4-0000-4000-8000-000000000001"
	type write struct {
		name, method, path, body string
		hdr                      map[string]string
		code                     int
		waits                    bool // answered from this peer's replica: it applies the write first
		drawn                    bool // the answer holds ids drawn by the request: not compared
	}
	adopt := `{"id": "` + inst + `", "name": "db-1", "image_ref": "http://images/db.qcow2", "node_uuid": "` + node1 + `",
		"allocation_uuid": "` + inst + `", "project_id": "p1", "user_id": "u1",
		"flavor": {"id": "bm.small", "name": "baremetal.small", "vcpus": 16, "ram": 65536, "disk": 100,
			"extra_specs": {"resources:CUSTOM_BAREMETAL": "1", "resources:VCPU": "0"}}}`
	server := computeBase + "/servers/" + inst
	writes := []write{
		{"create flavor", http.MethodPost, computeBase + "/flavors", `{"flavor": {"id": "g", "name": "g", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 200, false, false},
		{"private flavor", http.MethodPost, computeBase + "/flavors", `{"flavor": {"id": "priv", "name": "priv", "ram": 1, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": false}}`, nil, 200, false, false},
		{"flavor access", http.MethodPost, computeBase + "/flavors/priv/action", `{"addTenantAccess": {"tenant": "p2"}}`, nil, 200, true, false},
		{"flavor description", http.MethodPut, computeBase + "/flavors/g", `{"flavor": {"description": "d"}}`, mv("2.55"), 200, true, false},
		{"extra specs", http.MethodPost, computeBase + "/flavors/g/os-extra_specs", `{"extra_specs": {"k": "v"}}`, nil, 200, false, false},
		{"boot", http.MethodPost, computeBase + "/servers", `{"server": {"name": "a", "imageRef": "img", "flavorRef": "g", "adminPass": "pw"}}`, nil, 202, false, true},
		{"boot of two", http.MethodPost, computeBase + "/servers", `{"server": {"name": "b", "imageRef": "img", "flavorRef": "g", "adminPass": "pw", "min_count": 2, "max_count": 2}}`, nil, 202, true, true},
		{"delete flavor", http.MethodDelete, computeBase + "/flavors/g", ``, nil, 202, false, false},
		{"adopt", http.MethodPost, wire.AdoptServerPath, adopt, nil, 201, true, false},
		{"metadata", http.MethodPost, server + "/metadata", `{"metadata": {"b": "2"}}`, nil, 200, true, false},
		{"metadata item", http.MethodPut, server + "/metadata/c", `{"meta": {"c": "3"}}`, nil, 200, true, false},
		{"tags", http.MethodPut, server + "/tags", `{"tags": ["x", "y"]}`, mv("2.26"), 200, true, false},
		{"tag", http.MethodPut, server + "/tags/z", ``, mv("2.26"), 201, true, false},
		{"rename", http.MethodPut, server, `{"server": {"name": "renamed"}}`, nil, 200, true, false},
		{"move", http.MethodPost, wire.MovePath(inst), `{"host": "OTHER"}`, nil, 200, true, false},
		{"flavor migration", http.MethodPost, wire.FlavorMigrationPath, `{"resource_class": "baremetal", "server_ids": ["` + inst + `"]}`, nil, 200, true, false},
		{"rebuild", http.MethodPost, server + "/action", `{"rebuild": {"imageRef": "http://images/b.qcow2", "name": "rebuilt", "adminPass": "pw"}}`, nil, 202, true, false},
		{"lock", http.MethodPost, server + "/action", `{"lock": null}`, nil, 202, false, false},
		{"quotas", http.MethodPut, computeBase + "/os-quota-sets/p1", `{"quota_set": {"instances": 7}}`, nil, 200, true, false},
		{"quota class", http.MethodPut, computeBase + "/os-quota-class-sets/default", `{"quota_class_set": {"cores": 9}}`, nil, 200, true, false},
		{"service", http.MethodPut, computeBase + "/os-services/SERVICE", `{"status": "disabled", "disabled_reason": "r"}`, mv("2.53"), 200, true, false},
		{"key pair", http.MethodPost, computeBase + "/os-keypairs", `{"keypair": {"name": "k", "public_key": "` + testPubKey + `"}}`, nil, 200, false, false},
		{"server group", http.MethodPost, computeBase + "/os-server-groups", `{"server_group": {"name": "sg", "policies": ["affinity"]}}`, nil, 200, false, true},
		{"delete key pair", http.MethodDelete, computeBase + "/os-keypairs/k", ``, nil, 202, false, false},
		{"delete server", http.MethodDelete, server, ``, nil, 204, false, false},
	}
	// Three peers take the same writes: one that applies each at once, as
	// a leader; one whose replica lags each write until it catches up
	// before the next; one whose replica lags all along, so that each
	// write's own checks read a replica behind the writes it already
	// answered, as a client's writes one after the other through one
	// follower do.
	const eager, lagging, chained = "applies at once", "lags each write", "lags all writes"
	answers := map[string][]response{}
	for _, mode := range []string{eager, lagging, chained} {
		l := newLaggingCluster(mode == eager)
		ts := serveLagging(t, l, false)
		for _, h := range []string{"h1", "h2"} {
			l.propose(t, &fsm.RegisterHost{Name: h, Kind: fsm.KindIronic})
		}
		for _, f := range slices.Sorted(maps.Keys(fsm.FeatureCommands)) {
			l.propose(t, &fsm.EnableFeature{Name: f})
		}
		l.propose(t, &fsm.SyncNodes{Upserts: []fsm.Node{
			{UUID: node1, ResourceClass: "baremetal", ProvisionState: "active", InstanceUUID: inst, AllocationUUID: inst},
			{UUID: node2, ResourceClass: "baremetal", ProvisionState: "available"}}})
		services := do(t, ts, http.MethodGet, computeBase+"/os-services?host=h1", adminToken, "", mv("2.53"))
		service, _ := get(t, services.json(t), "services", 0, "id").(string)
		for _, w := range writes {
			if mode == lagging {
				l.catchUp()
			}
			other := "h1"
			if v, err := l.leader.Server(inst); err == nil && v.Host == "h1" {
				other = "h2"
			}
			r := do(t, ts, w.method, strings.Replace(w.path, "SERVICE", service, 1), adminToken, strings.Replace(w.body, "OTHER", other, 1), w.hdr)
			if r.code != w.code {
				t.Fatalf("%s (peer that %s): %s, want %d", w.name, mode, r, w.code)
			}
			if mode == lagging && l.lags() == w.waits {
				t.Errorf("%s: answered with this peer's replica behind the leader: %t, want %t", w.name, l.lags(), !w.waits)
			}
			r.body = []byte(strings.ReplaceAll(string(r.body), ts.URL, "http://corral")) // links name the server
			answers[mode] = append(answers[mode], r)
		}
	}
	for i, w := range writes {
		if w.drawn {
			continue
		}
		for _, mode := range []string{lagging, chained} {
			if got, want := string(answers[mode][i].body), string(answers[eager][i].body); got != want {
				t.Errorf("%s on a peer that %s answered\n%s\nwhere a peer that applied it answers\n%s", w.name, mode, got, want)
			}
		}
	}
}
