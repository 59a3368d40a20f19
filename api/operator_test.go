package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/admin"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/wire"
)

// fakeOperator keeps one peer's keyring in memory; peers maps the other
// members' names to their test servers.
type fakeOperator struct {
	name    string
	mu      sync.Mutex
	primary string
	keys    []string
	peers   map[string]string // name → host:port ("" for this peer)
	broken  bool
}

func (f *fakeOperator) KeyringLocal(op, key string) (cluster.KeyringStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken {
		return cluster.KeyringStatus{}, cluster.ErrEncryptionOff
	}
	switch op {
	case cluster.KeyringInstall:
		f.keys = append(f.keys, key)
	case cluster.KeyringUse:
		f.primary = key
	case cluster.KeyringRemove:
		var keep []string
		for _, k := range f.keys {
			if k != key {
				keep = append(keep, k)
			}
		}
		f.keys = keep
	}
	return cluster.KeyringStatus{Peer: f.name, Primary: f.primary, Keys: append([]string(nil), f.keys...)}, nil
}

func (f *fakeOperator) PeerAPIs() map[string]string { return f.peers }

func (f *fakeOperator) IsLeader() bool { return true }

func (f *fakeOperator) SaveSnapshot(context.Context, io.Writer) (cluster.SnapshotHeader, error) {
	return cluster.SnapshotHeader{}, errors.New("not in this fake")
}

func (f *fakeOperator) RestoreSnapshot(context.Context, io.Reader) (cluster.SnapshotHeader, error) {
	return cluster.SnapshotHeader{}, errors.New("not in this fake")
}

func (f *fakeOperator) ProxySnapshot(context.Context, string, io.Reader) (*http.Response, error) {
	return nil, errors.New("not in this fake")
}

func (f *fakeOperator) RemovePeer(_ context.Context, name string) error {
	switch name {
	case "alive":
		return cluster.ErrPeerAlive
	case "dead":
		return nil
	}
	return cluster.ErrUnknownPeer
}

func (f *fakeOperator) CallPeer(ctx context.Context, addr, method, path string, in, out any) error {
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+addr+path, bytes.NewReader(b))
	req.Header.Set("X-Auth-Token", clustertest.PeerToken) // a peer relays with its own identity
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("peer answered %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func serveOperator(t *testing.T, p *clustertest.Peer, op admin.Operator) *httptest.Server {
	t.Helper()
	srv, err := api.New(api.Config{
		Tokens:   map[string]core.Role{adminToken: core.RoleAdmin, readerToken: core.RoleReader},
		Peers:    p.Node,
		Logger:   slog.New(slog.DiscardHandler),
		Operator: op,
	}, p.Node)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func TestKeyringAppliesOnEveryMember(t *testing.T) {
	p := startCluster(t, 1).Leader(10 * time.Second)
	k1 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	k2 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	other := &fakeOperator{name: "other", primary: k1, keys: []string{k1}}
	otherTS := serveOperator(t, p, other)
	self := &fakeOperator{name: p.Name, primary: k1, keys: []string{k1},
		peers: map[string]string{p.Name: "", "other": strings.TrimPrefix(otherTS.URL, "http://")}}
	ts := serveOperator(t, p, self)

	r := do(t, ts, "POST", wire.KeyringPath, adminToken, `{"key":"`+k2+`"}`, nil)
	if r.code != http.StatusOK {
		t.Fatalf("install: %s", r)
	}
	var resp wire.KeyringResponse
	if err := json.Unmarshal(r.body, &resp); err != nil || len(resp.Peers) != 2 || len(resp.Errors) != 0 {
		t.Fatalf("install answer %s: %v", r.body, err)
	}
	for _, f := range []*fakeOperator{self, other} {
		if len(f.keys) != 2 {
			t.Fatalf("%s keys %v", f.name, f.keys)
		}
	}
	if r := do(t, ts, "PUT", wire.KeyringPath, adminToken, `{"key":"`+k2+`"}`, nil); r.code != http.StatusOK || other.primary != k2 || self.primary != k2 {
		t.Fatalf("use: %s (primaries %s %s)", r, self.primary, other.primary)
	}
	// A bad key is refused before anything changes, naming what is wrong.
	for _, body := range []string{`{"key":"not base64"}`, `{"key":"` + base64.StdEncoding.EncodeToString([]byte("short")) + `"}`} {
		r := do(t, ts, "DELETE", wire.KeyringPath, adminToken, body, nil)
		if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "gossip encryption key") {
			t.Fatalf("bad key %s: %s", body, r)
		}
	}
	if len(self.keys) != 2 || len(other.keys) != 2 {
		t.Fatal("a refused request changed a keyring")
	}
	// A reader may not touch the keyring.
	if r := do(t, ts, "GET", wire.KeyringPath, readerToken, "", nil); r.code != http.StatusForbidden {
		t.Fatalf("reader list: %s", r)
	}
	// A member that fails is reported by name, with 207.
	other.broken = true
	r = do(t, ts, "GET", wire.KeyringPath, adminToken, "", nil)
	resp = wire.KeyringResponse{}
	if err := json.Unmarshal(r.body, &resp); err != nil || r.code != http.StatusMultiStatus || resp.Errors["other"] == "" || len(resp.Peers) != 1 {
		t.Fatalf("list with a broken member: %s", r)
	}
}

