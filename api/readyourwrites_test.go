package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// The promises of README's "Read consistency" about writes: a write
// answered by any peer is seen by reads at default and linearizable
// consistency on every peer, and by stale reads on the leader; a stale
// read on the follower that took it sees it when the write asked for
// read-your-writes (core.ReadYourWritesHeader).
func TestFollowerWriteIsSeenAtEveryConsistency(t *testing.T) {
	t.Parallel()
	// Timeouts long enough that a loaded machine does not elect another
	// leader mid-test.
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout = time.Second, time.Second, time.Second
	}})
	leader := h.Leader(15 * time.Second)
	servers := map[string]*httptest.Server{}
	for _, p := range h.Running() {
		servers[p.Name] = serve(t, p)
		waitSettled(t, p)
	}
	fol := h.Followers(leader)[0]
	fts := servers[fol.Name]
	testkit.Eventually(t, 15*time.Second, func() error {
		if r := do(t, fts, http.MethodGet, "/readyz", "", "", nil); r.code != http.StatusOK {
			return fmt.Errorf("%s readyz: %s", fol.Name, r)
		}
		return nil
	})

	for i, ryw := range []map[string]string{nil, {core.ReadYourWritesHeader: "true"}} {
		// A flavor, then a server of it, both through the follower, as the
		// openstack CLI creates them, each shown at once on every peer.
		id := fmt.Sprintf("ryw-%d", i)
		r := do(t, fts, http.MethodPost, computeBase+"/flavors", adminToken,
			fmt.Sprintf(`{"flavor": {"id": %q, "name": %q, "ram": 1, "vcpus": 1, "disk": 1}}`, id, id), ryw)
		if r.code != http.StatusOK {
			t.Fatalf("create flavor through %s (%v): %s", fol.Name, ryw, r)
		}
		if ryw != nil {
			// Asked for: the follower applied it before answering.
			if r := do(t, fts, http.MethodGet, computeBase+"/flavors/"+id+"?consistency=stale", readerToken, "", nil); r.code != http.StatusOK {
				t.Errorf("stale read on %s after a read-your-writes create: %s", fol.Name, r)
			}
		}
		r = do(t, fts, http.MethodPost, computeBase+"/servers", adminToken,
			fmt.Sprintf(`{"server": {"name": %q, "imageRef": "img", "flavorRef": %q}}`, id, id), ryw)
		if r.code != http.StatusAccepted {
			t.Fatalf("create server through %s (%v): %s", fol.Name, ryw, r)
		}
		sid, _ := get(t, r.json(t), "server", "id").(string)
		if ryw != nil {
			if _, err := fol.Node.Store().Server(sid); err != nil {
				t.Errorf("%s answered a read-your-writes boot before applying it: %v", fol.Name, err)
			}
		}
		for name, ts := range servers {
			levels := []string{"", "?consistency=default", "?consistency=linearizable"}
			if name == leader.Name {
				levels = append(levels, "?consistency=stale")
			}
			for _, q := range levels {
				if r := readAnswer(t, ts, computeBase+"/flavors/"+id+q); r.code != http.StatusOK {
					t.Errorf("flavor created through %s (%v), read on %s%s: %s", fol.Name, ryw, name, q, r)
				}
				if r := readAnswer(t, ts, computeBase+"/servers/"+sid+q); r.code != http.StatusOK {
					t.Errorf("server created through %s (%v), read on %s%s: %s", fol.Name, ryw, name, q, r)
				}
			}
		}
	}

	// A write that says neither true nor false is refused and changes nothing.
	for _, v := range []string{"yes please", "", "1", "t"} {
		r := do(t, fts, http.MethodPost, computeBase+"/flavors", adminToken,
			`{"flavor": {"id": "ryw-bad", "name": "ryw-bad", "ram": 1, "vcpus": 1, "disk": 1}}`, map[string]string{core.ReadYourWritesHeader: v})
		if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), core.ReadYourWritesHeader+" must be true or false") {
			t.Errorf("%s: %q: got %s, want 400", core.ReadYourWritesHeader, v, r)
		}
	}
	if r := do(t, servers[leader.Name], http.MethodGet, computeBase+"/flavors/ryw-bad?consistency=linearizable", readerToken, "", nil); r.code != http.StatusNotFound {
		t.Errorf("a refused write was applied: %s", r)
	}
}

