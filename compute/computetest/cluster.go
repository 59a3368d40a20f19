// Package computetest is a cluster for the tests of virt drivers and of
// what they share: a log that is a local fsm.Store, whose commands apply
// at once, and a runner of a compute.Manager over it. It imports compute
// and fsm only; it is for tests, nothing else imports it.
package computetest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// Cluster is the host Host of a cluster whose log is a local store.
type Cluster struct {
	Host  string
	store *fsm.Store

	mu   sync.Mutex
	idx  uint64
	cmds []fsm.Command
	// Refuse, when set, refuses the commands it returns an error for.
	Refuse  func(fsm.Command) error
	refused int
}

// New returns a cluster whose hosts are hosts (kind kind; the first is
// this host), with flavor f1 (1 VCPU, 1 MB, 1 GB).
func New(t testing.TB, kind string, hosts ...string) *Cluster {
	t.Helper()
	c := &Cluster{Host: hosts[0], store: fsm.New()}
	for i, h := range hosts {
		ip := fmt.Sprintf("127.0.0.%d", i+2)
		c.Must(t, &fsm.RegisterHost{Name: h, RaftAddr: ip + ":1", APIAddr: ip + ":2", GossipAddr: ip + ":3", Kind: kind})
	}
	c.Must(t, &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "f1", Name: "small", VCPUs: 1, RAM: 1, Disk: 1, RxTxFactor: 1}})
	return c
}

// Name implements compute.Cluster.
func (c *Cluster) Name() string { return c.Host }

// Store implements compute.Cluster.
func (c *Cluster) Store() *fsm.Store { return c.store }

// IsLeader implements compute.Cluster.
func (c *Cluster) IsLeader() bool { return true }

// CommandKnown: every peer knows every command type.
func (c *Cluster) CommandKnown(fsm.CommandType) bool { return true }

// Propose applies cmd at once, unless Refuse refuses it.
func (c *Cluster) Propose(_ context.Context, cmd fsm.Command) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Refuse != nil {
		if err := c.Refuse(cmd); err != nil {
			c.refused++
			return 0, err
		}
	}
	c.idx++
	if cmd.Header().At.IsZero() {
		cmd.Header().At = time.Date(2026, 12, 1, 0, 0, 0, int(c.idx), time.UTC)
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return 0, err
	}
	c.cmds = append(c.cmds, cmd)
	return c.idx, c.store.Apply(c.idx, data).Err
}

// Must proposes cmd and fails the test if it is refused.
func (c *Cluster) Must(t testing.TB, cmd fsm.Command) {
	t.Helper()
	if _, err := c.Propose(context.Background(), cmd); err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
}

// Refused is how many commands Refuse refused.
func (c *Cluster) Refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// PortIntents are the port intents applied, as "step port-or-network".
func (c *Cluster) PortIntents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, cmd := range c.cmds {
		if in, ok := cmd.(*fsm.SetPortIntent); ok {
			out = append(out, in.Step+" "+in.PortID+in.NetworkID)
		}
	}
	return out
}

// Run runs this host's manager over virt until the test ends, logging to
// the test's output.
func (c *Cluster) Run(t *testing.T, cfg compute.Config, virt compute.Virt) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	m, err := compute.New(cfg, c, virt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// WaitStatus waits until server id has status want, and returns it.
func (c *Cluster) WaitStatus(t testing.TB, id string, want fsm.ServerStatus, within time.Duration) fsm.Server {
	t.Helper()
	var s fsm.Server
	testkit.Eventually(t, within, func() error {
		var err error
		if s, err = c.store.Server(id); err != nil || s.Status != want || s.TaskState != "" {
			return fmt.Errorf("server %s is %s/%s (%v), want %s", id, s.Status, s.TaskState, err, want)
		}
		return nil
	})
	return s
}
