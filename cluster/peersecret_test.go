package cluster

import (
	"encoding/json"
	"testing"
)

func TestSealedMetadata(t *testing.T) {
	s := newPeerSecret("peer-token-for-sealing-0123")
	body, err := json.Marshal(memberMeta{Version: 1, RaftAddr: "127.0.0.2:7481", APIAddr: "127.0.0.2:7480", Kind: "ironic",
		Settings: map[string]string{settingCommands: "1-33"}})
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.sealMeta("p1", "127.0.0.2:7482", body)
	if !s.openMeta("p1", "127.0.0.2:7482", sealed) {
		t.Fatal("sealed metadata does not open")
	}
	// Older peers read sealed metadata as before.
	var back memberMeta
	if err := json.Unmarshal(sealed, &back); err != nil || back.RaftAddr != "127.0.0.2:7481" || back.Settings[settingCommands] != "1-33" {
		t.Fatalf("sealed metadata unreadable as JSON: %v %+v", err, back)
	}
	tampered := append([]byte{}, sealed...)
	tampered[10] ^= 1
	for what, ok := range map[string]bool{
		"unsealed":            s.openMeta("p1", "127.0.0.2:7482", body),
		"replayed by another": s.openMeta("stranger", "127.0.0.2:7482", sealed),
		"replayed elsewhere":  s.openMeta("p1", "127.0.0.9:7482", sealed),
		"altered":             s.openMeta("p1", "127.0.0.2:7482", tampered),
		"sealed with another": s.openMeta("p1", "127.0.0.2:7482", newPeerSecret("another-peer-token-0123").sealMeta("p1", "127.0.0.2:7482", body)),
		"empty":               s.openMeta("p1", "127.0.0.2:7482", nil),
		"only a seal":         s.openMeta("p1", "127.0.0.2:7482", sealed[len(sealed)-len(sealKey)-sealLen-2:]),
		"extended after seal": s.openMeta("p1", "127.0.0.2:7482", append(sealed[:len(sealed)-1:len(sealed)-1], []byte(`,"x":1}`)...)),
	} {
		if ok {
			t.Errorf("%s metadata opens", what)
		}
	}
}
