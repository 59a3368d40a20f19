// Package e2e starts real `corral agent` processes on 127.0.0.x and drives
// them over HTTP. Its harness is shared by the end-to-end tests; the
// processes and the network faults come from testkit/proc and
// testkit/netem, which jepsen/ uses too.
package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/netem"
	"github.com/corral-dev/corral/testkit/proc"
)

// Binary returns the corral binary the agents run: $CORRAL_BIN when set,
// else ./cmd/corral built once per test process, with the race detector
// when CORRAL_RACE=1 or CI=true (see testkit/proc).
func Binary(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := proc.Corral(filepath.Dir(filepath.Dir(file)))
	if err != nil {
		t.Fatal(err)
	}
	if b.Took > 0 {
		t.Logf("built corral (race detector %v) in %s", b.Race, b.Took.Round(time.Millisecond))
	}
	return b.Path
}

// Agent is one corral agent process.
type Agent struct {
	Name       string
	IP         string
	HTTPPort   int
	RaftPort   int
	GossipPort int
	DataDir    string
	Args       []string // extra flags
	Env        []string
	// Bin, when set, is the binary this agent runs from its next start
	// on (a rolling upgrade replaces it one agent at a time); empty: the
	// cluster's.
	Bin string

	c       *Cluster
	mu      sync.Mutex
	p       *proc.Proc
	cgroup  string // cgroup2 directory it starts in ("": the test's)
	cgroupR string // the same relative to the mount, for netem
}

// Cluster is a set of agent processes sharing one admin token, and one
// peer token among themselves.
type Cluster struct {
	t     testing.TB
	Bin   string
	Dir   string
	Token string
	// PeerToken is the agents' [auth] peer_token: the peers' own secret,
	// which no client uses.
	PeerToken string
	Agents    []*Agent
	// TLS, when set, is how the test reaches agents that serve HTTPS.
	TLS *tls.Config
}

// Options tune a cluster.
type Options struct {
	BaseIP    int      // last octet of the first peer (default 2 → 127.0.0.2)
	ExtraArgs []string // flags for every agent
	Env       []string // KEY=VALUE environment of every agent
	// Cgroups, when set, starts each agent in the group of its name, so
	// that netem can tell its packets apart (see Agent.NetHost).
	Cgroups *proc.Cgroups
	// TLS, when set, makes the harness speak HTTPS to the agents with it
	// (the agents get their [tls] files through Env or adjust).
	TLS *tls.Config
	// Bin, when set, is the binary the agents run instead of Binary's.
	Bin string
}

// Start launches n agents bootstrapped with --bootstrap-expect n.
func Start(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	return StartWith(t, n, opts, nil)
}

// StartWith is Start with a hook that adjusts each agent (its Args and
// Env) before its first start: a host's kind is part of its identity, so
// a cluster mixing hypervisor and ironic hosts must give each agent its
// kind from the beginning. adjust may be nil.
func StartWith(t testing.TB, n int, opts Options, adjust func(i int, a *Agent)) *Cluster {
	t.Helper()
	if opts.BaseIP == 0 {
		opts.BaseIP = 2
	}
	bin := opts.Bin
	if bin == "" {
		bin = Binary(t)
	}
	c := &Cluster{t: t, Bin: bin, Dir: t.TempDir(), Token: "e2e-admin-token-0123456789",
		PeerToken: "e2e-peer-token-0123456789", TLS: opts.TLS}
	t.Cleanup(c.StopAll)
	for i := 0; i < n; i++ {
		ip := fmt.Sprintf("127.0.0.%d", opts.BaseIP+i)
		a := &Agent{Name: fmt.Sprintf("peer%d", i+1), IP: ip, c: c,
			HTTPPort: freePort(t, ip), RaftPort: freePort(t, ip), GossipPort: freePort(t, ip),
			Args: append([]string{"--bootstrap-expect", strconv.Itoa(n)}, opts.ExtraArgs...),
			Env:  append([]string(nil), opts.Env...)}
		a.DataDir = filepath.Join(c.Dir, a.Name)
		if opts.Cgroups != nil {
			a.cgroup, a.cgroupR = opts.Cgroups.Dir(a.Name), opts.Cgroups.Rel(a.Name)
		}
		c.Agents = append(c.Agents, a)
	}
	// Every agent lists every peer, as the deploy examples do, so a
	// restarted agent finds the others whichever it is.
	for i, a := range c.Agents {
		for _, o := range c.Agents {
			a.Args = append(a.Args, "--join", o.GossipAddr())
		}
		if adjust != nil {
			adjust(i, a)
		}
	}
	for _, a := range c.Agents {
		a.Start()
	}
	return c
}

