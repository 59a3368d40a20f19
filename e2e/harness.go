// Package e2e starts real `corral agent` processes on 127.0.0.x and drives
// them over HTTP. Its harness is shared by the end-to-end tests.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary builds the corral binary once per test process (or returns
// $CORRAL_BIN when set).
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("CORRAL_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "corral-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		builtBin = filepath.Join(dir, "corral")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/corral")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
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

	c    *Cluster
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Cluster is a set of agent processes sharing one admin token.
type Cluster struct {
	t      testing.TB
	Bin    string
	Dir    string
	Token  string
	Agents []*Agent
}

// Options tune a cluster.
type Options struct {
	BaseIP    int      // last octet of the first peer (default 2 → 127.0.0.2)
	ExtraArgs []string // flags for every agent
	Env       []string // KEY=VALUE environment of every agent
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
	c := &Cluster{t: t, Bin: Binary(t), Dir: t.TempDir(), Token: "e2e-admin-token-0123456789"}
	t.Cleanup(c.StopAll)
	for i := 0; i < n; i++ {
		ip := fmt.Sprintf("127.0.0.%d", opts.BaseIP+i)
		a := &Agent{Name: fmt.Sprintf("peer%d", i+1), IP: ip, c: c,
			HTTPPort: freePort(t, ip), RaftPort: freePort(t, ip), GossipPort: freePort(t, ip),
			Args: append([]string{"--bootstrap-expect", strconv.Itoa(n)}, opts.ExtraArgs...),
			Env:  append([]string(nil), opts.Env...)}
		a.DataDir = filepath.Join(c.Dir, a.Name)
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
	for {
		l, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatalf("no free port on %s: %v", ip, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// memberlist also needs the UDP port.
		u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			u.Close()
			return port
		}
	}
}

// GossipAddr is the agent's gossip IP:PORT.
func (a *Agent) GossipAddr() string { return net.JoinHostPort(a.IP, strconv.Itoa(a.GossipPort)) }

// URL is the agent's API base URL.
func (a *Agent) URL() string { return "http://" + net.JoinHostPort(a.IP, strconv.Itoa(a.HTTPPort)) }

// Client returns an admin API client for the agent.
func (a *Agent) Client() *client.Client { return client.New(a.URL(), a.c.Token) }

// Start launches the agent process (again, after Kill or Stop).
func (a *Agent) Start() {
	a.c.t.Helper()
	args := append([]string{"agent", "--name", a.Name, "--data-dir", a.DataDir, "--bind", a.IP,
		"--http-port", strconv.Itoa(a.HTTPPort), "--raft-port", strconv.Itoa(a.RaftPort),
		"--gossip-port", strconv.Itoa(a.GossipPort), "--log-format", "json"}, a.Args...)
	cmd := exec.Command(a.c.Bin, args...)
	cmd.Env = append(append(os.Environ(), "CORRAL_ADMIN_TOKEN="+a.c.Token), a.Env...)
	logf, err := os.OpenFile(filepath.Join(a.c.Dir, a.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		a.c.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		a.c.t.Fatalf("start %s: %v", a.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	a.mu.Lock()
	a.cmd, a.done = cmd, done
	a.mu.Unlock()
}

// Running reports whether the process is alive.
func (a *Agent) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

func (a *Agent) signal(sig syscall.Signal) {
	a.mu.Lock()
	cmd := a.cmd
	a.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL and waits for the process to exit.
func (a *Agent) Kill() {
	a.signal(syscall.SIGKILL)
	a.Wait(10 * time.Second)
}

// Stop sends SIGTERM and waits up to timeout for the exit.
func (a *Agent) Stop(timeout time.Duration) {
	a.signal(syscall.SIGTERM)
	if !a.Wait(timeout) {
		a.Kill()
	}
}

// Pause and Resume send SIGSTOP and SIGCONT.
func (a *Agent) Pause()  { a.signal(syscall.SIGSTOP) }
func (a *Agent) Resume() { a.signal(syscall.SIGCONT) }

// Wait waits for the process to exit; false on timeout.
func (a *Agent) Wait(timeout time.Duration) bool {
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// StopAll kills every agent still running.
func (c *Cluster) StopAll() {
	for _, a := range c.Agents {
		a.Resume()
		if a.Running() {
			a.Kill()
		}
	}
	if c.t.Failed() {
		for _, a := range c.Agents {
			if b, err := os.ReadFile(filepath.Join(c.Dir, a.Name+".log")); err == nil {
				tail := b
				if len(tail) > 4000 {
					tail = tail[len(tail)-4000:]
				}
				c.t.Logf("--- log tail of %s ---\n%s", a.Name, tail)
			}
		}
	}
}

// Ready reports whether the agent's /readyz answers 200.
func (a *Agent) Ready(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL()+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
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
	Eventually(c.t, timeout, func() error {
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
	Eventually(c.t, timeout, func() error {
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

// Eventually polls f until it returns nil or the deadline passes.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(wait) // pacing the poll
		if wait < 200*time.Millisecond {
			wait *= 2
		}
	}
}
