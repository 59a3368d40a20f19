// Package failover holds the real-process failover tests and benchmark:
// five `corral agent` processes on 127.0.0.40.. drive an in-process Ironic
// simulator, and hosts are killed, paused, partitioned and drained.
package failover

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/proc"
)

const (
	nodeClass = "baremetal-gold" // Ironic resource class of the seeded nodes
	flavorID  = "gold"
	baseIP    = 40 // agents listen on 127.0.0.40 and up, apart from other e2e packages
)

// fixture is a cluster of agents driving one simulated Ironic whose
// mutating requests are recorded per host.
type fixture struct {
	t     testing.TB
	sim   *sim.Server
	rec   *recorder
	url   string
	c     *e2e.Cluster
	nodes []string
}

// start serves a simulator with n nodes on 127.0.0.1, starts hosts agents
// against it (1 s node sync, plus env) and waits until every host is up,
// every node is mirrored and the flavor exists.
func start(t testing.TB, hosts, nodes int, so sim.Options, env ...string) *fixture {
	t.Helper()
	return startIn(t, nil, hosts, nodes, so, env...)
}

// startIn is start with each agent in its cgroup of cg (nil: none), so
// that netem can cut it off (see newIsolation).
func startIn(t testing.TB, cg *proc.Cgroups, hosts, nodes int, so sim.Options, env ...string) *fixture {
	t.Helper()
	return startWith(t, startOptions{cg: cg, env: env}, hosts, nodes, so)
}

// startOptions are how startWith runs the agents.
type startOptions struct {
	base int           // last octet of the first agent's address (0: baseIP)
	bin  string        // the binary (empty: the tree's own)
	cg   *proc.Cgroups // each agent in its cgroup of cg (nil: none)
	env  []string      // settings of every agent
}

