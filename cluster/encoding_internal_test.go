package cluster

import (
	"testing"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/fsm"
)

func TestReadEverywhere(t *testing.T) {
	member := func(name, status, encodings string) memberState {
		m := memberState{Name: name, Status: status, Meta: memberMeta{Settings: map[string]string{}}}
		if encodings != "-" {
			m.Meta.Settings[settingEncodings] = encodings
		}
		return m
	}
	servers := func(names ...string) []raft.Server {
		var out []raft.Server
		for _, n := range names {
			out = append(out, raft.Server{ID: raft.ServerID(n)})
		}
		return out
	}
	newer := fsm.KnownEncodings()
	for _, c := range []struct {
		name    string
		members []memberState
		servers []raft.Server
		want    bool
	}{
		{"every peer reads it", []memberState{member("a", MemberAlive, newer), member("b", MemberAlive, newer)}, servers("a", "b"), true},
		{"a live peer advertises JSON only", []memberState{member("a", MemberAlive, newer), member("b", MemberAlive, "0")}, servers("a", "b"), false},
		{"a live peer of a version before the encodings", []memberState{member("a", MemberAlive, newer), member("b", MemberAlive, "-")}, servers("a", "b"), false},
		{"a server away, older when last heard", []memberState{member("a", MemberAlive, newer), member("b", MemberDead, "-")}, servers("a", "b"), false},
		{"a server away, upgraded when last heard", []memberState{member("a", MemberAlive, newer), member("b", MemberDead, newer)}, servers("a", "b"), true},
		{"a server gossip has not heard of", []memberState{member("a", MemberAlive, newer)}, servers("a", "b"), false},
		{"an older member joining", []memberState{member("a", MemberAlive, newer), member("c", MemberAlive, "-")}, servers("a"), false},
		{"an older peer removed from raft", []memberState{member("a", MemberAlive, newer), member("c", MemberDead, "-")}, servers("a"), true},
		{"nobody", nil, nil, false},
	} {
		if got := readEverywhere(c.members, c.servers, fsm.EncodingMsgpack); got != c.want {
			t.Errorf("%s: %t, want %t", c.name, got, c.want)
		}
		if want := map[bool]fsm.Encoding{true: fsm.EncodingMsgpack, false: fsm.EncodingJSON}[c.want]; entryEncoding(c.members, c.servers) != want {
			t.Errorf("%s: the leader writes %s, want %s", c.name, entryEncoding(c.members, c.servers), want)
		}
	}
}
