package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
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

	cl     *Cluster
	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
	starts int
}

// URL is the agent's API root.
func (a *Agent) URL() string { return "http://" + net.JoinHostPort(a.IP, strconv.Itoa(a.HTTPPort)) }

// GossipAddr is the agent's gossip IP:PORT.
func (a *Agent) GossipAddr() string { return net.JoinHostPort(a.IP, strconv.Itoa(a.GossipPort)) }

// Cluster is the set of agents under test.
type Cluster struct {
	Bin       string
	Dir       string // data dirs live here
	LogDir    string
	Token     string
	IronicURL string
	Agents    []*Agent
	Env       []string
}

// NewCluster lays out n agents on consecutive addresses from baseIP.
func NewCluster(bin, dir, logDir, token, ironicURL, baseIP string, n int, asUsers bool) (*Cluster, error) {
	ip := net.ParseIP(baseIP).To4()
	if ip == nil || ip[0] != 127 {
		return nil, fmt.Errorf("base IP %q must be a loopback IPv4 address", baseIP)
	}
	c := &Cluster{Bin: bin, Dir: dir, LogDir: logDir, Token: token, IronicURL: ironicURL,
		Env: []string{"CORRAL_ADMIN_TOKEN=" + token, "CORRAL_IRONIC_SYNC_INTERVAL=1s"}}
	for i := 0; i < n; i++ {
		aip := net.IPv4(ip[0], ip[1], ip[2], ip[3]+byte(i)).String()
		a := &Agent{Name: fmt.Sprintf("n%d", i+1), IP: aip, cl: c}
		var err error
		if a.HTTPPort, err = freePort(aip, 0); err != nil {
			return nil, err
		}
		if a.RaftPort, err = freePort(aip, a.HTTPPort); err != nil {
			return nil, err
		}
		if a.GossipPort, err = freePort(aip, a.RaftPort); err != nil {
			return nil, err
		}
		a.DataDir = filepath.Join(dir, a.Name)
		if asUsers {
			a.UID = 61100 + i + 1
		}
		c.Agents = append(c.Agents, a)
	}
	return c, nil
}

// freePort finds a port free for TCP and UDP on ip, different from not.
func freePort(ip string, not int) (int, error) {
	for tries := 0; tries < 50; tries++ {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return 0, fmt.Errorf("no free port on %s: %w", ip, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port == not {
			continue
		}
		u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free TCP+UDP port on %s", ip)
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

// Start launches the agent (again, after a kill).
func (a *Agent) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil && !closed(a.done) {
		return nil
	}
	c := a.cl
	if err := c.prepareDataDir(a); err != nil {
		return err
	}
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
	cmd := exec.Command(c.Bin, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	logFile, err := os.OpenFile(filepath.Join(c.LogDir, a.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	a.starts++
	fmt.Fprintf(logFile, "{\"jepsen\":\"start %d of %s at %s\"}\n", a.starts, a.Name, time.Now().Format(time.RFC3339Nano))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if a.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.UID)}
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", a.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	a.cmd, a.done, a.paused = cmd, done, false
	return nil
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Running reports whether the process is alive (paused counts as alive).
func (a *Agent) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cmd != nil && !closed(a.done)
}

// Paused reports whether the agent is stopped with SIGSTOP.
func (a *Agent) Paused() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.paused && a.cmd != nil && !closed(a.done)
}

func (a *Agent) signal(sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil || a.cmd.Process == nil || closed(a.done) {
		return
	}
	_ = a.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		a.paused = true
	case syscall.SIGCONT, syscall.SIGKILL:
		a.paused = false
	}
}

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

// Kill sends SIGKILL and waits for the exit.
func (a *Agent) Kill() {
	a.signal(syscall.SIGKILL)
	a.Wait(10 * time.Second)
}

// Terminate sends SIGTERM (a graceful stop) and kills after timeout.
func (a *Agent) Terminate(timeout time.Duration) {
	a.signal(syscall.SIGCONT)
	a.signal(syscall.SIGTERM)
	if !a.Wait(timeout) {
		a.Kill()
	}
}

// Pause sends SIGSTOP; Resume sends SIGCONT.
func (a *Agent) Pause()  { a.signal(syscall.SIGSTOP) }
func (a *Agent) Resume() { a.signal(syscall.SIGCONT) }

// Wipe kills the agent and empties its data directory.
func (a *Agent) Wipe() error {
	a.Kill()
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
	var first error
	for _, a := range c.Agents {
		a.Resume()
		if !a.Running() {
			if err := a.Start(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Stop kills every agent (resuming paused ones first).
func (c *Cluster) Stop() {
	for _, a := range c.Agents {
		a.Resume()
		a.Kill()
	}
}

// Running lists the names of agents whose process runs and is not paused.
func (c *Cluster) Running() map[string]bool {
	out := map[string]bool{}
	for _, a := range c.Agents {
		out[a.Name] = a.Running() && !a.Paused()
	}
	return out
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
