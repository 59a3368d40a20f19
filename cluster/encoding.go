package cluster

import (
	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/fsm"
)

// settingEncodings is advertised in gossip by every peer that reads a
// binary entry encoding: the encodings it reads (fsm.KnownEncodings). A
// peer that advertises none, of a version before them, reads JSON only.
// Short: gossip metadata must fit memberlist's 512 bytes, and with IPv6
// addresses and a long version it takes some 480.
const settingEncodings = "fsm_enc"

// encodingsOf returns the encodings member m reads, as it last said.
func encodingsOf(m memberState) string {
	if list, ok := m.Meta.Settings[settingEncodings]; ok {
		return list
	}
	return fsm.KnownEncodingsBefore
}

// EncodingKnown reports whether every peer the log reaches reads entries
// in encoding e (see readEverywhere).
func (n *Node) EncodingKnown(e fsm.Encoding) bool {
	return readEverywhere(n.counted(n.gossip.snapshot()), n.raftServers(), e)
}

// readEverywhere reports whether every peer the log reaches reads e: each
// live admitted member (a peer that is joining among them), and each
// server of the raft configuration by what it advertised last, alive or
// not. A peer that is away, stopped for its upgrade or cut off by a
// partition, applies the entries written meanwhile when it comes back:
// an older one would stop at them. So the switch happens once the last
// peer runs the version that reads e, not when it stops; a server gossip
// has not heard of since this peer started counts as one that does not.
func readEverywhere(members []memberState, servers []raft.Server, e fsm.Encoding) bool {
	seen := false
	for _, m := range members {
		if m.Status != MemberAlive {
			continue
		}
		if !fsm.EncodingKnownIn(encodingsOf(m), e) {
			return false
		}
		seen = true
	}
	for _, s := range servers {
		i := -1
		for j := range members {
			if members[j].Name == string(s.ID) {
				i = j
				break
			}
		}
		if i < 0 || !fsm.EncodingKnownIn(encodingsOf(members[i]), e) {
			return false
		}
	}
	return seen
}

// raftServers returns the servers of the latest raft configuration.
func (n *Node) raftServers() []raft.Server {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// entryEncoding is the encoding of the entries a leader writes: the
// newest one every peer the log reaches reads, as for a new command type.
// A peer that comes back older after the switch stops at the first entry
// it cannot read, with fsm's message to upgrade it, and the leader writes
// JSON again while it is alive.
func entryEncoding(members []memberState, servers []raft.Server) fsm.Encoding {
	encs := fsm.Encodings()
	for i := len(encs) - 1; i > 0; i-- {
		if readEverywhere(members, servers, encs[i]) {
			return encs[i]
		}
	}
	return fsm.EncodingJSON
}

// noteEncoding logs when the encoding this leader writes changes.
func (n *Node) noteEncoding(e fsm.Encoding) {
	if prev := n.writing.Swap(int32(e) + 1); prev != int32(e)+1 {
		n.log.Info("log entries are written in "+e.String()+": the newest encoding every peer reads",
			"encoding", e.String())
	}
}

// forwardEncoding is the encoding a follower forwards a write in to the
// leader of that name: the newest the leader advertises (it decodes the
// write and encodes the entry itself).
func (n *Node) forwardEncoding(leader string) fsm.Encoding {
	m, ok := n.admittedMember(leader)
	if !ok {
		return fsm.EncodingJSON
	}
	encs := fsm.Encodings()
	for i := len(encs) - 1; i > 0; i-- {
		if fsm.EncodingKnownIn(encodingsOf(m), encs[i]) {
			return encs[i]
		}
	}
	return fsm.EncodingJSON
}
