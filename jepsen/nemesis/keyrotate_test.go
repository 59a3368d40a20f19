package nemesis

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
)

// fakeKeyring is one agent's /v1/operator/keyring?local=true.
type fakeKeyring struct {
	mu      sync.Mutex
	name    string
	keys    []string
	primary string
	refuse  bool // answer 409 to every change
}

func (f *fakeKeyring) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path != client.KeyringPath || r.URL.Query().Get("local") != "true" {
		http.NotFound(w, r)
		return
	}
	var req client.KeyringRequest
	if r.Method != http.MethodGet {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if f.refuse {
			http.Error(w, "refused", http.StatusConflict)
			return
		}
		f.apply(r.Method, req.Key)
	}
	_ = json.NewEncoder(w).Encode(client.KeyringResponse{Peers: []client.KeyringStatus{{Peer: f.name, Primary: f.primary, Keys: f.keys}}})
}

func (f *fakeKeyring) apply(method, key string) {
	switch method {
	case http.MethodPost:
		if !slices.Contains(f.keys, key) {
			f.keys = append(f.keys, key)
		}
	case http.MethodPut:
		if slices.Contains(f.keys, key) {
			f.primary = key
		}
	case http.MethodDelete:
		if key != f.primary {
			f.keys = slices.DeleteFunc(f.keys, func(k string) bool { return k == key })
		}
	}
}

func (f *fakeKeyring) state() (string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.primary, append([]string(nil), f.keys...)
}

// fakeCluster starts n fake agents holding only oldKey.
func fakeCluster(t *testing.T, n int, oldKey string) (*Nemesis, []*fakeKeyring) {
	t.Helper()
	cl := &cluster.Cluster{Token: "t"}
	var fakes []*fakeKeyring
	for i := 0; i < n; i++ {
		f := &fakeKeyring{name: "n" + strconv.Itoa(i+1), keys: []string{oldKey}, primary: oldKey}
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		cl.Attach(f.name, host, p)
		fakes = append(fakes, f)
	}
	return &Nemesis{Cl: cl, API: client.NewCorral("t", nil), Logf: t.Logf}, fakes
}

func TestRotationStepsOrderAndDone(t *testing.T) {
	steps := rotationSteps("OLD", "NEW")
	var ops []string
	for _, s := range steps {
		ops = append(ops, s.Op+" "+s.Key)
	}
	if got := strings.Join(ops, ", "); got != "install NEW, use NEW, remove OLD" {
		t.Fatalf("steps = %s", got)
	}
	before := client.KeyringStatus{Primary: "OLD", Keys: []string{"OLD"}}
	installed := client.KeyringStatus{Primary: "OLD", Keys: []string{"OLD", "NEW"}}
	used := client.KeyringStatus{Primary: "NEW", Keys: []string{"OLD", "NEW"}}
	after := client.KeyringStatus{Primary: "NEW", Keys: []string{"NEW"}}
	for _, tc := range []struct {
		step int
		st   client.KeyringStatus
		want bool
	}{
		{0, before, false}, {0, installed, true},
		{1, installed, false}, {1, used, true},
		{2, used, false}, {2, after, true},
		{2, client.KeyringStatus{}, false}, // encryption off is not a removal
	} {
		if got := steps[tc.step].done(tc.st); got != tc.want {
			t.Errorf("%s done(%+v) = %v, want %v", steps[tc.step].Op, tc.st, got, tc.want)
		}
	}
}

// A peer the cluster-wide step missed (not a gossip member yet) gets the
// step on its own, and the rotation completes on every peer.
func TestApplyKeyStepFixesAPeerTheClusterMissed(t *testing.T) {
	n, fakes := fakeCluster(t, 3, "OLD")
	for _, s := range rotationSteps("OLD", "NEW") {
		wide := func(context.Context) error {
			for _, f := range fakes[:2] { // n3 missed every cluster-wide step
				f.mu.Lock()
				f.apply(s.Method, s.Key)
				f.mu.Unlock()
			}
			return nil
		}
		if err := n.applyKeyStep(context.Background(), s, wide, 5*time.Second); err != nil {
			t.Fatalf("%s: %v", s.Op, err)
		}
	}
	for _, f := range fakes {
		if p, keys := f.state(); p != "NEW" || !slices.Equal(keys, []string{"NEW"}) {
			t.Errorf("%s: primary %s keys %v, want only NEW", f.name, p, keys)
		}
	}
}

// A peer that refuses the step makes the rotation fail: the fault did not
// happen, and the error names the peer.
func TestApplyKeyStepFailsWhenAPeerRefuses(t *testing.T) {
	n, fakes := fakeCluster(t, 3, "OLD")
	fakes[1].refuse = true
	s := rotationSteps("OLD", "NEW")[0]
	err := n.applyKeyStep(context.Background(), s, func(context.Context) error { return nil }, 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "n2") || strings.Contains(err.Error(), "n1,") {
		t.Fatalf("err = %v, want a failure naming n2 only", err)
	}
}

// Without gossip encryption there is nothing to rotate: the window is an
// error, not a silent success.
func TestKeyrotateWithoutEncryptionIsAnError(t *testing.T) {
	n, _ := fakeCluster(t, 3, "OLD")
	name, _, heal, err := n.inject(context.Background(), "keyrotate", "", nil)
	if name != "keyrotate" || heal != nil || err == nil {
		t.Fatalf("inject = %s, heal %v, err %v; want an error", name, heal != nil, err)
	}
}

func TestKeyrotateIsInAll(t *testing.T) {
	all, err := ParseFamilies("all")
	if err != nil || !slices.Contains(all, "keyrotate") || !NeedsGossipKey(all) {
		t.Fatalf("all = %v (%v), want keyrotate in it", all, err)
	}
	if fs, _ := ParseFamilies("kill,pause"); NeedsGossipKey(fs) {
		t.Fatal("kill,pause needs no gossip key")
	}
}
