package sim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
)

const (
	ridA = "req-0a1b2c3d-0000-4000-8000-00000000000a"
	ridB = "req-0a1b2c3d-0000-4000-8000-00000000000b"
)

// send is a request with a User-Agent and an X-OpenStack-Request-ID.
func (c *client) send(method, path, ua, rid string, body any) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.82")
	req.Header.Set("User-Agent", ua)
	if rid != "" {
		req.Header.Set("X-OpenStack-Request-ID", rid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (c *client) sideEffects(query string) (int, sim.SideEffectLog) {
	c.t.Helper()
	resp, err := http.Get(c.base + sim.SideEffectsPath + query)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var l sim.SideEffectLog
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			c.t.Fatal(err)
		}
	}
	return resp.StatusCode, l
}

func TestSideEffectsRecordAcceptedRequests(t *testing.T) {
	s, c := start(t, sim.Options{})
	ids := s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc"}, {Name: "n2", ResourceClass: "rc"}})
	n1, n2 := ids[0], ids[1]
	ua1, ua2 := "corral-host/n1 corral gophercloud/v2", "corral-host/n2 corral gophercloud/v2"
	before := time.Now().UTC()
	steps := []struct {
		method, path, ua, rid string
		body                  any
		want                  int
	}{
		{http.MethodPut, "/v1/nodes/n1/states/provision", ua1, ridA, map[string]any{"target": "active"}, 202},
		{http.MethodPut, "/v1/nodes/n1/states/provision", ua1, ridA, map[string]any{"target": "manage"}, 400}, // refused: not logged
		{http.MethodPut, "/v1/nodes/" + n2 + "/states/power", ua2, ridB, map[string]any{"target": "power on"}, 202},
		{http.MethodPut, "/v1/nodes/n2/states/power", ua2, "req-not-a-uuid", map[string]any{"target": "rebooting"}, 202},
		{http.MethodPut, "/v1/nodes/n2/states/power", ua2, ridB, map[string]any{"target": "sideways"}, 400},
		{http.MethodPost, "/v1/nodes/n2/vifs", ua2, ridB, map[string]any{"id": "vif-1"}, 204},
		{http.MethodDelete, "/v1/nodes/n2/vifs/vif-1", ua2, "", nil, 204},
		{http.MethodGet, "/v1/nodes/n1", ua1, ridA, nil, 200}, // a read: not logged
	}
	for i, st := range steps {
		if got := c.send(st.method, st.path, st.ua, st.rid, st.body); got != st.want {
			t.Fatalf("step %d %s %s: %d, want %d", i, st.method, st.path, got, st.want)
		}
	}
	want := []sim.SideEffect{
		{Seq: 1, Node: n1, Method: "PUT", Path: "/v1/nodes/n1/states/provision", Kind: sim.EffectProvision, Target: "active",
			RequestID: ridA, UserAgent: ua1, Status: 202, ProvisionState: "available", PowerState: "power off"},
		{Seq: 2, Node: n2, Method: "PUT", Path: "/v1/nodes/" + n2 + "/states/power", Kind: sim.EffectPower, Target: "power on",
			RequestID: ridB, UserAgent: ua2, Status: 202, ProvisionState: "available", PowerState: "power off"},
		{Seq: 3, Node: n2, Method: "PUT", Path: "/v1/nodes/n2/states/power", Kind: sim.EffectPower, Target: "rebooting",
			UserAgent: ua2, Status: 202, ProvisionState: "available", PowerState: "power on"},
		{Seq: 4, Node: n2, Method: "POST", Path: "/v1/nodes/n2/vifs", Kind: sim.EffectVIF, Target: "attach", VIF: "vif-1",
			RequestID: ridB, UserAgent: ua2, Status: 204, ProvisionState: "available", PowerState: "power on"},
		{Seq: 5, Node: n2, Method: "DELETE", Path: "/v1/nodes/n2/vifs/vif-1", Kind: sim.EffectVIF, Target: "detach", VIF: "vif-1",
			UserAgent: ua2, Status: 204, ProvisionState: "available", PowerState: "power on"},
	}
	// The power changes are asynchronous: the rebooting request waits for the node lock, so
	// the "power on" one has landed when it is accepted.
	got := s.SideEffects()
	if len(got) != len(want) {
		t.Fatalf("%d side effects, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		if g.Time.Before(before) || g.Time.After(time.Now()) || (i > 0 && g.Time.Before(got[i-1].Time)) {
			t.Fatalf("side effect %d time %v (started %v)", i, g.Time, before)
		}
		g.Time = time.Time{}
		if g != want[i] {
			t.Fatalf("side effect %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}

	// The same log over HTTP, outside /v1, whole or for one node or after a sequence number.
	code, l := c.sideEffects("")
	if code != http.StatusOK || len(l.SideEffects) != len(want) || l.Dropped != 0 || !l.SideEffects[0].Time.Equal(got[0].Time) {
		t.Fatalf("GET %s: %d %+v", sim.SideEffectsPath, code, l)
	}
	if _, l = c.sideEffects("?node=" + strings.ToUpper(n1)); len(l.SideEffects) != 1 || l.SideEffects[0].Seq != 1 {
		t.Fatalf("?node=%s: %+v", n1, l)
	}
	if _, l = c.sideEffects("?node=" + n2 + "&since=3"); len(l.SideEffects) != 2 || l.SideEffects[0].Seq != 4 {
		t.Fatalf("?node=%s&since=3: %+v", n2, l)
	}
	if code, _ := c.sideEffects("?since=x"); code != http.StatusBadRequest {
		t.Fatalf("?since=x: %d", code)
	}
	if code := c.send(http.MethodPost, sim.SideEffectsPath, ua1, "", map[string]any{}); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST %s: %d", sim.SideEffectsPath, code)
	}
	// The simulator's own path takes no injected fault and is not counted as an Ironic request.
	reqs := s.Requests("", "")
	s.FailNext("", "", http.StatusServiceUnavailable, 1)
	if code, _ := c.sideEffects(""); code != http.StatusOK {
		t.Fatalf("GET %s after FailNext: %d", sim.SideEffectsPath, code)
	}
	if s.Requests("", "") != reqs {
		t.Fatalf("the side-effect log was counted as an Ironic request")
	}
	// The per-User-Agent write counters are kept: refused writes count, reads do not.
	if n1w, n2w := s.WritesFrom("corral-host/n1"), s.WritesFrom("corral-host/n2"); n1w != 2 || n2w != 5 {
		t.Fatalf("WritesFrom n1 %d, n2 %d", n1w, n2w)
	}
}

func TestSideEffectLimitKeepsTheNewest(t *testing.T) {
	s, c := start(t, sim.Options{SideEffectLimit: 2})
	s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc"}})
	for _, v := range []string{"vif-1", "vif-2", "vif-3"} {
		if code := c.send(http.MethodPost, "/v1/nodes/n1/vifs", "t", "", map[string]any{"id": v}); code != 204 {
			t.Fatalf("attach %s: %d", v, code)
		}
	}
	got := s.SideEffects()
	if len(got) != 2 || got[0].VIF != "vif-2" || got[1].VIF != "vif-3" || got[1].Seq != 3 {
		t.Fatalf("kept %+v", got)
	}
	if _, l := c.sideEffects(""); l.Dropped != 1 || len(l.SideEffects) != 2 {
		t.Fatalf("log %+v", l)
	}

	s2, c2 := start(t, sim.Options{SideEffectLimit: -1})
	s2.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc"}})
	c2.send(http.MethodPost, "/v1/nodes/n1/vifs", "t", "", map[string]any{"id": "vif-1"})
	if got := s2.SideEffects(); len(got) != 0 {
		t.Fatalf("a negative limit kept %+v", got)
	}
}
