package cluster

import (
	"context"
	"errors"
	"maps"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/fsm"
)

// The leader's second signal of a death: evidence that a host's process
// is gone, as opposed to slow or out of reach.
//
// When raft cannot heartbeat a host, or gossip reports it dead, the leader
// dials the host's raft and gossip ports every livenessProbeEvery. A port
// that nothing listens on is refused at once by the host's kernel (a TCP
// reset); a process that was killed or crashed closes its ports, so both
// are refused. Packet loss, a partition or a powered-off machine only
// delay or lose the dial (a timeout), and a slow or paused process still
// has its listeners, so the kernel accepts the connection: neither is
// ever counted as refused. A host whose two ports keep refusing for
// RefusedGrace is confirmed dead without waiting for gossip's suspicion
// timeout and DownGrace (failover.go).
const (
	livenessProbeEvery   = 100 * time.Millisecond
	livenessDialTimeout  = 250 * time.Millisecond
	livenessObservations = 64
)

// liveness is what the leader's probes learned in this leadership.
type liveness struct {
	mu      sync.Mutex
	failing map[string]bool     // raft heartbeats to the host are failing
	refused map[string]refusals // runs of refused probes
	// back: when a host that was refusing accepted a connection again
	// (its process restarted).
	back map[string]time.Time
	// poke wakes the leader loop when a run of refusals has lasted the grace.
	poke chan struct{}
}

func newLiveness() *liveness {
	return &liveness{failing: map[string]bool{}, refused: map[string]refusals{}, back: map[string]time.Time{},
		poke: make(chan struct{}, 1)}
}

// snapshot returns copies of the runs of refusals and of the times hosts
// accepted connections again, for the judge.
func (lv *liveness) snapshot() (map[string]refusals, map[string]time.Time) {
	if lv == nil {
		return nil, nil
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return maps.Clone(lv.refused), maps.Clone(lv.back)
}

// refusals is a run of probes of one host that were refused, or that
// timed out (under packet loss a probe may get no answer at all), with no
// probe accepted in between.
type refusals struct {
	first, last time.Time // the first and the latest refused probe
}

// livenessTarget is a host the leader probes.
type livenessTarget struct {
	name, raftAddr, gossipAddr string
}

// livenessLoop probes, while this peer leads, the hosts that raft cannot
// heartbeat or that gossip reports dead, and records which of them refuse
// connections on both their raft and gossip ports.
func (n *Node) livenessLoop(ctx context.Context, lv *liveness) {
	obsCh := make(chan raft.Observation, livenessObservations)
	obs := raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	defer n.raft.DeregisterObserver(obs)
	tick := time.NewTicker(livenessProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-obsCh:
			lv.mu.Lock()
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				first := !lv.failing[string(d.PeerID)]
				lv.failing[string(d.PeerID)] = true
				lv.mu.Unlock()
				if first {
					n.probeHosts(ctx, lv) // at once on the first failure
				}
				continue
			case raft.ResumedHeartbeatObservation:
				delete(lv.failing, string(d.PeerID))
			}
			lv.mu.Unlock()
			continue
		case <-tick.C:
		}
		n.probeHosts(ctx, lv)
	}
}

// livenessTargets lists the hosts to probe: up hosts that raft cannot
// heartbeat or that gossip reports dead, and hosts in a run of refusals
// that gossip still reports alive (a host confirmed dead by its refusals
// must not be taken back up on gossip's stale news).
func (n *Node) livenessTargets(lv *liveness) []livenessTarget {
	alive := map[string]bool{}
	for _, m := range n.counted(n.gossip.snapshot()) {
		alive[m.Name] = m.Status == MemberAlive
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	var out []livenessTarget
	for _, h := range n.store.Hosts() {
		if h.Name == n.cfg.Name || h.RaftAddr == "" || h.GossipAddr == "" {
			continue
		}
		_, inRun := lv.refused[h.Name]
		switch {
		case h.Status == fsm.HostUp && (lv.failing[h.Name] || !alive[h.Name]):
		case inRun && alive[h.Name]:
		default:
			delete(lv.refused, h.Name)
			continue
		}
		out = append(out, livenessTarget{name: h.Name, raftAddr: h.RaftAddr, gossipAddr: h.GossipAddr})
	}
	return out
}

// probeHosts probes every target once, all at once, and updates the runs
// of refusals; it pokes the leader loop when a run reaches the grace.
func (n *Node) probeHosts(ctx context.Context, lv *liveness) {
	targets := n.livenessTargets(lv)
	if len(targets) == 0 {
		return
	}
	refused, accepted := make([]bool, len(targets)), make([]bool, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { refused[i], accepted[i] = probe(ctx, t.raftAddr, t.gossipAddr) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	due := false
	lv.mu.Lock()
	for i, t := range targets {
		run, inRun := lv.refused[t.name]
		switch {
		case accepted[i]:
			// Probed again on the next failed heartbeat, should one come
			// (raft may drop an observation, such as the resumption).
			delete(lv.failing, t.name)
			if inRun {
				n.log.Info("host accepts connections again", "host", t.name)
				lv.back[t.name] = now
			}
			delete(lv.refused, t.name)
		case !refused[i]:
			// No answer (a timeout): no evidence either way; a run goes on.
		case !inRun:
			lv.refused[t.name] = refusals{first: now, last: now}
			delete(lv.back, t.name)
			n.log.Warn("host refuses connections on its raft and gossip ports: its process is gone", "host", t.name,
				"raft", t.raftAddr, "gossip", t.gossipAddr, "grace", n.cfg.RefusedGrace)
		default:
			run.last = now
			lv.refused[t.name] = run
			if run.last.Sub(run.first) >= n.cfg.RefusedGrace {
				due = true
			}
		}
	}
	lv.mu.Unlock()
	if due {
		select {
		case lv.poke <- struct{}{}:
		default:
		}
	}
}

// probe dials both addresses at once and reports whether both refused the
// connection, and whether either accepted it (the process is there).
func probe(ctx context.Context, a, b string) (refused, accepted bool) {
	var ra, rb dialResult
	var wg sync.WaitGroup
	wg.Go(func() { ra = dial(ctx, a) })
	rb = dial(ctx, b)
	wg.Wait()
	return ra == dialRefused && rb == dialRefused, ra == dialAccepted || rb == dialAccepted
}

type dialResult int

const (
	dialUnknown  dialResult = iota // timed out or failed otherwise: says nothing
	dialRefused                    // the host's kernel answered that nothing listens
	dialAccepted                   // something listens: the process is there
)

// dial opens a TCP connection to addr and closes it. Only a host whose
// kernel answers for a port nobody listens on refuses; a timeout or any
// other error says nothing.
func dial(ctx context.Context, addr string) dialResult {
	d := net.Dialer{Timeout: livenessDialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	switch {
	case err == nil:
		_ = c.Close()
		return dialAccepted
	case errors.Is(err, syscall.ECONNREFUSED):
		return dialRefused
	}
	return dialUnknown
}
