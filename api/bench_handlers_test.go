package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
)

// localCluster is a core.Cluster without raft: a write is encoded as the
// leader encodes it and applied to one store at once (a leader's decision,
// a new server's host, is not taken: those writes are encoded and
// dropped). It isolates what the API itself costs per request.
type localCluster struct {
	mu  sync.Mutex
	st  *fsm.Store
	idx uint64
}

func newLocalCluster() *localCluster { return &localCluster{st: fsm.New()} }

func (l *localCluster) Name() string      { return "local" }
func (l *localCluster) Store() *fsm.Store { return l.st }

func (l *localCluster) ProposeCommitted(_ context.Context, cmd fsm.Command) (uint64, error) {
	cmd.Header().At = time.Now().UTC()
	data, err := fsm.EncodeAs(cmd, fsm.EncodingMsgpack)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idx++
	if fsm.Decides(cmd) {
		return l.idx, nil
	}
	return l.idx, l.st.Apply(l.idx, data).Err
}

func (l *localCluster) AwaitApplied(context.Context, uint64) error { return nil }

func (l *localCluster) ApplyForwarded(context.Context, []byte) (uint64, error) {
	return 0, cluster.ErrNotLeader
}
func (l *localCluster) ReadIndex(context.Context, bool) (uint64, error) {
	return l.st.AppliedIndex(), nil
}
func (l *localCluster) ReadBarrier(context.Context, cluster.Consistency) error {
	return nil
}
func (l *localCluster) Members() []cluster.Member      { return nil }
func (l *localCluster) RaftStatus() cluster.RaftStatus { return cluster.RaftStatus{} }
func (l *localCluster) Ready() []cluster.Check         { return nil }
func (l *localCluster) CommandKnown(fsm.CommandType) bool {
	return true
}

// BenchmarkAPIRequest is what one request costs the API itself, raft
// aside (localCluster): time, bytes and allocations per request, the
// test's building of the request included (go test -run '^$' -bench
// BenchmarkAPIRequest -benchmem ./api/).
func BenchmarkAPIRequest(b *testing.B) {
	lc := newLocalCluster()
	srv, err := api.New(api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin},
		Logger: slog.New(slog.DiscardHandler)}, lc)
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	send := func(b *testing.B, method, path, body string, want int) {
		var rd *strings.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req := httptest.NewRequest(method, path, nil)
		if rd != nil {
			req = httptest.NewRequest(method, path, rd)
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("X-Auth-Token", adminToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
	}
	send(b, http.MethodPost, computeBase+"/flavors", `{"flavor":{"id":"bm","name":"bm","ram":4096,"vcpus":2,"disk":40}}`, http.StatusOK)
	b.Run("flavor-create", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			send(b, http.MethodPost, computeBase+"/flavors", fmt.Sprintf(`{"flavor":{"name":"bench-%d","ram":4096,"vcpus":2,"disk":40}}`, i), http.StatusOK)
		}
	})
	b.Run("flavor-show", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			send(b, http.MethodGet, computeBase+"/flavors/bm", "", http.StatusOK)
		}
	})
	b.Run("server-create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			send(b, http.MethodPost, computeBase+"/servers", `{"server":{"name":"s","imageRef":"img","flavorRef":"bm"}}`, http.StatusAccepted)
		}
	})
	b.Run("bad-request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			send(b, http.MethodPost, computeBase+"/flavors", `{"flavor":{"name":"x","ram":"many","vcpus":2,"disk":40}}`, http.StatusBadRequest)
		}
	})
}
