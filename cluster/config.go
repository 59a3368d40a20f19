package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"regexp"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/cluster/tlsutil"
	"github.com/corral-dev/corral/fsm"
)

// RaftTimings are the raft knobs an operator may tune. The defaults are
// tuned for a LAN: a dead leader is replaced in well under a second.
type RaftTimings struct {
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64
	ApplyTimeout       time.Duration
}

// GossipTimings are the memberlist knobs.
type GossipTimings struct {
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	SuspicionMult    int
	GossipInterval   time.Duration
	PushPullInterval time.Duration
}

// DefaultRaftTimings returns LAN defaults: the next write after a paused or
// cut-off leader's loss commits within about two seconds (after a killed
// leader's, within half a second: its followers find its ports refusing,
// leaderwatch.go). A second holds on a loaded machine: peers share their
// hosts with other work, and a goroutine may not run for some hundreds of
// milliseconds (300 ms held six elections in
// three idle minutes of five peers on two busy cores under the race
// detector, 500 ms one, a second none; docs/failover.md). Pre-vote keeps
// a follower that stops hearing the leader (packet loss, a starved CPU)
// from forcing an election, and the lease, as long as the heartbeat
// timeout, outlasts lost heartbeats' retransmissions, so that the leader
// does not step down for them.
func DefaultRaftTimings() RaftTimings {
	return RaftTimings{
		HeartbeatTimeout:   time.Second,
		ElectionTimeout:    time.Second,
		LeaderLeaseTimeout: time.Second,
		CommitTimeout:      20 * time.Millisecond,
		SnapshotInterval:   60 * time.Second,
		SnapshotThreshold:  8192,
		TrailingLogs:       10240,
		ApplyTimeout:       5 * time.Second,
	}
}

// DefaultDeadServerCleanupAfter is how long a voter may be dead before
// the leader removes it from raft.
const DefaultDeadServerCleanupAfter = 5 * time.Minute

// maxVersionLen bounds the release a peer advertises in gossip.
const maxVersionLen = 40

// DefaultRefusedGrace is Config.RefusedGrace's default: a killed process
// is confirmed dead about half a second after its ports close (five
// probes in a row refused), while a process that restarts within it
// keeps its servers.
const DefaultRefusedGrace = 500 * time.Millisecond

// DefaultDownGrace is Config.DownGrace's default: how long gossip's word
// alone must last before it takes down a host that the leader still
// hears. A peer starved of CPU flaps in gossip for a second or two at a
// time under packet loss; a host that is paused, cut off or gone is not
// held by it (the leader's silence or refused connections confirm it).
const DefaultDownGrace = 5 * time.Second

// DefaultSilentGrace is Config.SilentGrace's default: five of the
// leader's pings in a row unanswered, and no other packet from the host.
const DefaultSilentGrace = time.Second

// MinSilentGrace is the shortest SilentGrace: three of the leader's pings
// (hearing.go). A shorter one would take a host that gossip reports dead
// down between two pings, for one lost packet.
const MinSilentGrace = 3 * hearingPingEvery

// DefaultGossipTimings returns LAN defaults: gossip declares a silent
// member dead in about 1.5 s (a probe, then a suspicion of 3 probe
// intervals that another member confirms). The probe timeout is well
// under half the interval: a prober's indirect probes send their nacks
// (Lifeguard: "I could not reach it either") a probe timeout after its
// own timed out, and a nack must arrive within the interval, or a healthy
// prober of a dead member counts itself unhealthy.
func DefaultGossipTimings() GossipTimings {
	return GossipTimings{
		ProbeInterval:    300 * time.Millisecond,
		ProbeTimeout:     100 * time.Millisecond,
		SuspicionMult:    3,
		GossipInterval:   100 * time.Millisecond,
		PushPullInterval: 15 * time.Second,
	}
}

// PeerPaths are the HTTP paths of the peers' endpoints a peer calls on
// another peer's API: forwarding (a follower's writes and read indexes),
// and a follower passing a snapshot or a raft removal on to the leader.
type PeerPaths struct {
	forward.Paths
	Snapshot   string
	RemovePeer string
}

