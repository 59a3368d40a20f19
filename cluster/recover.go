package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
)

// Recover rebuilds a cluster that lost its quorum from the data dir of
// one survivor, with the agent stopped (the peers.json idea): the raft
// configuration becomes this one peer alone, as a voter, keeping every
// entry its log holds. Started again, the peer elects itself; new peers
// (empty data dirs) then join it and catch up. cfg needs Name, DataDir,
// BindAddr and RaftPort (the peer's own, as its agent is configured).
func Recover(cfg Config) (RaftStatus, error) {
	cfg.setDefaults()
	if cfg.DataDir == "" {
		return RaftStatus{}, errors.New("data dir is empty: give the survivor's data dir")
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "raft", "raft.db")); err != nil {
		return RaftStatus{}, fmt.Errorf("%s: %w", cfg.DataDir, ErrNothingToRecover)
	}
	addr := net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.RaftPort))
	if cfg.Transport != nil {
		addr = string(cfg.Transport.LocalAddr()) // tests: the in-memory transport's address
	} else if net.ParseIP(cfg.BindAddr) == nil || cfg.RaftPort <= 0 {
		return RaftStatus{}, fmt.Errorf("raft address %s is not IP:PORT: give the peer's bind address and raft port", addr)
	}
	hl := newHCLogger(cfg.Logger.With("component", "recover"), "raft")
	trans := cfg.Transport
	if trans == nil {
		_, trans = raft.NewInmemTransport(raft.ServerAddress(addr)) // raft writes no messages during recovery
		cfg.Transport = trans
	}
	m, err := newMetrics(prometheus.NewRegistry(), &Node{})
	if err != nil {
		return RaftStatus{}, err
	}
	parts, err := openRaftParts(&cfg, m, hl)
	if err != nil {
		return RaftStatus{}, err
	}
	defer func() { _ = parts.closer() }()
	has, err := raft.HasExistingState(parts.logs, parts.stable, parts.snaps)
	if err != nil {
		return RaftStatus{}, fmt.Errorf("read raft state in %s: %w", cfg.DataDir, err)
	}
	if !has {
		return RaftStatus{}, fmt.Errorf("%s: %w", cfg.DataDir, ErrNothingToRecover)
	}
	store := fsm.New()
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(cfg.Name), Address: raft.ServerAddress(addr)}}}
	if err := raft.RecoverCluster(raftConfig(&cfg, hl), newRaftFSM(store, m), parts.logs, parts.stable, parts.snaps, trans, conf); err != nil {
		return RaftStatus{}, fmt.Errorf("recover raft in %s: %w", cfg.DataDir, err)
	}
	last, _ := parts.logs.LastIndex()
	cfg.Logger.Warn("raft configuration replaced: this peer is now the only voter", "peer", cfg.Name, "raft", addr,
		"applied", store.AppliedIndex(), "last_index", last)
	return RaftStatus{Name: cfg.Name, AppliedIndex: store.AppliedIndex(), LastIndex: last, Voters: []string{cfg.Name}}, nil
}
