package cluster

import (
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	applyLatency       prometheus.Histogram
	proposeLatency     prometheus.Histogram
	forwardedWrite     *prometheus.CounterVec
	forwardedRead      *prometheus.CounterVec
	forwardRPC         *prometheus.CounterVec
	forwardRPCServed   *prometheus.CounterVec
	forwardRPCSessions *prometheus.CounterVec
	restores           prometheus.Counter
	leaderChanges      prometheus.Counter
	reconcileErrs      prometheus.Counter
	detect             prometheus.Histogram
	plan               prometheus.Histogram
	reassigned         prometheus.Counter
	freezes            prometheus.Counter
	frozen             prometheus.Gauge
	tlsRefused         *prometheus.CounterVec
	raftRefused        *prometheus.CounterVec
	admissionRefused   prometheus.Counter
	deadVotersRemoved  prometheus.Counter
	votesRefused       prometheus.Counter
	caughtUp           prometheus.Counter
	catchupNonvoters   prometheus.Counter
	createBatch        prometheus.Histogram
	// A follower's election on its leader's refused connections (leaderwatch.go).
	leaderProbes           *prometheus.CounterVec
	leaderRefusedElections *prometheus.CounterVec
	refusedLeaderPreVotes  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, n *Node) (*metrics, error) {
	m := &metrics{
		applyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "corral_fsm_apply_duration_seconds",
			Help:    "Time to apply one committed raft entry to the FSM.",
			Buckets: prometheus.ExponentialBuckets(0.000005, 4, 10),
		}),
		proposeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "corral_propose_duration_seconds",
			Help:    "Time from a write's proposal on this peer to its commit and local apply (forwarding included).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		forwardedWrite: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_forwarded_writes_total",
			Help: "Writes this follower forwarded to the leader, by outcome.",
		}, []string{"outcome"}),
		forwardedRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_forwarded_reads_total",
			Help: "Read-index requests this follower sent to the leader, by consistency and outcome.",
		}, []string{"consistency", "outcome"}),
		forwardRPC: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_forward_rpc_requests_total",
			Help: "Requests this follower forwarded to the leader over the binary RPC (the others go over HTTP), by operation (apply, read_index) and outcome (ok, rejected, not_leader, not_delivered, error).",
		}, []string{"op", "outcome"}),
		forwardRPCServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_forward_rpc_served_total",
			Help: "Requests of followers this peer answered over the binary RPC, by operation and outcome.",
		}, []string{"op", "outcome"}),
		forwardRPCSessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_forward_rpc_sessions_total",
			Help: "Sessions of the binary RPC this follower opened to a leader (opened: the first and every reconnection), could not open (failed) or lost (their connection broke).",
		}, []string{"event"}),
		restores: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_fsm_snapshot_restores_total",
			Help: "Snapshots restored into the FSM (at start or sent by the leader).",
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_leadership_changes_total",
			Help: "Times this peer gained or lost leadership.",
		}),
		reconcileErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_leader_reconcile_errors_total",
			Help: "Failed leader reconcile steps (gossip into raft and the host list).",
		}),
	}
	m.detect = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "corral_failover_detect_seconds", Help: "From a host's death nominated by gossip to HostDown committed (leader).",
		Buckets: prometheus.ExponentialBuckets(0.1, 1.5, 14),
	})
	m.plan = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "corral_failover_plan_seconds", Help: "From HostDown committed to the reassignment plan committed (leader).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	})
	m.reassigned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_reassignments_total", Help: "Servers given a new owner by this peer as leader.",
	})
	m.freezes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_failover_freezes_total", Help: "Times failover froze because too many hosts were lost at once.",
	})
	m.frozen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "corral_failover_frozen", Help: "1 while failover is frozen on this leader.",
	})
	m.tlsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "corral_tls_handshakes_refused_total", Help: "Incoming connections refused because their TLS handshake failed (no certificate, or one not signed by the cluster's CA), by listener.",
	}, []string{"listener"})
	m.raftRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "corral_raft_connections_refused_total", Help: "Incoming raft connections refused: the other end did not prove it holds the peer token (peer_token, without TLS), or sent an RPC in another peer's name (sender).",
	}, []string{"reason"})
	m.admissionRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_admission_refused_total", Help: "Gossip members refused as peers: no peer certificate naming them (TLS), or gossip metadata not sealed with the peer token.",
	})
	m.deadVotersRemoved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_raft_dead_voters_removed_total", Help: "Voters this peer as leader removed from raft after they were dead longer than dead_server_cleanup_after.",
	})
	m.votesRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_raft_votes_refused_catching_up_total", Help: "Vote and pre-vote requests this peer refused because it started with an empty log and has not caught up yet.",
	})
	m.caughtUp = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_raft_caught_up_total", Help: "Times this peer, started with an empty log, caught up with the leader and began to vote.",
	})
	m.catchupNonvoters = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_raft_catchup_nonvoters_total", Help: "Peers with an empty raft log this peer as leader made non-voters until they caught up (new peers, wiped data dirs).",
	})
	m.createBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "corral_create_servers_batch_size",
		Help:    "New servers decided together in one CreateServers entry (leader).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 8),
	})
	m.leaderProbes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "corral_raft_leader_probes_total",
		Help: "Dials of the raft and gossip ports of a leader this follower had not heard from for three tenths of the heartbeat timeout, by outcome: refused (nothing listens: its process is gone), accepted (it is there, perhaps paused or slow), no_answer (a timeout: loss, a partition).",
	}, []string{"outcome"})
	m.leaderRefusedElections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "corral_raft_refused_leader_elections_total",
		Help: "Times this follower found its leader's ports refusing connections and asked the other voters for a pre-vote, by outcome: stood (a majority granted it: it stood for election at once, before raft's heartbeat timeout), no_majority (it did not stand).",
	}, []string{"outcome"})
	m.refusedLeaderPreVotes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "corral_raft_refused_leader_prevotes_total",
		Help: "Pre-vote requests this peer received while it named a leader, by outcome: granted or log_behind (that leader's ports refused this peer's dials too, and this peer answered for raft), leader_heard, leader_accepted, leader_no_answer (raft answered, and refused while it names a leader).",
	}, []string{"outcome"})
	for _, c := range []prometheus.Collector{m.leaderProbes, m.leaderRefusedElections, m.refusedLeaderPreVotes, m.createBatch, m.catchupNonvoters, m.tlsRefused, m.raftRefused, m.admissionRefused, m.deadVotersRemoved, m.votesRefused, m.caughtUp, m.detect, m.plan, m.reassigned, m.freezes, m.frozen, m.applyLatency, m.proposeLatency, m.forwardedWrite,
		m.forwardedRead, m.forwardRPC, m.forwardRPCServed, m.forwardRPCSessions, m.restores, m.leaderChanges, m.reconcileErrs, &stateCollector{n: n}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// stateCollector reads raft and gossip state at scrape time.
type stateCollector struct{ n *Node }

var (
	descRaftState   = prometheus.NewDesc("corral_raft_state", "1 for this peer's current raft state.", []string{"state"}, nil)
	descRaftTerm    = prometheus.NewDesc("corral_raft_term", "Current raft term.", nil, nil)
	descCommitIndex = prometheus.NewDesc("corral_raft_commit_index", "Raft commit index known to this peer.", nil, nil)
	descApplied     = prometheus.NewDesc("corral_raft_applied_index", "Last index applied to this peer's FSM.", nil, nil)
	descLastSnap    = prometheus.NewDesc("corral_raft_last_snapshot_index", "Index of the last raft snapshot.", nil, nil)
	descMembers     = prometheus.NewDesc("corral_gossip_members", "Gossip members by status, as seen by this peer.", []string{"status"}, nil)
	descVoters      = prometheus.NewDesc("corral_raft_voters", "Voters in the raft configuration.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRaftState, descRaftTerm, descCommitIndex, descApplied, descLastSnap, descMembers, descVoters} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.n.raft
	if r == nil {
		return
	}
	cur := r.State()
	for _, s := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		v := 0.0
		if s == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descRaftState, prometheus.GaugeValue, v, stateName(s))
	}
	st := c.n.RaftStatus()
	ch <- prometheus.MustNewConstMetric(descRaftTerm, prometheus.GaugeValue, float64(st.Term))
	ch <- prometheus.MustNewConstMetric(descCommitIndex, prometheus.GaugeValue, float64(st.CommitIndex))
	ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(st.AppliedIndex))
	ch <- prometheus.MustNewConstMetric(descLastSnap, prometheus.GaugeValue, float64(st.LastSnapshotIndex))
	ch <- prometheus.MustNewConstMetric(descVoters, prometheus.GaugeValue, float64(len(st.Voters)))
	counts := map[string]int{MemberAlive: 0, MemberDead: 0, MemberLeft: 0}
	if c.n.gossip != nil {
		for _, m := range c.n.gossip.snapshot() {
			counts[m.Status]++
		}
	}
	for s, v := range counts {
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(v), s)
	}
}

func stateName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Candidate:
		return "candidate"
	case raft.Shutdown:
		return "shutdown"
	default:
		return "follower"
	}
}
