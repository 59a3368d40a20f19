package fsm

import (
	"bytes"
	"maps"
	"slices"
	"sync"

	"github.com/corral-dev/corral/fsm/placement"
)

// state is everything the log builds. It has one map per entity; the file of
// each entity holds its type, commands, apply functions and snapshot records.
// Add a field here, a line in newState and clone, and a record registration
// when adding an entity.
type state struct {
	hosts        map[string]Host    // by name
	flavors      map[string]Flavor  // by ID
	flavorNames  map[string]string  // flavor name -> ID (index, rebuilt on restore)
	servers      map[string]Server  // by ID; written through putServer and removeServer
	reservations map[string]string  // node UUID -> server ID (index, rebuilt on restore)
	nodes        map[string]Node    // Ironic node mirror, by UUID
	placement    *placement.Store   // resource providers, inventories, allocations
	keypairs     map[string]KeyPair // by user id and name (keyPairKey)
	quotas       quotaState         // limits of every layer (quota.go)
	// features are the features enabled (feature.go); nil: none.
	features map[string]bool
	// actions are each server's instance actions, oldest first
	// (history.go); a slice is replaced, never changed in place.
	actions map[string][]InstanceAction
	// groups are the server groups by id; groupOf the group of each
	// member (index, rebuilt on restore; server_group.go).
	groups  map[string]ServerGroup
	groupOf map[string]string
	// nets are the servers' Neutron ports and port intents, by server id
	// (server_ports.go); a value is replaced, never changed in place.
	nets map[string]ServerNet
	// legacyInventory: node providers also report VCPU, MEMORY_MB and
	// DISK_GB ([workarounds] report_ironic_standard_resource_class_inventory).
	legacyInventory bool
	placementLoad   *bytes.Buffer // snapshot restore only (version 1)
	settingsLoaded  bool          // snapshot restore only

	// hostServers counts the live servers of every host (index, kept by
	// putServer and removeServer, rebuilt on restore; see load.go).
	hostServers map[string]int
	// usage counts what every project and user holds against its quotas
	// (index, kept by putServer, removeServer and the key pair commands,
	// rebuilt on restore; see quota_check.go).
	usage quotaUsage
	// idx orders the live servers as lists show them and the deleted
	// ones by their last update (index, kept by putServer and
	// removeServer, built at the end of a restore while indexLater; see
	// server_index.go).
	idx        serverIndex
	indexLater bool
	loaded     indexBuild // the servers a restore loaded, while indexLater
	// share makes the equal maps, lists and short strings of the records
	// Apply stores one copy (share.go; not part of snapshots).
	share *sharer
	// conflicted holds every mirrored node with an inventory conflict, and
	// possibly nodes whose conflict cleared since the last node sync
	// (index, kept by applySyncNodes, rebuilt on restore; see node.go).
	conflicted map[string]struct{}
	// format3 counts the servers whose action holds what snapshot format
	// 2 cannot carry (index, kept by putServer and removeServer): while it
	// is zero, snapshots are written in format 2, which older peers read.
	format3 int
	// format4 counts the servers that hold what format 3 cannot carry
	// (server_fields.go; index, kept the same way): while it is zero,
	// snapshots are written in format 3 or 2.
	format4 int
	// format5 counts the servers that hold what format 4 cannot carry
	// (rebuild_stopped.go; kept the same way).
	format5 int

	// frozen, set only in a snapshot copy (clone), holds the framed
	// records of the binary record types as they were encoded under the
	// store's read lock.
	frozen map[RecordType][][]byte
	// sizes, set with frozen, are the numbers of servers and nodes the
	// snapshot copy captured (written in the snapshot header).
	sizes [2]int
	// placementDec decodes the binary placement records of a restore.
	placementDec *placement.Decoder
	// version is the snapshot format of a snapshot copy (set with
	// frozen); loadVersion the format of the snapshot being restored.
	version, loadVersion uint16

	// index is the log index of the entry being applied (not part of
	// snapshots): Apply records it where state remembers "when".
	index uint64
	// applying is the command being applied (nil outside Store.Apply: a
	// restore, a decision): putServer notes in the history what it
	// changed of a server.
	applying Command
}