func TestRemovePeerEndpoint(t *testing.T) {
	p := startCluster(t, 1).Leader(10 * time.Second)
	ts := serveOperator(t, p, &fakeOperator{name: p.Name})
	for body, want := range map[string]int{
		`{"name":"dead"}`: http.StatusNoContent, `{"name":"alive"}`: http.StatusConflict,
		`{"name":"nobody"}`: http.StatusNotFound, `{"name":""}`: http.StatusBadRequest,
	} {
		if r := do(t, ts, "POST", wire.RemovePeerPath, adminToken, body, nil); r.code != want {
			t.Errorf("%s: %s, want %d", body, r, want)
		}
	}
	if r := do(t, ts, "POST", wire.RemovePeerPath, readerToken, `{"name":"dead"}`, nil); r.code != http.StatusForbidden {
		t.Errorf("reader: %s", r)
	}
}

func TestOpenAPIServed(t *testing.T) {
	p := startCluster(t, 1).Leader(10 * time.Second)
	ts := serveOperator(t, p, &fakeOperator{name: p.Name})
	if r := do(t, ts, "GET", wire.OpenAPIPath, "", "", nil); r.code != http.StatusUnauthorized {
		t.Fatalf("without token: %s", r)
	}
	r := do(t, ts, "GET", wire.OpenAPIPath, readerToken, "", nil)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil || r.code != http.StatusOK || doc.Paths["/v1/hosts/{name}"]["get"] == nil ||
		doc.Paths[wire.KeyringPath]["delete"] == nil {
		t.Fatalf("%s: %v", r, err)
	}
}

// A follower passes remove-peer on to the leader and answers what the
// leader answered: 404 for a name raft does not know, 409 for a live
// peer, as the leader itself does.
func TestRemovePeerThroughFollower(t *testing.T) {
	c := startAPICluster(t, 3, nil)
	leader := c.h.Leader(10 * time.Second)
	fol := c.h.Followers(leader)[0]
	for _, ts := range []*httptest.Server{c.server(leader.Name), c.server(fol.Name)} {
		r := do(t, ts, "POST", wire.RemovePeerPath, adminToken, `{"name":"nobody"}`, nil)
		if r.code != http.StatusNotFound {
			t.Errorf("remove an unknown peer: %s, want 404", r)
		} else if key, msg := errorMessage(t, r); key != "error" || !strings.Contains(msg, "no such raft server") {
			t.Errorf("remove an unknown peer: %s", r.body)
		}
		if r := do(t, ts, "POST", wire.RemovePeerPath, adminToken, `{"name":"`+leader.Name+`"}`, nil); r.code != http.StatusConflict {
			t.Errorf("remove the live leader: %s, want 409", r)
		}
	}
}

// A follower passes a snapshot restore on to the leader and answers the
// leader's refusal of a file that is no snapshot as the leader does: 400
// in the native API's error body, not a 5xx of the peers' protocol.
func TestBadSnapshotThroughFollower(t *testing.T) {
	c := startAPICluster(t, 3, nil)
	leader := c.h.Leader(10 * time.Second)
	fol := c.h.Followers(leader)[0]
	before := leader.Node.Store().Digest()
	for _, ts := range []*httptest.Server{c.server(leader.Name), c.server(fol.Name)} {
		r := do(t, ts, "POST", wire.SnapshotPath, adminToken, "no snapshot at all", map[string]string{"Content-Type": "application/octet-stream"})
		if r.code != http.StatusBadRequest {
			t.Errorf("restore a file that is no snapshot: %s, want 400", r)
		} else if key, msg := errorMessage(t, r); key != "error" || msg == "" {
			t.Errorf("restore a file that is no snapshot: %s", r.body)
		}
	}
	if leader.Node.Store().Digest() != before {
		t.Error("a refused restore changed the state")
	}
}