// Config configures one peer.
type Config struct {
	Name            string // unique peer (compute host) name; also the raft server ID
	DataDir         string // raft log, stable store and snapshots live here
	BindAddr        string // IP to bind raft and gossip to, e.g. 127.0.0.2
	RaftPort        int
	GossipPort      int    // 0 picks a free port (tests)
	APIAddr         string // host:port of this peer's HTTP API, advertised in gossip
	Kind            string // host kind: ironic or hypervisor
	Join            []string
	BootstrapExpect int
	MaxVoters       int // peers beyond this join as non-voters (default 5)

	Raft   RaftTimings
	Gossip GossipTimings
	// ReconcileInterval is how often the leader reconciles gossip into raft and the FSM.
	ReconcileInterval time.Duration
	// DeadGrace is how long a member may be missing from gossip after this
	// peer became leader before its host is marked down.
	DeadGrace time.Duration
	// DownGrace is how long a host must stay dead in gossip before the
	// leader commits it down (the second stage of failure detection); up
	// to twice as long while the leader's own gossip health score is poor.
	DownGrace time.Duration
	// RefusedGrace is how long a host's raft and gossip ports must both
	// keep refusing connections, once raft cannot heartbeat it or gossip
	// reports it dead, before the leader commits it down without waiting
	// for gossip and DownGrace: its process is gone (liveness.go). 0:
	// DefaultRefusedGrace; negative: off (deaths wait for gossip, and
	// followers wait for raft's heartbeat timeout on a killed leader
	// rather than stand on its refused connections, leaderwatch.go).
	RefusedGrace time.Duration
	// SilentGrace is how long the leader must also have heard nothing
	// from a host that gossip reports dead (it pings every host itself)
	// before it commits it down without waiting for DownGrace
	// (hearing.go). 0: DefaultSilentGrace; negative: off (deaths that only
	// gossip sees wait for DownGrace).
	SilentGrace time.Duration
	// UpGrace is how long a returning host must stay alive before it is
	// marked up again (hysteresis against flapping).
	UpGrace time.Duration
	// FreezeFraction: when more than this share of the up hosts is lost at
	// once, the leader freezes failover instead of reassigning.
	FreezeFraction float64
	// DeletedRetention is how long deleted servers stay visible before the
	// leader purges them (0: DefaultDeletedRetention; negative: never).
	DeletedRetention time.Duration

	// TLS, when set, puts raft on mutual TLS and peer forwarding on
	// HTTPS with this peer's certificate (see cluster/tlsutil).
	TLS *tlsutil.Config

	// DeadServerCleanupAfter is how long a voter may be dead in gossip
	// before the leader removes it from raft (when the live voters keep a
	// quorum); 0: DefaultDeadServerCleanupAfter; negative: never.
	DeadServerCleanupAfter time.Duration

	// GossipKey is [gossip] encrypt: the base64 key that seeds this
	// peer's gossip keyring when it has none persisted (see keyring.go).
	GossipKey string

	// PeerToken is the peers' own secret when TLS is off: raft connections
	// answer a challenge with it, gossip metadata is sealed with it, and
	// forwarded requests carry it. Never a user's credential. With TLS the
	// peer certificate does all of that and PeerToken is not used.
	PeerToken string
	// Settings are this peer's values of cluster-wide settings, advertised
	// in gossip (see Node.AgreedSetting).
	Settings map[string]string
	// Version is this peer's corral release, advertised in gossip (its
	// first maxVersionLen bytes) so that Members shows which peers a
	// rolling upgrade has reached.
	Version string
	// QuotaDefaults are [quota]: the limits of every project that has none
	// of its own and of the default quota class (nil: this peer sets
	// none). The leader records them once every live peer has the same
	// (quota.go).
	QuotaDefaults fsm.QuotaLimits
	// PeerPaths are where the peers' APIs serve the endpoints this peer
	// calls on another: the API names them (api.PeerPaths). Without them a
	// follower cannot forward (unless Forwarder replaces HTTP forwarding)
	// nor pass snapshots and raft removals on to the leader.
	PeerPaths PeerPaths

	// Test seams. Transport replaces the TCP transport (raft.InmemTransport);
	// InmemStore keeps the raft log in memory; Forwarder replaces HTTP
	// forwarding; GossipCut, when set, drops the gossip this peer sends to
	// each address (host:port) it returns true for, as a partition would.
	Transport  raft.Transport
	InmemStore bool
	Forwarder  Forwarder
	GossipCut  func(addr string) bool
	// NoForwardRPC plays a peer of a version before forwarding's binary
	// RPC (tests of a mixed cluster): it neither serves nor advertises the
	// RPC, and forwards over HTTP. Forwarding over the RPC needs the raft
	// port, so a peer with Transport or Forwarder set does neither either.
	NoForwardRPC bool

	Logger   *slog.Logger
	Registry prometheus.Registerer
	Store    *fsm.Store
}

