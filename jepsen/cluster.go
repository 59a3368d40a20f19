package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/corral-dev/corral/testkit/netem"
	"github.com/corral-dev/corral/testkit/proc"
)

// Agent is one `corral agent` process on its own loopback address.
type Agent struct {
	Name       string
	IP         string
	HTTPPort   int
	RaftPort   int
	GossipPort int
	DataDir    string
	UID        int // the agent runs as this uid (0: as ourselves); partitions match it

	cl *Cluster
	p  *proc.Proc
}

// URL is the agent's API root.
func (a *Agent) URL() string {
	scheme := "http://"
	if a.cl.PKI != nil {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(a.IP, strconv.Itoa(a.HTTPPort))
}

// ConfPath is the agent's configuration file (TLS, gossip key, Keystone).
func (a *Agent) ConfPath() string { return filepath.Join(a.cl.Dir, a.Name+".conf") }

// GossipAddr is the agent's gossip IP:PORT.
func (a *Agent) GossipAddr() string { return net.JoinHostPort(a.IP, strconv.Itoa(a.GossipPort)) }

// NetHost is the agent as the firewall sees it.
func (a *Agent) NetHost() netem.Host { return netem.Host{Name: a.Name, IP: a.IP, UID: a.UID} }

// LogPath is the agent's log file.
func (a *Agent) LogPath() string { return filepath.Join(a.cl.LogDir, a.Name+".log") }

// Cluster is the set of agents under test.
type Cluster struct {
	Bin    string
	Dir    string // data dirs live here
	LogDir string
	Token  string
	// PeerToken is the peers' own secret ([auth] peer_token), never a
	// client's: clients use Token.
	PeerToken string
	IronicURL string
	Agents    []*Agent
	Env       []string

	// Set by Configure, before the first start.
	PKI       *PKI      // nil: plain HTTP
	Keystone  *Keystone // nil: static tokens only
	mu        sync.Mutex
	gossipKey string // "": gossip in clear
}

// NewCluster lays out n agents on consecutive addresses from baseIP.
func NewCluster(bin, dir, logDir, token, ironicURL, baseIP string, n int, asUsers bool) (*Cluster, error) {
	peerToken, err := randomToken("jepsen-peer-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin, Dir: dir, LogDir: logDir, Token: token, PeerToken: peerToken, IronicURL: ironicURL,
		Env: []string{"CORRAL_ADMIN_TOKEN=" + token, "CORRAL_AUTH_PEER_TOKEN=" + peerToken, "CORRAL_IRONIC_SYNC_INTERVAL=1s"}}
	for i := 0; i < n; i++ {
		aip, err := proc.Loopback(baseIP, i)
		if err != nil {
			return nil, fmt.Errorf("base IP: %w", err)
		}
		a := &Agent{Name: fmt.Sprintf("n%d", i+1), IP: aip, cl: c}
		if a.HTTPPort, err = proc.FreePort(aip); err != nil {
			return nil, err
		}
		if a.RaftPort, err = proc.FreePort(aip, a.HTTPPort); err != nil {
			return nil, err
		}
		if a.GossipPort, err = proc.FreePort(aip, a.HTTPPort, a.RaftPort); err != nil {
			return nil, err
		}
		a.DataDir = filepath.Join(dir, a.Name)
		if asUsers {
			a.UID = 61100 + i + 1
		}
		c.Agents = append(c.Agents, a)
	}
	for _, a := range c.Agents {
		args := []string{"agent", "--name", a.Name, "--data-dir", a.DataDir, "--bind", a.IP,
			"--http-port", strconv.Itoa(a.HTTPPort), "--raft-port", strconv.Itoa(a.RaftPort),
			"--gossip-port", strconv.Itoa(a.GossipPort), "--bootstrap-expect", strconv.Itoa(len(c.Agents)),
			"--log-format", "json"}
		for _, o := range c.Agents {
			args = append(args, "--join", o.GossipAddr())
		}
		if c.IronicURL != "" {
			args = append(args, "--ironic-url", c.IronicURL)
		}
		name := a.Name
		a.p = proc.New(proc.Spec{Name: a.Name, Path: bin, Args: args, Env: c.Env, LogPath: a.LogPath(), UID: a.UID,
			Banner: func(n int) string {
				return fmt.Sprintf("{\"jepsen\":\"start %d of %s at %s\"}", n, name, time.Now().Format(time.RFC3339Nano))
			}})
	}
	return c, nil
}

// Agent returns the agent called name.
func (c *Cluster) Agent(name string) *Agent {
	for _, a := range c.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func (c *Cluster) prepareDataDir(a *Agent) error {
	if err := os.MkdirAll(a.DataDir, 0o755); err != nil {
		return err
	}
	if a.UID != 0 {
		return os.Chown(a.DataDir, a.UID, a.UID)
	}
	return nil
}

// Start launches the agent (again, after a kill); a running agent is left
// alone.
func (a *Agent) Start() error {
	if a.p.Running() {
		return nil
	}
	if err := a.cl.prepareDataDir(a); err != nil {
		return err
	}
	return a.p.Start()
}

// Running reports whether the process is alive (paused counts as alive).
func (a *Agent) Running() bool { return a.p.Running() }

// Paused reports whether the agent is stopped with SIGSTOP.
func (a *Agent) Paused() bool { return a.p.Paused() }

// Kill sends SIGKILL and waits for the exit; an error when the agent was
// not running or did not exit.
func (a *Agent) Kill() error { return a.p.Kill() }

// Terminate sends SIGTERM (a graceful stop) and kills after timeout.
func (a *Agent) Terminate(timeout time.Duration) error { return a.p.Stop(timeout) }

// Pause sends SIGSTOP and waits until the agent is stopped; Resume sends
// SIGCONT. Each fails when the agent is not running.
func (a *Agent) Pause() error  { return a.p.Pause() }
func (a *Agent) Resume() error { return a.p.Resume() }

// Wipe kills the agent and empties its data directory.
func (a *Agent) Wipe() error {
	if err := a.Kill(); err != nil {
		return err
	}
	if err := os.RemoveAll(a.DataDir); err != nil {
		return err
	}
	return a.cl.prepareDataDir(a)
}

// Start launches every agent.
func (c *Cluster) Start() error {
	for _, a := range c.Agents {
		if err := a.Start(); err != nil {
			return err
		}
	}
	return nil
}

// HealProcesses resumes paused agents and restarts dead ones.
func (c *Cluster) HealProcesses() error {
	var errs []error
	for _, a := range c.Agents {
		if a.Paused() {
			if err := a.Resume(); err != nil {
				errs = append(errs, err)
			}
		}
		if !a.Running() {
			if err := a.Start(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Stop kills every agent (resuming paused ones first).
func (c *Cluster) Stop() error {
	var errs []error
	for _, a := range c.Agents {
		_ = a.Resume() // not running is fine here
		if err := a.Kill(); err != nil && !errors.Is(err, proc.ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Running lists the names of agents whose process runs and is not paused.
func (c *Cluster) Running() map[string]bool {
	out := map[string]bool{}
	for _, a := range c.Agents {
		out[a.Name] = a.Running() && !a.Paused()
	}
	return out
}

// DataRaces returns, per agent, the race detector's reports in its log
// (agents built with -race).
func (c *Cluster) DataRaces() (map[string][]string, error) {
	out := map[string][]string{}
	var errs []error
	for _, a := range c.Agents {
		rs, err := proc.DataRaces(a.LogPath())
		if err != nil {
			errs = append(errs, err)
		}
		if len(rs) > 0 {
			out[a.Name] = rs
		}
	}
	return out, errors.Join(errs...)
}

// Leader asks every reachable agent for the raft leader and returns the
// name reported with the highest term ("" when none is known).
func (c *Cluster) Leader(ctx context.Context, api *Corral) string {
	best, term := "", uint64(0)
	for _, a := range c.Agents {
		if !a.Running() || a.Paused() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var st RaftStatus
		err := api.GetJSON(cctx, a.URL(), "/v1/cluster/raft", &st)
		cancel()
		if err == nil && st.Leader != "" && st.Term >= term {
			best, term = st.Leader, st.Term
		}
	}
	return best
}

// Configure gives every agent a configuration file with TLS (pki), the
// gossip key and Keystone (each optional), and makes it read the file at
// every start.
func (c *Cluster) Configure(pki *PKI, gossipKey string, ks *Keystone) error {
	c.PKI, c.Keystone = pki, ks
	c.mu.Lock()
	c.gossipKey = gossipKey
	c.mu.Unlock()
	if err := c.writeConfigs(); err != nil {
		return err
	}
	for _, a := range c.Agents {
		a.p.Args = append(a.p.Args, "--config", a.ConfPath())
	}
	return nil
}

// GossipKey is the key the agents' configuration seeds a new keyring with.
func (c *Cluster) GossipKey() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gossipKey
}

// SetGossipKey rewrites every agent's `[gossip] encrypt` after a rotation,
// as an operator must, so that an agent restarted with an empty data dir
// joins with the current key.
func (c *Cluster) SetGossipKey(key string) error {
	c.mu.Lock()
	c.gossipKey = key
	c.mu.Unlock()
	return c.writeConfigs()
}

func (c *Cluster) writeConfigs() error {
	key := c.GossipKey()
	for _, a := range c.Agents {
		ac := AgentConfig{GossipKey: key, Keystone: c.Keystone, PeerToken: c.PeerToken}
		if c.PKI != nil {
			ac.CA, ac.Cert, ac.Key = c.PKI.CA, c.PKI.Certs[a.Name], c.PKI.Keys[a.Name]
		}
		if err := writeFileAtomic(a.ConfPath(), []byte(ac.INI()), a.UID); err != nil {
			return fmt.Errorf("write %s: %w", a.ConfPath(), err)
		}
	}
	return nil
}

// randomToken is prefix and 16 random bytes in hex.
func randomToken(prefix string) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}
