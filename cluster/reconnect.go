package cluster

import "time"

// reconnectInterval is how often a peer tries to reach the members that
// gossip has declared dead.
const reconnectInterval = 5 * time.Second

// reconnectLoop contacts, every reconnectInterval, each member gossip has
// declared dead (not those that left). memberlist neither probes dead
// members nor exchanges state with them, so after a partition that lasted
// past the suspicion timeout each side would stay dead to the other once
// it heals; a state exchange with a reachable "dead" member lets it learn
// of its death and refute it.
func (n *Node) reconnectLoop() {
	t := time.NewTicker(reconnectInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		for _, m := range n.gossip.snapshot() {
			if m.Status != MemberDead || m.Name == n.cfg.Name || m.Addr == "" || n.ctx.Err() != nil {
				continue
			}
			if k, err := n.gossip.join([]string{m.Addr}); err == nil && k > 0 {
				n.log.Info("reached a member gossip had declared dead", "member", m.Name, "gossip", m.Addr)
			}
		}
	}
}