func freePort(t testing.TB, ip string) int {
	t.Helper()
	port, err := proc.FreePort(ip)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// GossipAddr is the agent's gossip IP:PORT.
func (a *Agent) GossipAddr() string { return net.JoinHostPort(a.IP, strconv.Itoa(a.GossipPort)) }

// URL is the agent's API base URL.
func (a *Agent) URL() string {
	scheme := "http://"
	if a.c.TLS != nil {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(a.IP, strconv.Itoa(a.HTTPPort))
}

// Client returns an admin API client for the agent.
func (a *Agent) Client() *client.Client {
	c := client.New(a.URL(), a.c.Token)
	if a.c.TLS != nil {
		_ = c.UseTLS(a.c.TLS) // never fails with a configuration
	}
	return c
}

// NetHost is the agent as netem sees it: its address and, when the
// cluster was started with Cgroups, its cgroup.
func (a *Agent) NetHost() netem.Host { return netem.Host{Name: a.Name, IP: a.IP, Cgroup: a.cgroupR} }

// LogPath is the file the agent's output is appended to.
func (a *Agent) LogPath() string { return filepath.Join(a.c.Dir, a.Name+".log") }

// process returns the agent's process, created from its current Args and
// Env (which may have changed since the last start).
func (a *Agent) process() *proc.Proc {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.p == nil {
		a.p = proc.New(proc.Spec{Name: a.Name, Path: a.c.Bin, LogPath: a.LogPath(), Cgroup: a.cgroup})
	}
	return a.p
}

// Start launches the agent process (again, after Kill or Stop).
func (a *Agent) Start() {
	a.c.t.Helper()
	p := a.process()
	p.Path = a.c.Bin
	if a.Bin != "" {
		p.Path = a.Bin
	}
	p.Args = append([]string{"agent", "--name", a.Name, "--data-dir", a.DataDir, "--bind", a.IP,
		"--http-port", strconv.Itoa(a.HTTPPort), "--raft-port", strconv.Itoa(a.RaftPort),
		"--gossip-port", strconv.Itoa(a.GossipPort), "--log-format", "json"}, a.Args...)
	// The suites boot more servers in the admin's project than Nova's
	// default [quota] allows; a test of quotas sets its own (a.Env).
	p.Env = append([]string{"CORRAL_ADMIN_TOKEN=" + a.c.Token, "CORRAL_AUTH_PEER_TOKEN=" + a.c.PeerToken,
		"CORRAL_QUOTA_INSTANCES=-1", "CORRAL_QUOTA_CORES=-1", "CORRAL_QUOTA_RAM=-1"}, a.Env...)
	if err := p.Start(); err != nil {
		a.c.t.Fatal(err)
	}
}

// Running reports whether the process is alive.
func (a *Agent) Running() bool { return a.process().Running() }

// Kill sends SIGKILL and waits for the process to exit; it fails the test
// when the agent was not running or did not exit.
func (a *Agent) Kill() {
	a.c.t.Helper()
	if err := a.process().Kill(); err != nil {
		a.c.t.Fatal(err)
	}
}

// Stop sends SIGTERM and waits up to timeout for the exit, then kills.
func (a *Agent) Stop(timeout time.Duration) {
	a.c.t.Helper()
	if err := a.process().Stop(timeout); err != nil {
		a.c.t.Fatal(err)
	}
}

// Pause sends SIGSTOP and waits until the agent is stopped; Resume sends
// SIGCONT. Either fails the test when the agent is not running.
func (a *Agent) Pause() {
	a.c.t.Helper()
	if err := a.process().Pause(); err != nil {
		a.c.t.Fatal(err)
	}
}

func (a *Agent) Resume() {
	a.c.t.Helper()
	if err := a.process().Resume(); err != nil {
		a.c.t.Fatal(err)
	}
}

// Wait waits for the process to exit; false on timeout.
func (a *Agent) Wait(timeout time.Duration) bool { return a.process().Wait(timeout) }

// StopAll kills every agent still running, then fails the test if an
// agent's log holds a data race report (agents built with -race), and
// shows the log tails of a failed test.
func (c *Cluster) StopAll() {
	for _, a := range c.Agents {
		p := a.process()
		_ = p.Resume() // not running is fine here
		if err := p.Kill(); err != nil && !errors.Is(err, proc.ErrNotRunning) {
			c.t.Errorf("stop %s: %v", a.Name, err)
		}
	}
	for _, a := range c.Agents {
		races, err := proc.DataRaces(a.LogPath())
		if err != nil {
			c.t.Errorf("read log of %s: %v", a.Name, err)
		}
		for _, r := range races {
			c.t.Errorf("agent %s hit a data race:\n%s", a.Name, r)
		}
	}
	if c.t.Failed() {
		for _, a := range c.Agents {
			if tail, err := proc.Tail(a.LogPath(), 4000); err == nil && tail != "" {
				c.t.Logf("--- log tail of %s ---\n%s", a.Name, tail)
			}
		}
	}
}

// Ready reports whether the agent's /readyz answers 200.
func (a *Agent) Ready(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL()+"/readyz", nil)
	resp, err := a.Client().HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s /readyz: %d", a.Name, resp.StatusCode)
	}
	return nil
}

// RaftStatus is the subset of GET /v1/cluster/raft the harness uses.
type RaftStatus struct {
	State     string   `json:"state"`
	Leader    string   `json:"leader"`
	Term      uint64   `json:"term"`
	Voters    []string `json:"voters"`
	Nonvoters []string `json:"nonvoters"`
}

// Raft returns the agent's raft status.
func (a *Agent) Raft(ctx context.Context) (RaftStatus, error) {
	var st RaftStatus
	err := a.Client().Do(ctx, http.MethodGet, "/v1/cluster/raft", nil, &st)
	return st, err
}

// Leader polls the running agents until one reports being leader.
func (c *Cluster) Leader(timeout time.Duration) *Agent {
	c.t.Helper()
	var leader *Agent
	testkit.Eventually(c.t, timeout, func() error {
		for _, a := range c.Agents {
			if !a.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := a.Raft(ctx)
			cancel()
			if err == nil && st.State == "leader" {
				leader = a
				return nil
			}
		}
		return errors.New("no running agent is leader")
	})
	return leader
}

// AwaitReady waits until every running agent is ready.
func (c *Cluster) AwaitReady(timeout time.Duration) {
	c.t.Helper()
	testkit.Eventually(c.t, timeout, func() error {
		for _, a := range c.Agents {
			if !a.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := a.Ready(ctx)
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	})
}
