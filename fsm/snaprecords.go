package fsm

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/corral-dev/corral/fsm/placement"
)

// The binary snapshot records (format version 2) of servers, nodes and
// the placement store, and the end of a restore.

func init() {
	registerRecord(RecordSettings, recordSpec{name: "settings", write: writeSettingsRecord, load: loadSettingsRecord})
	registerBinaryRecord(RecordServer, binarySpec{write: writeServerBinary, load: loadServerBinary})
	registerBinaryRecord(RecordNode, binarySpec{write: writeNodeBinary, load: loadNodeBinary})
	registerBinaryRecord(RecordPlacement, binarySpec{write: writePlacementBinary, load: loadPlacementBinary})
}

func writeServerBinary(st *state, emit func(body []byte) error) error {
	var b []byte
	v := st.snapshotVersion()
	for _, id := range sortedIDs(st.servers) {
		s := st.servers[id]
		b = appendServer(b[:0], &s, v)
		if err := emit(b); err != nil {
			return err
		}
	}
	return nil
}

func loadServerBinary(st *state, sh *sharer, body string) error {
	s, err := decodeServerShared(body, st.loadVersion, sh)
	if err != nil {
		return err
	}
	return addLoadedServer(st, s)
}

// addLoadedServer adds a server read from a snapshot, with its
// reservation and host count.
func addLoadedServer(st *state, s Server) error {
	if s.ID == "" {
		return fmt.Errorf("server record has no id")
	}
	if _, dup := st.servers[s.ID]; dup {
		return fmt.Errorf("server %s appears twice", s.ID)
	}
	if s.NodeUUID != "" {
		if other, taken := st.reservations[s.NodeUUID]; taken {
			return fmt.Errorf("node %s is reserved by both %s and %s", s.NodeUUID, other, s.ID)
		}
		st.reservations[s.NodeUUID] = s.ID
	}
	st.putServer(s)
	return nil
}

func writeNodeBinary(st *state, emit func(body []byte) error) error {
	var b []byte
	for _, id := range sortedIDs(st.nodes) {
		n := st.nodes[id]
		b = appendNode(b[:0], &n)
		if err := emit(b); err != nil {
			return err
		}
	}
	return nil
}

func loadNodeBinary(st *state, sh *sharer, body string) error {
	n, err := decodeNodeShared(body, sh)
	if err != nil {
		return err
	}
	return addLoadedNode(st, n)
}

// addLoadedNode adds a node read from a snapshot, with its conflict mark.
func addLoadedNode(st *state, n Node) error {
	if n.UUID == "" {
		return fmt.Errorf("node record has no uuid")
	}
	if _, dup := st.nodes[n.UUID]; dup {
		return fmt.Errorf("node %s appears twice", n.UUID)
	}
	st.nodes[n.UUID] = n
	if n.InventoryConflict != "" {
		st.conflicted[n.UUID] = struct{}{}
	}
	return nil
}

func writePlacementBinary(st *state, emit func(body []byte) error) error {
	return st.placement.EncodeRecords(emit)
}

func loadPlacementBinary(st *state, _ *sharer, body string) error {
	if st.placementDec == nil {
		st.placementDec = placement.NewDecoder()
	}
	return st.placementDec.AddString(body)
}

// finishRestore completes a snapshot restore once every record is read:
// the placement store is decoded (from JSON records, or from the binary
// decoder's records) while the server indexes are built beside it.
func (st *state) finishRestore() error {
	var wg sync.WaitGroup
	wg.Go(st.buildServerIndex) // reads the servers, writes only st.idx
	defer wg.Wait()
	if err := st.finishLoad(); err != nil {
		return err
	}
	if st.placementDec != nil {
		ps, err := st.placementDec.Finish()
		st.placementDec = nil
		if err != nil {
			return err
		}
		st.placement = ps
	}
	return nil
}

// settings are the state's cluster-wide switches. Format version 1 did
// not carry them: a version 1 snapshot restores them off.
type settings struct {
	LegacyInventory bool `json:"legacy_inventory"`
}

func writeSettingsRecord(st *state, emit func(v any) error) error {
	return emit(settings{LegacyInventory: st.legacyInventory})
}

func loadSettingsRecord(st *state, body []byte) error {
	if st.settingsLoaded {
		return fmt.Errorf("settings appear twice")
	}
	var s settings
	if err := json.Unmarshal(body, &s); err != nil {
		return err
	}
	st.legacyInventory, st.settingsLoaded = s.LegacyInventory, true
	return nil
}
