package cluster

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// The leader's own ears: a signal of its own beside gossip's word and the
// refused connections (liveness.go).
//
// While it leads, the leader pings every other up host straight on its
// gossip port every hearingPingEvery (memberlist's ping, answered by the
// host's running process) and keeps when it last heard from each: an
// answer in time, or any gossip packet from the host's address (a late
// answer, the host's own probes and gossip), as its transport saw it. A
// process that is paused, or a host cut off or switched off, goes silent
// at once. A host that is only slow or starved of CPU still sends
// something now and then, however late, and packet loss drops a packet
// now and then, never all of them for a second.
//
// The judge (judge.go) confirms a death gossip reports once the leader
// has also heard nothing from the host for SilentGrace, without waiting
// for DownGrace. While the leader still hears the host, gossip's word
// alone takes it down only after DownGrace. A leader whose own gossip
// health is poor (it may be the slow one) does not trust its ears, and
// falls back to DownGrace, doubled.
const hearingPingEvery = 200 * time.Millisecond

// hearing is what the leader's pings learned in this leadership.
type hearing struct {
	mu    sync.Mutex
	since time.Time            // the leader began to listen
	heard map[string]time.Time // host → when it last answered
}

func newHearing(since time.Time) *hearing {
	return &hearing{since: since, heard: map[string]time.Time{}}
}

// snapshot returns when the leader began to listen and when it last
// heard from each host, for the judge: the latest of an answer to its
// ping and a packet from the host's gossip address in packets. Zero and
// nil when it does not listen (h is nil).
func (h *hearing) snapshot(hosts []fsm.Host, packets *packetLog) (time.Time, map[string]time.Time) {
	if h == nil {
		return time.Time{}, nil
	}
	h.mu.Lock()
	heard := maps.Clone(h.heard)
	h.mu.Unlock()
	for _, host := range hosts {
		if host.GossipAddr == "" {
			continue
		}
		if at := packets.lastFrom(host.GossipAddr); at.After(heard[host.Name]) {
			heard[host.Name] = at
		}
	}
	return h.since, heard
}

// answered records that host answered at t.
func (h *hearing) answered(host string, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t.After(h.heard[host]) {
		h.heard[host] = t
	}
}

// hearingLoop pings, while this peer leads, every other up host every
// hearingPingEvery, and notes when it last heard from each: an answer in
// time, or any packet from the host's gossip address.
func (n *Node) hearingLoop(ctx context.Context, h *hearing) {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer n.gossip.heard.watchOnly(nil)
	tick := time.NewTicker(hearingPingEvery)
	defer tick.Stop()
	for {
		var addrs []string
		for _, host := range n.store.Hosts() {
			if host.Name == n.cfg.Name || host.Status != fsm.HostUp || host.GossipAddr == "" {
				continue
			}
			addrs = append(addrs, host.GossipAddr)
			wg.Go(func() {
				if n.gossip.ping(host.Name, host.GossipAddr) && ctx.Err() == nil {
					h.answered(host.Name, time.Now())
				}
			})
		}
		n.gossip.heard.watchOnly(addrs)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