// MinPeerTokenLen is the shortest peer token accepted: it keys the MACs
// of raft's challenge and of the gossip metadata, which anyone on the
// network may record and try to guess it from.
const MinPeerTokenLen = 16

var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$`)

func (c *Config) setDefaults() {
	if c.MaxVoters == 0 {
		c.MaxVoters = 5
	}
	if c.Kind == "" {
		c.Kind = fsm.KindIronic
	}
	d := DefaultRaftTimings()
	if c.Raft.HeartbeatTimeout == 0 {
		c.Raft.HeartbeatTimeout = d.HeartbeatTimeout
	}
	if c.Raft.ElectionTimeout == 0 {
		c.Raft.ElectionTimeout = d.ElectionTimeout
	}
	if c.Raft.LeaderLeaseTimeout == 0 {
		c.Raft.LeaderLeaseTimeout = d.LeaderLeaseTimeout
	}
	if c.Raft.CommitTimeout == 0 {
		c.Raft.CommitTimeout = d.CommitTimeout
	}
	if c.Raft.SnapshotInterval == 0 {
		c.Raft.SnapshotInterval = d.SnapshotInterval
	}
	if c.Raft.SnapshotThreshold == 0 {
		c.Raft.SnapshotThreshold = d.SnapshotThreshold
	}
	if c.Raft.TrailingLogs == 0 {
		c.Raft.TrailingLogs = d.TrailingLogs
	}
	if c.Raft.ApplyTimeout == 0 {
		c.Raft.ApplyTimeout = d.ApplyTimeout
	}
	g := DefaultGossipTimings()
	if c.Gossip.ProbeInterval == 0 {
		c.Gossip.ProbeInterval = g.ProbeInterval
	}
	if c.Gossip.ProbeTimeout == 0 {
		c.Gossip.ProbeTimeout = g.ProbeTimeout
	}
	if c.Gossip.SuspicionMult == 0 {
		c.Gossip.SuspicionMult = g.SuspicionMult
	}
	if c.Gossip.GossipInterval == 0 {
		c.Gossip.GossipInterval = g.GossipInterval
	}
	if c.Gossip.PushPullInterval == 0 {
		c.Gossip.PushPullInterval = g.PushPullInterval
	}
	if c.DeadServerCleanupAfter == 0 {
		c.DeadServerCleanupAfter = DefaultDeadServerCleanupAfter
	}
	if c.DeletedRetention == 0 {
		c.DeletedRetention = DefaultDeletedRetention
	}
	// Every peer advertises that it can apply PurgeServers; the leader
	// purges only while every live peer does (see purgeLoop).
	settings := make(map[string]string, len(c.Settings)+1)
	maps.Copy(settings, c.Settings)
	settings[settingPurgeServers] = "true"
	if _, set := settings[settingTextBounds]; !set {
		settings[settingTextBounds] = "true" // "false" is how an older peer is played in tests
	}
	settings[settingCommands] = fsm.KnownCommands()
	if c.forwardRPC() {
		settings[settingForwardRPC] = forward.RPCVersion
	}
	if _, set := settings[settingEncodings]; !set {
		settings[settingEncodings] = fsm.KnownEncodings() // "0" is how an older peer is played in tests
	}
	if v := c.Version; v != "" {
		// Gossip metadata must stay within memberlist's 512 bytes.
		settings[settingVersion] = v[:min(len(v), maxVersionLen)]
	}
	if c.QuotaDefaults != nil {
		settings[settingQuota] = quotaDigest(c.QuotaDefaults)
	}
	c.Settings = settings
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = 500 * time.Millisecond
	}
	if c.DeadGrace == 0 {
		c.DeadGrace = 10 * time.Second
	}
	if c.DownGrace == 0 {
		c.DownGrace = DefaultDownGrace
	}
	if c.RefusedGrace == 0 {
		c.RefusedGrace = DefaultRefusedGrace
	}
	if c.SilentGrace == 0 {
		c.SilentGrace = DefaultSilentGrace
	}
	if c.UpGrace == 0 {
		c.UpGrace = time.Second
	}
	if c.FreezeFraction == 0 {
		c.FreezeFraction = 0.5
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Store == nil {
		c.Store = fsm.New()
	}
}

// forwardRPC reports whether this peer serves and uses forwarding's RPC.
func (c *Config) forwardRPC() bool {
	return c.Transport == nil && c.Forwarder == nil && !c.NoForwardRPC
}

// Validate checks the configuration and returns every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if !nameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("name %q is not a valid host name: use letters, digits, '.', '-' or '_' (max 64)", c.Name))
	}
	if c.DataDir == "" && !c.InmemStore {
		errs = append(errs, errors.New("data dir is empty: set --data-dir or [DEFAULT] data_dir"))
	}
	if c.Transport == nil {
		if net.ParseIP(c.BindAddr) == nil {
			errs = append(errs, fmt.Errorf("bind address %q is not an IP address: set --bind, e.g. 127.0.0.2", c.BindAddr))
		}
		if c.RaftPort <= 0 || c.RaftPort > 65535 {
			errs = append(errs, fmt.Errorf("raft port %d is out of range 1-65535: set --raft-port", c.RaftPort))
		}
	}
	if c.GossipPort < 0 || c.GossipPort > 65535 {
		errs = append(errs, fmt.Errorf("gossip port %d is out of range 0-65535: set --gossip-port", c.GossipPort))
	}
	if _, _, err := net.SplitHostPort(c.APIAddr); err != nil {
		errs = append(errs, fmt.Errorf("API address %q is not host:port: %w", c.APIAddr, err))
	}
	if c.Kind != fsm.KindIronic && c.Kind != fsm.KindHypervisor {
		errs = append(errs, fmt.Errorf("host kind %q is unknown: use %s or %s", c.Kind, fsm.KindIronic, fsm.KindHypervisor))
	}
	if c.BootstrapExpect < 0 {
		errs = append(errs, fmt.Errorf("bootstrap-expect %d is negative", c.BootstrapExpect))
	}
	if c.MaxVoters < 1 {
		errs = append(errs, fmt.Errorf("max voters %d must be at least 1", c.MaxVoters))
	}
	if c.Raft.LeaderLeaseTimeout > c.Raft.HeartbeatTimeout {
		errs = append(errs, fmt.Errorf("raft leader lease timeout %s must not exceed the heartbeat timeout %s", c.Raft.LeaderLeaseTimeout, c.Raft.HeartbeatTimeout))
	}
	if c.Raft.ElectionTimeout < c.Raft.HeartbeatTimeout {
		errs = append(errs, fmt.Errorf("raft election timeout %s must be at least the heartbeat timeout %s", c.Raft.ElectionTimeout, c.Raft.HeartbeatTimeout))
	}
	if c.SilentGrace > 0 && c.SilentGrace < MinSilentGrace {
		errs = append(errs, fmt.Errorf("failover silent grace %s must be at least %s (the leader pings every %s), or off",
			c.SilentGrace, MinSilentGrace, hearingPingEvery))
	}
	if c.FreezeFraction < 0 || c.FreezeFraction > 1 {
		errs = append(errs, fmt.Errorf("failover freeze fraction %v must be in (0, 1] (0 means the default, 0.5)", c.FreezeFraction))
	}
	if c.GossipKey != "" {
		if _, err := ParseGossipKey(c.GossipKey); err != nil {
			errs = append(errs, fmt.Errorf("[gossip] encrypt: %w", err))
		}
	}
	if c.TLS == nil && len(c.PeerToken) < MinPeerTokenLen {
		errs = append(errs, fmt.Errorf("%w: without TLS, peers prove who they are with the peer token: set [auth] peer_token to the same secret of at least %d characters on every peer, or turn on [tls] with peer certificates", ErrNoPeerIdentity, MinPeerTokenLen))
	}
	if c.Gossip.ProbeTimeout > c.Gossip.ProbeInterval {
		errs = append(errs, fmt.Errorf("gossip probe timeout %s must not exceed the probe interval %s", c.Gossip.ProbeTimeout, c.Gossip.ProbeInterval))
	}
	return errors.Join(errs...)
}