// A follower answers a write once the leader has applied it, without
// waiting to apply it itself, unless the client asks for it: a DELETE
// through a follower whose raft is cut is answered while that follower
// still holds the server; with read-your-writes, only after the heal,
// when the follower has applied it. Either way the leader decides (no
// stale 404 from a follower that has not seen the server created) and
// reads at default consistency on the follower see the delete.
func TestDeleteThroughLaggingFollowerIsDecidedByTheLeader(t *testing.T) {
	t.Parallel()
	// p3 keeps believing in its leader while its raft is cut; the others
	// elect among themselves, with timeouts long enough that a loaded
	// machine does not depose the leader while p3 is cut (the two of them
	// are then the whole majority).
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout = time.Second, time.Second, time.Second
		if c.Name == "p3" {
			c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout = time.Minute, time.Minute
		}
	}})
	leader := h.Leader(15 * time.Second)
	lag := h.Peer("p3")
	lts, fts := serve(t, leader), serve(t, lag)
	testkit.Eventually(t, 15*time.Second, func() error {
		if r := do(t, fts, http.MethodGet, "/readyz", "", "", nil); r.code != http.StatusOK {
			return fmt.Errorf("%s readyz: %s", lag.Name, r)
		}
		return nil
	})
	r := do(t, lts, http.MethodPost, computeBase+"/flavors", adminToken, `{"flavor": {"id": "bm", "name": "bm", "ram": 1, "vcpus": 1, "disk": 1}}`, nil)
	if r.code != http.StatusOK {
		t.Fatalf("create flavor: %s", r)
	}
	boot := func(name string) string {
		r := do(t, lts, http.MethodPost, computeBase+"/servers", adminToken, `{"server": {"name": "`+name+`", "imageRef": "img", "flavorRef": "bm"}}`, nil)
		if r.code != http.StatusAccepted {
			t.Fatalf("create server on the leader: %s", r)
		}
		id, _ := get(t, r.json(t), "server", "id").(string)
		return id
	}
	applied := func(p *clustertest.Peer, id string) bool {
		s, err := p.Node.Store().Server(id)
		return err == nil && s.Status == fsm.StatusDeleted
	}
	// Both servers reach p3, which then holds them live.
	fast, waited := boot("s1"), boot("s2")
	testkit.Eventually(t, 15*time.Second, func() error {
		for _, id := range []string{fast, waited} {
			if _, err := lag.Node.Store().Server(id); err != nil {
				return fmt.Errorf("%s has not applied the create of %s: %v", lag.Name, id, err)
			}
		}
		return nil
	})

	h.CutRaft(lag.Name)
	if st := lag.Node.RaftStatus(); st.Leader != leader.Name {
		t.Fatalf("%s believes the leader is %q, want %s", lag.Name, st.Leader, leader.Name)
	}
	// Not asked: answered once the leader applied the delete.
	if r := deleteVia(fts, fast, nil); r.code != http.StatusNoContent {
		t.Fatalf("DELETE through lagging %s: got %s, want 204", lag.Name, r)
	}
	if !applied(leader, fast) {
		t.Fatalf("DELETE through %s answered before the leader applied it", lag.Name)
	}
	if applied(lag, fast) {
		t.Fatalf("%s applied the delete with its raft cut: it does not lag, the test proves nothing", lag.Name)
	}
	// A server this follower has not even seen created is deleted too: the
	// leader's state decides, not a stale 404 from this replica.
	unseen := boot("s3")
	if _, err := lag.Node.Store().Server(unseen); err == nil {
		t.Fatalf("%s has applied the create of %s with its raft cut: the test proves nothing", lag.Name, unseen)
	}
	if r := deleteVia(fts, unseen, nil); r.code != http.StatusNoContent {
		t.Fatalf("DELETE through %s of a server it has not seen: got %s, want 204", lag.Name, r)
	}
	if !applied(leader, unseen) {
		t.Fatalf("DELETE through %s of a server it has not seen answered before the leader applied it", lag.Name)
	}

	// Asked: answered only once the follower applied it too.
	deleted := make(chan response, 1)
	go func() { deleted <- deleteVia(fts, waited, map[string]string{core.ReadYourWritesHeader: "true"}) }()
	testkit.Eventually(t, 15*time.Second, func() error {
		select {
		case r := <-deleted:
			t.Fatalf("read-your-writes DELETE through %s answered before it could apply the leader's decision: %s", lag.Name, r)
		default:
		}
		if !applied(leader, waited) {
			return fmt.Errorf("server %s not deleted on the leader yet", waited)
		}
		return nil
	})
	h.Heal(lag.Name)
	select {
	case r = <-deleted:
	case <-time.After(20 * time.Second):
		t.Fatal("read-your-writes DELETE through the lagging follower did not answer after it healed")
	}
	if r.code != http.StatusNoContent {
		t.Fatalf("read-your-writes DELETE through lagging %s: got %s, want 204", lag.Name, r)
	}
	if !applied(lag, waited) {
		t.Fatalf("server %s on %s is not deleted after its read-your-writes DELETE answered", waited, lag.Name)
	}
	for _, id := range []string{fast, waited, unseen} {
		if r := do(t, fts, http.MethodGet, computeBase+"/servers/"+id, readerToken, "", nil); r.code != http.StatusNotFound {
			t.Errorf("GET the deleted server %s through %s: %s", id, lag.Name, r)
		}
	}
}

// deleteVia sends DELETE /servers/{id} to ts with the extra headers.
func deleteVia(ts *httptest.Server, id string, hdr map[string]string) response {
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+computeBase+"/servers/"+id, nil)
	req.Header.Set("X-Auth-Token", adminToken)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		return response{code: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

// readAnswer reads path on ts until it is answered with anything but 503
// (an election on a loaded machine: not an answer about the state).
func readAnswer(t *testing.T, ts *httptest.Server, path string) response {
	t.Helper()
	var r response
	testkit.Eventually(t, 15*time.Second, func() error {
		if r = do(t, ts, http.MethodGet, path, readerToken, "", nil); r.code == http.StatusServiceUnavailable {
			return fmt.Errorf("GET %s: %s", path, r)
		}
		return nil
	})
	return r
}
