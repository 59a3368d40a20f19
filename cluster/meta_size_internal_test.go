package cluster

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

// TestGossipMetaFitsWorstCase: the metadata a peer gossips stays within
// memberlist's 512 bytes with every setting this tree advertises, IPv6
// addresses of the longest form, the longest version and the peer
// token's seal. Metadata over the limit is not gossiped at all (NodeMeta
// returns none), so a new setting that crosses it would cut the peer off
// its settings' gates.
func TestGossipMetaFitsWorstCase(t *testing.T) {
	const limit = 512 // memberlist.MetaMaxSize
	c := Config{
		Version:       strings.Repeat("v", 2*maxVersionLen),
		QuotaDefaults: fsm.NovaQuotaDefaults(),
		Settings:      map[string]string{"legacy_inventory": "false"},
	}
	c.setDefaults()
	if c.forwardRPC() && c.Settings[settingForwardRPC] == "" {
		t.Fatal("forward_rpc not advertised")
	}
	addr := "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"
	m := memberMeta{Version: 1, RaftAddr: addr, APIAddr: addr, Kind: fsm.KindHypervisor, Expect: 99,
		Bootstrapped: true, Leaving: true, Settings: c.Settings, Established: true, CatchingUp: true}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sealed := newPeerSecret(strings.Repeat("t", 64)).sealMeta("a-host-name-of-sixty-three-characters-which-is-dns-longest-0000", addr, b)
	t.Logf("gossip metadata: %d bytes sealed (%d without the seal): %s", len(sealed), len(b), b)
	if len(sealed) > limit {
		t.Fatalf("gossip metadata of %d bytes exceeds memberlist's %d: shorten the settings' names or values", len(sealed), limit)
	}
}
