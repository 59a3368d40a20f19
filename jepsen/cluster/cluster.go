package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/testkit/proc"
)

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
	PKI      *PKI      // nil: plain HTTP
	Keystone *Keystone // nil: static tokens only
	Neutron  *Neutron  // nil: corral's own networks
	// NeutronReapGrace is the reaper's grace the agents get with Neutron
	// (NeutronReapGraceOption).
	NeutronReapGrace time.Duration
	mu               sync.Mutex
	gossipKey        string // "": gossip in clear
}

// New lays out n agents on consecutive addresses from baseIP.
func New(bin, dir, logDir, token, ironicURL, baseIP string, n int, asUsers bool) (*Cluster, error) {
	peerToken, err := randomToken("jepsen-peer-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin, Dir: dir, LogDir: logDir, Token: token, PeerToken: peerToken, IronicURL: ironicURL,
		Env: []string{"CORRAL_ADMIN_TOKEN=" + token, "CORRAL_AUTH_PEER_TOKEN=" + peerToken, "CORRAL_IRONIC_SYNC_INTERVAL=1s",
			// Mass boots go past Nova's default [quota] of one project.
			"CORRAL_QUOTA_INSTANCES=-1", "CORRAL_QUOTA_CORES=-1", "CORRAL_QUOTA_RAM=-1"}}
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

// Attach adds an agent whose process runs elsewhere, or not at all, at
// ip and httpPort (the suite's tests stand fake agents up this way); it
// is never started, so Start fails and Running is false.
func (c *Cluster) Attach(name, ip string, httpPort int) *Agent {
	a := &Agent{Name: name, IP: ip, HTTPPort: httpPort, cl: c, p: proc.New(proc.Spec{Name: name})}
	c.Agents = append(c.Agents, a)
	return a
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
func (c *Cluster) Leader(ctx context.Context, api *client.Corral) string {
	best, term := "", uint64(0)
	for _, a := range c.Agents {
		if !a.Running() || a.Paused() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var st client.RaftStatus
		err := api.GetJSON(cctx, a.URL(), client.RaftPath, &st)
		cancel()
		if err == nil && st.Leader != "" && st.Term >= term {
			best, term = st.Leader, st.Term
		}
	}
	return best
}

// randomToken is prefix and 16 random bytes in hex.
func randomToken(prefix string) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}