func newState() *state {
	return &state{
		hosts:        map[string]Host{},
		flavors:      map[string]Flavor{},
		flavorNames:  map[string]string{},
		servers:      map[string]Server{},
		reservations: map[string]string{},
		nodes:        map[string]Node{},
		placement:    placement.New(),
		keypairs:     map[string]KeyPair{},
		quotas:       newQuotaState(),
		actions:      map[string][]InstanceAction{},
		groups:       map[string]ServerGroup{},
		groupOf:      map[string]string{},
		nets:         map[string]ServerNet{},
		hostServers:  map[string]int{},
		usage:        newQuotaUsage(),
		conflicted:   map[string]struct{}{},
		share:        newSharer(),
		idx:          newServerIndex(),
	}
}

// clone returns the point-in-time copy of st that a Snapshot writes. It is
// taken under the store's read lock, so it does as little as it can: the
// small entities (hosts, flavors, key pairs) are deep-copied, and the big
// ones (servers, nodes, placement: every binary record type) are captured
// as their encoded snapshot records, no copy of 10^5 objects and their
// maps, each type on its own goroutine (they only read st). The copy is
// for writing a snapshot only: its servers, nodes and placement are empty.
func (st *state) clone() *state {
	c := newState()
	c.hosts = maps.Clone(st.hosts) // Host holds no references
	c.flavorNames = maps.Clone(st.flavorNames)
	c.keypairs = maps.Clone(st.keypairs) // KeyPair holds no references
	c.quotas = st.quotas.clone()
	c.features = maps.Clone(st.features)
	c.actions = maps.Clone(st.actions) // the slices are never changed in place
	c.nets = maps.Clone(st.nets)       // the values are never changed in place
	for id, g := range st.groups {
		c.groups[id] = cloneGroup(g)
	}
	c.groupOf = maps.Clone(st.groupOf)
	c.legacyInventory = st.legacyInventory
	for id, f := range st.flavors {
		c.flavors[id] = cloneFlavor(f)
	}
	c.sizes = [2]int{len(st.servers), len(st.nodes)}
	c.version = st.snapshotVersion()
	types := slices.Sorted(maps.Keys(binRecords))
	frozen := make([][][]byte, len(types))
	var wg sync.WaitGroup
	for i, t := range types {
		wg.Go(func() { frozen[i] = captureRecords(st, t, binRecords[t]) })
	}
	wg.Wait()
	c.frozen = make(map[RecordType][][]byte, len(types))
	for i, t := range types {
		c.frozen[t] = frozen[i]
	}
	return c
}

// snapshotVersion is the format st is written in: the oldest that holds
// all of it.
func (st *state) snapshotVersion() uint16 {
	switch {
	case st.format5 > 0:
		return snapshotVersionRebuildStop
	case st.format4 > 0:
		return snapshotVersionFields
	case st.format3 > 0:
		return snapshotVersionIntents
	}
	return snapshotVersionBinary
}

// captureRecords returns the framed records of type t in chunks of about
// 1 MiB: one growing buffer would copy them again at every doubling.
func captureRecords(st *state, t RecordType, spec binarySpec) [][]byte {
	const chunk = 1 << 20
	var bufs [][]byte
	cur := make([]byte, 0, chunk)
	_ = spec.write(st, func(body []byte) error { // appending cannot fail
		if need := 1 + binaryLenSize + len(body); len(cur)+need > cap(cur) {
			bufs = append(bufs, cur)
			cur = make([]byte, 0, max(chunk, need))
		}
		cur = append(cur, byte(t))
		cur = appendUint(cur, uint64(len(body)))
		cur = append(cur, body...)
		return nil
	})
	return append(bufs, cur)
}

// binaryLenSize is the most bytes a record length takes.
const binaryLenSize = 10
