package cluster

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/corral-dev/corral/fsm"
)

// raftFSM adapts the pure fsm.Store to raft.FSM.
type raftFSM struct {
	store   *fsm.Store
	metrics *metrics
	noop    []byte
}

func newRaftFSM(store *fsm.Store, m *metrics) *raftFSM {
	noop, err := fsm.Encode(&fsm.Noop{})
	if err != nil {
		panic(err) // a Noop always encodes
	}
	return &raftFSM{store: store, metrics: m, noop: noop}
}

// Apply implements raft.FSM.
func (f *raftFSM) Apply(l *raft.Log) any {
	start := time.Now()
	res := f.store.Apply(l.Index, l.Data)
	f.metrics.applyLatency.Observe(time.Since(start).Seconds())
	return res
}

// StoreConfiguration implements raft.ConfigurationStore so that the FSM's
// applied index also advances over membership entries.
func (f *raftFSM) StoreConfiguration(index uint64, _ raft.Configuration) {
	f.store.Apply(index, f.noop)
}

// Snapshot implements raft.FSM.
func (f *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{sn: f.store.Snapshot()}, nil
}

// Restore implements raft.FSM. The store's applied index becomes the raft
// index of the snapshot (see snapshotStore), not the one the state records:
// that is the last entry the store applied when the snapshot was taken,
// lower than raft's when barriers followed it, and a backup restored into
// a running cluster stands at an index past that cluster's log. Left at
// the state's own, reads would wait on entries the snapshot replaced
// (waitApplied finds them in the log) until the next write.
//
// Read-your-writes holds: the state covers every entry up to the
// snapshot's index (a raft snapshot holds all raft applied before it; a
// restored backup replaces them all), raft hands the store index+1 next,
// and the index moves with the state under one lock, so a read it
// releases sees the restored state. A reader without metadata keeps the
// state's own, lower index: reads may then wait, never see too little.
func (f *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var index uint64
	if meta := snapshotMetaOf(rc); meta != nil {
		index = meta.Index
	}
	if err := f.store.RestoreAt(rc, index); err != nil {
		return fmt.Errorf("restore FSM from snapshot: %w", err)
	}
	f.metrics.restores.Inc()
	return nil
}

// snapshotStore is raft's snapshot store, with readers that carry the
// snapshot's metadata. raft hands the FSM a snapshot without its
// metadata, wrapped in raft.ReadCloserWrapper readers: Restore unwraps
// them down to the snapshotReader to learn the index, in every path that
// restores (start-up, a snapshot installed from the leader, a user
// restore, a recovery).
type snapshotStore struct{ raft.SnapshotStore }

type snapshotReader struct {
	io.ReadCloser
	meta *raft.SnapshotMeta
}

// Open implements raft.SnapshotStore.
func (s snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	return meta, &snapshotReader{ReadCloser: rc, meta: meta}, nil
}

// snapshotMetaOf returns the metadata of the snapshot rc reads, or nil
// when rc does not come from a snapshotStore.
func snapshotMetaOf(rc io.ReadCloser) *raft.SnapshotMeta {
	for {
		switch r := rc.(type) {
		case *snapshotReader:
			return r.meta
		case raft.ReadCloserWrapper:
			rc = r.WrappedReadCloser()
		default:
			return nil
		}
	}
}

type fsmSnapshot struct{ sn *fsm.Snapshot }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.sn.WriteTo(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// raftParts are the stores and transport behind one raft instance.
type raftParts struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	trans  raft.Transport
	stream *peerStream // the raft port's (nil with Config.Transport)
	closer func() error
}

func openRaftParts(cfg *Config, m *metrics, hl hclog.Logger) (*raftParts, error) {
	p := &raftParts{closer: func() error { return nil }}
	if cfg.InmemStore {
		st := raft.NewInmemStore()
		p.logs, p.stable = st, st
		p.snaps = snapshotStore{raft.NewInmemSnapshotStore()}
	} else {
		dir := filepath.Join(cfg.DataDir, "raft")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("create raft dir %s: %w", dir, err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		if err != nil {
			return nil, fmt.Errorf("open raft log %s: %w (is another corral agent using this data dir?)", dir, err)
		}
		// Recent entries stay in memory: replication and the FSM read them
		// back right after they were written, and a read from boltdb costs
		// a transaction and a msgpack decode.
		cached, err := newLogCache(logCacheSize, logCacheBytes, bolt)
		if err != nil {
			_ = bolt.Close()
			return nil, fmt.Errorf("raft log cache: %w", err)
		}
		p.logs, p.stable = cached, bolt
		p.closer = bolt.Close
		snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hl)
		if err != nil {
			_ = bolt.Close()
			return nil, fmt.Errorf("open snapshot store %s: %w", dir, err)
		}
		p.snaps = snapshotStore{snaps}
	}
	if cfg.Transport != nil {
		p.trans = cfg.Transport
		return p, nil
	}
	addr := net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.RaftPort))
	if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
		_ = p.closer()
		return nil, fmt.Errorf("resolve raft address %s: %w", addr, err)
	}
	trans, stream, err := newPeerTransport(cfg, addr, m, hl)
	if err != nil {
		_ = p.closer()
		return nil, fmt.Errorf("listen for raft on %s: %w (is the port in use?)", addr, err)
	}
	p.trans, p.stream = trans, stream
	closeStore := p.closer
	p.closer = func() error {
		_ = trans.Close()
		return closeStore()
	}
	return p, nil
}

// logCacheSize is how many recent raft entries are kept in memory, and
// logCacheBytes how many bytes of them at most (the newest is always kept).
const (
	logCacheSize  = 512
	logCacheBytes = 8 << 20
)

func raftConfig(cfg *Config, hl hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.Name)
	rc.HeartbeatTimeout = cfg.Raft.HeartbeatTimeout
	rc.ElectionTimeout = cfg.Raft.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.Raft.LeaderLeaseTimeout
	// Pre-vote (on by default in hashicorp/raft, with a transport that
	// carries it, as the vote gate does): a candidate first asks whether
	// it could win, and a voter that still hears its leader says no, so a
	// peer that lost touch for a while rejoins without raising the term
	// and deposing a healthy leader.
	rc.PreVoteDisabled = false
	rc.CommitTimeout = cfg.Raft.CommitTimeout
	rc.SnapshotInterval = cfg.Raft.SnapshotInterval
	rc.SnapshotThreshold = cfg.Raft.SnapshotThreshold
	rc.TrailingLogs = cfg.Raft.TrailingLogs
	// Writes arriving together are appended and fsync'd as one batch (up to
	// MaxAppendEntries entries): under load, the owners' progress entries
	// and the leader's decisions share disk writes and replication rounds.
	rc.BatchApplyCh = true
	rc.Logger = hl
	return rc
}