// startWith is start with the agents run as o says.
func startWith(t testing.TB, o startOptions, hosts, nodes int, so sim.Options) *fixture {
	t.Helper()
	if o.base == 0 {
		o.base = baseIP
	}
	if testing.Short() {
		t.Skip("starts real agent processes")
	}
	s := sim.New(so)
	rec := &recorder{h: s}
	ts := httptest.NewServer(rec)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		s.Close()
	})
	f := &fixture{t: t, sim: s, rec: rec, url: ts.URL, nodes: s.SeedNodes(nodes, nodeClass)}
	f.c = e2e.Start(t, hosts, e2e.Options{BaseIP: o.base, ExtraArgs: []string{"--ironic-url", ts.URL}, Cgroups: o.cg,
		Bin: o.bin, Env: append([]string{"CORRAL_IRONIC_SYNC_INTERVAL=1s"}, o.env...)})
	f.c.AwaitReady(60 * time.Second)
	a := f.c.Agents[0]
	f.poll("every host up, every node mirrored", 60*time.Second, 100*time.Millisecond, func() error {
		hs, err := f.hosts(a)
		if err != nil {
			return err
		}
		up := 0
		for _, h := range hs {
			if h.Status == "up" {
				up++
			}
		}
		if up != hosts {
			return fmt.Errorf("%d of %d hosts up", up, hosts)
		}
		var body struct {
			Nodes []struct {
				UUID string `json:"uuid"`
			} `json:"nodes"`
		}
		if err := f.get(a, "/v1/nodes", &body); err != nil {
			return err
		}
		if len(body.Nodes) != nodes {
			return fmt.Errorf("%d of %d nodes mirrored", len(body.Nodes), nodes)
		}
		return nil
	})
	f.do(a, http.MethodPost, "/compute/v2.1/flavors", map[string]any{"flavor": map[string]any{
		"name": "gold", "id": flavorID, "vcpus": 1, "ram": 1, "disk": 1}}, nil)
	f.do(a, http.MethodPost, "/compute/v2.1/flavors/"+flavorID+"/os-extra_specs", map[string]any{
		"extra_specs": map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1",
			"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}, nil)
	// A boot is checked against the flavor in the receiving peer's own
	// replica: wait until every replica has it.
	f.poll("flavor on every replica", 10*time.Second, 20*time.Millisecond, func() error {
		for _, a := range f.c.Agents {
			var body map[string]any
			if err := f.get(a, "/compute/v2.1/flavors/"+flavorID+"/os-extra_specs?consistency=stale", &body); err != nil {
				return fmt.Errorf("%s: %w", a.Name, err)
			}
			if len(body) == 0 || fmt.Sprint(body["extra_specs"]) == "map[]" {
				return fmt.Errorf("%s has no extra specs yet", a.Name)
			}
		}
		return nil
	})
	return f
}

func ctx10() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// get reads path from a into out, returning the error.
func (f *fixture) get(a *e2e.Agent, path string, out any) error {
	ctx, cancel := ctx10()
	defer cancel()
	return a.Client().Do(ctx, http.MethodGet, path, nil, out)
}

// do sends a request that must succeed.
func (f *fixture) do(a *e2e.Agent, method, path string, in, out any) {
	f.t.Helper()
	ctx, cancel := ctx10()
	defer cancel()
	if err := a.Client().Do(ctx, method, path, in, out); err != nil {
		f.t.Fatalf("%s %s on %s: %v", method, path, a.Name, err)
	}
}

// poll calls fn every interval until it returns nil and returns how long
// that took; at the deadline it fails the test with fn's last error.
func (f *fixture) poll(what string, timeout, interval time.Duration, fn func() error) time.Duration {
	f.t.Helper()
	return pollUntil(f.t, what, timeout, interval, fn)
}

func pollUntil(t testing.TB, what string, timeout, interval time.Duration, fn func() error) time.Duration {
	t.Helper()
	return testkit.Eventually(t, timeout, func() error {
		if err := fn(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}, testkit.Every(interval))
}

// hostView is one row of GET /v1/hosts.
type hostView struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Drained bool   `json:"drained"`
	Servers int    `json:"servers"`
}

func (f *fixture) hosts(a *e2e.Agent) (map[string]hostView, error) {
	var body struct {
		Hosts []hostView `json:"hosts"`
	}
	if err := f.get(a, "/v1/hosts", &body); err != nil {
		return nil, err
	}
	out := map[string]hostView{}
	for _, h := range body.Hosts {
		out[h.Name] = h
	}
	return out, nil
}

// waitHost waits until a reports host in status.
func (f *fixture) waitHost(a *e2e.Agent, host, status string, timeout time.Duration) time.Duration {
	f.t.Helper()
	return f.poll(host+" "+status, timeout, 20*time.Millisecond, func() error {
		hs, err := f.hosts(a)
		if err != nil {
			return err
		}
		if h := hs[host]; h.Status != status {
			return fmt.Errorf("%s is %q", host, h.Status)
		}
		return nil
	})
}

// server is the part of Nova's server view the tests read.
type server struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Task   string `json:"OS-EXT-STS:task_state"`
	Host   string `json:"OS-EXT-SRV-ATTR:host"`
	Node   string `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
}

// servers lists the live servers by id.
func (f *fixture) servers(a *e2e.Agent) (map[string]server, error) {
	var body struct {
		Servers []server `json:"servers"`
	}
	if err := f.get(a, "/compute/v2.1/servers/detail", &body); err != nil {
		return nil, err
	}
	out := map[string]server{}
	for _, s := range body.Servers {
		out[s.ID] = s
	}
	return out, nil
}

// owner is the body of GET /v1/servers/{id}/owner.
type owner struct {
	Host   string `json:"host"`
	Epoch  uint64 `json:"epoch"`
	Index  uint64 `json:"index"`
	Reason string `json:"reason"`
	Since  string `json:"since"`
	HostUp bool   `json:"host_up"`
	Status string `json:"status"`
}

func (f *fixture) owner(a *e2e.Agent, id, consistency string) (owner, error) {
	var body struct {
		Owner owner `json:"owner"`
	}
	path := "/v1/servers/" + id + "/owner"
	if consistency != "" {
		path += "?consistency=" + consistency
	}
	err := f.get(a, path, &body)
	return body.Owner, err
}

// boot asks for n servers through the agents in turn and returns their ids.
func (f *fixture) boot(n int, prefix string) []string {
	f.t.Helper()
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range n {
		a := f.running()[i%len(f.running())]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var body struct {
				Server struct {
					ID string `json:"id"`
				} `json:"server"`
			}
			ctx, cancel := ctx10()
			defer cancel()
			errs[i] = a.Client().Do(ctx, http.MethodPost, "/compute/v2.1/servers", map[string]any{"server": map[string]any{
				"name": fmt.Sprintf("%s-%02d", prefix, i), "flavorRef": flavorID, "imageRef": "img"}}, &body)
			ids[i] = body.Server.ID
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			f.t.Fatalf("boot: %v", err)
		}
	}
	return ids
}

// waitServers polls a until ok holds for every server in ids.
func (f *fixture) waitServers(a *e2e.Agent, ids []string, timeout time.Duration, what string, ok func(server) bool) map[string]server {
	f.t.Helper()
	var got map[string]server
	f.poll(what, timeout, 50*time.Millisecond, func() error {
		var err error
		if got, err = f.servers(a); err != nil {
			return err
		}
		var bad []string
		for _, id := range ids {
			if s, found := got[id]; !found || !ok(s) {
				bad = append(bad, fmt.Sprintf("%s(%s/%s on %s)", id[:8], s.Status, s.Task, s.Host))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d servers not there yet: %s", len(bad), strings.Join(bad, " "))
		}
		return nil
	})
	return got
}

func active(s server) bool { return s.Status == "ACTIVE" }

// running returns the running agents.
func (f *fixture) running() []*e2e.Agent {
	var out []*e2e.Agent
	for _, a := range f.c.Agents {
		if a.Running() {
			out = append(out, a)
		}
	}
	return out
}

// agent returns the agent named name.
func (f *fixture) agent(name string) *e2e.Agent {
	if a := f.find(name); a != nil {
		return a
	}
	f.t.Fatalf("no agent %s", name)
	return nil
}

// other returns a running agent that is none of except.
func (f *fixture) other(except ...*e2e.Agent) *e2e.Agent {
	for _, a := range f.running() {
		if !slices.Contains(except, a) {
			return a
		}
	}
	f.t.Fatal("no other running agent")
	return nil
}

// victim returns the non-leader agent owning the most of the servers.
func (f *fixture) victim(srv map[string]server, leader *e2e.Agent) *e2e.Agent {
	f.t.Helper()
	count := map[string]int{}
	for _, s := range srv {
		count[s.Host]++
	}
	var best *e2e.Agent
	for _, a := range f.running() {
		if a != leader && count[a.Name] > 0 && (best == nil || count[a.Name] > count[best.Name]) {
			best = a
		}
	}
	if best == nil {
		f.t.Fatalf("no non-leader host owns a server: %v", count)
	}
	return best
}

// ownedBy returns server id → node of the servers in srv owned by host.
func ownedBy(srv map[string]server, host string) map[string]string {
	out := map[string]string{}
	for id, s := range srv {
		if s.Host == host {
			out[id] = s.Node
		}
	}
	return out
}

// metric sums every sample of a metric in a's /metrics.
func (f *fixture) metric(a *e2e.Agent, name string) (float64, error) {
	var text string
	ctx, cancel := ctx10()
	defer cancel()
	if err := client.New(a.URL(), "").Do(ctx, http.MethodGet, "/metrics", nil, &text); err != nil {
		return 0, err
	}
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}

func (f *fixture) mustMetric(a *e2e.Agent, name string) float64 {
	f.t.Helper()
	v, err := f.metric(a, name)
	if err != nil {
		f.t.Fatalf("%s of %s: %v", name, a.Name, err)
	}
	return v
}

// ua is the User-Agent part that names a host's requests to Ironic.
func ua(a *e2e.Agent) string { return "corral-host/" + a.Name + " " }

// allocations lists Ironic's allocations (read straight from the simulator).
type allocation struct {
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	Node  string `json:"node_uuid"`
	State string `json:"state"`
}

func (f *fixture) allocations() []allocation {
	f.t.Helper()
	var body struct {
		Allocations []allocation `json:"allocations"`
	}
	c := &client.Client{Addr: f.url, HTTP: http.DefaultClient, Headers: map[string]string{"X-OpenStack-Ironic-API-Version": "1.52"}}
	ctx, cancel := ctx10()
	defer cancel()
	if err := c.Do(ctx, http.MethodGet, "/v1/allocations?limit=1000", nil, &body); err != nil {
		f.t.Fatalf("list Ironic allocations: %v", err)
	}
	return body.Allocations
}

// checkIronic asserts, for the live servers, one node each in Ironic
// (instance_uuid set to the server on exactly the node corral shows) and
// one allocation each, that no other node holds an instance, and that no
// node holds two allocations.
func (f *fixture) checkIronic(live map[string]server) {
	f.t.Helper()
	byInstance := map[string][]string{}
	for _, n := range f.sim.Nodes() {
		if n.InstanceUUID != "" {
			byInstance[n.InstanceUUID] = append(byInstance[n.InstanceUUID], n.UUID)
		}
	}
	allocs, allocsOnNode := map[string]int{}, map[string][]string{}
	for _, a := range f.allocations() {
		allocs[a.UUID]++
		if a.Node != "" {
			allocsOnNode[a.Node] = append(allocsOnNode[a.Node], a.UUID)
		}
	}
	for node, as := range allocsOnNode {
		if len(as) > 1 {
			f.t.Errorf("Ironic node %s holds %d allocations: %v", node, len(as), as)
		}
	}
	for id, s := range live {
		if got := byInstance[id]; len(got) != 1 || got[0] != s.Node {
			f.t.Errorf("server %s is on node %s in corral, Ironic has it on %v", id, s.Node, got)
		}
		if allocs[id] != 1 {
			f.t.Errorf("server %s has %d allocations in Ironic, want 1", id, allocs[id])
		}
	}
	for inst, nodes := range byInstance {
		if _, ok := live[inst]; !ok {
			f.t.Errorf("Ironic nodes %v hold instance %s, which corral does not list as live", nodes, inst)
		}
	}
	for id := range allocs {
		if _, ok := live[id]; !ok {
			f.t.Errorf("Ironic holds allocation %s, which belongs to no live server", id)
		}
	}
}

// summary formats durations as p50/p99/max.
func summary(ds []time.Duration) (p50, p99, worst time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) time.Duration { // nearest rank
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return q(0.50), q(0.99), s[len(s)-1]
}

// attributed fails the test unless the host's own Ironic writes are
// attributed to it (by User-Agent, in the recorder and in the simulator):
// call it before a fault, so that a later "the host wrote nothing" can
// fail.
func (f *fixture) attributed(a *e2e.Agent) {
	f.t.Helper()
	n, rec := f.sim.WritesFrom(ua(a)), len(f.rec.by(a.Name, time.Time{}))
	if n == 0 || rec == 0 {
		f.t.Fatalf("host %s has %d Ironic writes in the simulator's count and %d in the recorder before the fault; "+
			"its writes must be attributed to it for the fencing check to mean anything", a.Name, n, rec)
	}
	f.t.Logf("%s's own Ironic writes before the fault: %d", a.Name, n)
}

// heal restarts the killed agents and waits until every host is up.
func (f *fixture) heal(killed ...*e2e.Agent) {
	f.t.Helper()
	for _, a := range killed {
		a.Start()
	}
	obs := f.running()[0]
	for _, a := range f.c.Agents {
		f.waitHost(obs, a.Name, "up", 60*time.Second)
	}
}

// reservation is one row of GET /v1/reservations.
type reservation struct {
	Node   string `json:"node_uuid"`
	Server string `json:"server_id"`
	Host   string `json:"host"`
}

// checkInvariants asserts, after the faults healed, what must hold
// whatever path the failover took (DESIGN.md, invariants 1-3):
//   - no acknowledged boot is lost: each of acked is listed and ACTIVE;
//   - every listed server has exactly one owner, a host that is up and
//     whose agent runs, the host the server is listed on;
//   - at most one server per node and one node per server, in corral's
//     listing and reservations and in Ironic.
func (f *fixture) checkInvariants(obs *e2e.Agent, acked []string) {
	f.t.Helper()
	all, err := f.servers(obs)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, id := range acked {
		if s, ok := all[id]; !ok || s.Status != "ACTIVE" {
			f.t.Errorf("acknowledged server %s is lost or not ACTIVE: %+v", id, s)
		}
	}
	byNode := map[string][]string{}
	for id, s := range all {
		o, err := f.owner(obs, id, "linearizable")
		if err != nil {
			f.t.Fatalf("owner of %s: %v", id, err)
		}
		switch a := f.find(o.Host); {
		case o.Host == "" || a == nil:
			f.t.Errorf("server %s has no owner host (%q)", id, o.Host)
		case !o.HostUp || !a.Running():
			f.t.Errorf("server %s is owned by %s, which is not alive (up %v, running %v)", id, o.Host, o.HostUp, a.Running())
		case s.Host != o.Host:
			f.t.Errorf("server %s is listed on %s but owned by %s", id, s.Host, o.Host)
		}
		if s.Node == "" {
			f.t.Errorf("server %s (%s) has no node", id, s.Status)
		}
		byNode[s.Node] = append(byNode[s.Node], id)
	}
	for node, ids := range byNode {
		if node != "" && len(ids) > 1 {
			f.t.Errorf("node %s holds %d servers in corral: %v", node, len(ids), ids)
		}
	}
	var body struct {
		Reservations []reservation `json:"reservations"`
	}
	if err := f.get(obs, "/v1/reservations?consistency=linearizable", &body); err != nil {
		f.t.Fatal(err)
	}
	resByNode, resByServer := map[string]int{}, map[string]int{}
	for _, r := range body.Reservations {
		resByNode[r.Node]++
		resByServer[r.Server]++
		if s, ok := all[r.Server]; ok && s.Node != r.Node {
			f.t.Errorf("server %s is on node %s but reserves node %s", r.Server, s.Node, r.Node)
		}
	}
	for node, n := range resByNode {
		if n > 1 {
			f.t.Errorf("node %s is reserved %d times", node, n)
		}
	}
	for id, n := range resByServer {
		if n > 1 {
			f.t.Errorf("server %s reserves %d nodes", id, n)
		}
	}
	f.checkIronic(all)
}

// find returns the agent named name, or nil.
func (f *fixture) find(name string) *e2e.Agent {
	for _, a := range f.c.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}
