package cluster

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
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
func (a *Agent) Pause() error { return a.p.Pause() }

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
