package clustertest

import (
	"io"
	"log"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// Stranger is a gossip member that is no peer: it reaches the peers'
// gossip port and advertises metadata of its choosing, but holds neither
// the peer token nor a peer certificate.
type Stranger struct {
	ml *memberlist.Memberlist
}

// StartStranger starts a stranger named name on 127.0.0.1 whose gossip
// metadata is meta (as a peer's is: a JSON object, e.g. {"v":1,"raft":…,
// "api":…,"kind":"ironic","expect":3,"set":{…}}), joined to the gossip
// addresses join. It stops when the test ends.
func StartStranger(t testing.TB, name string, meta []byte, join ...string) *Stranger {
	t.Helper()
	mc := memberlist.DefaultLANConfig()
	mc.Name = name
	mc.BindAddr, mc.AdvertiseAddr = "127.0.0.1", "127.0.0.1"
	mc.BindPort, mc.AdvertisePort = 0, 0
	mc.ProbeInterval = gossipTimings.ProbeInterval
	mc.ProbeTimeout = gossipTimings.ProbeTimeout
	mc.GossipInterval = gossipTimings.GossipInterval
	mc.PushPullInterval = gossipTimings.PushPullInterval
	mc.TCPTimeout = 2 * time.Second
	mc.Delegate = strangerMeta(meta)
	mc.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatalf("start stranger %s: %v", name, err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	s := &Stranger{ml: ml}
	if len(join) > 0 {
		if _, err := ml.Join(join); err != nil {
			t.Fatalf("stranger %s joins %v: %v", name, join, err)
		}
	}
	return s
}

// Addr is the stranger's gossip address.
func (s *Stranger) Addr() string {
	n := s.ml.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// strangerMeta is a memberlist.Delegate that advertises fixed metadata.
type strangerMeta []byte

func (m strangerMeta) NodeMeta(limit int) []byte                  { return m }
func (m strangerMeta) NotifyMsg([]byte)                           {}
func (m strangerMeta) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (m strangerMeta) LocalState(join bool) []byte                { return nil }
func (m strangerMeta) MergeRemoteState(buf []byte, join bool)     {}
