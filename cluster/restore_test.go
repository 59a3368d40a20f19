package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// readAtOnce is how long a read may take on a peer that holds the state
// it is asked for: far below the 5 s a read waits for an index that is
// never applied, far above an in-process read on a loaded machine.
const readAtOnce = time.Second

// readsAnswerAtOnce checks that default and linearizable reads on p
// answer within readAtOnce and see the state whose digest is want.
func readsAnswerAtOnce(t *testing.T, p *clustertest.Peer, want string) {
	t.Helper()
	for _, c := range []cluster.Consistency{cluster.Default, cluster.Linearizable} {
		ctx, cancel := context.WithTimeout(context.Background(), readAtOnce)
		start := time.Now()
		err := p.Node.ReadBarrier(ctx, c)
		cancel()
		if err != nil {
			t.Fatalf("%s read on %s after %s: %v", c, p.Name, time.Since(start).Round(time.Millisecond), err)
		}
		if got := p.Node.Store().Digest(); got != want {
			t.Fatalf("%s read on %s sees digest %.8s, want the restored %.8s", c, p.Name, got, want)
		}
	}
}

// stillQuiet fails the test when a peer applied an entry past last, the
// leader's last raft index once the restore was done: a write would let
// the reads answer whatever the restore did, and the test would prove
// nothing.
func stillQuiet(t *testing.T, h *clustertest.Harness, last uint64) {
	t.Helper()
	for _, p := range h.Running() {
		if got := p.Node.Store().AppliedIndex(); got > last {
			t.Fatalf("%s applied index %d, past the last index %d after the restore: a write landed, the cluster was not quiet", p.Name, got, last)
		}
	}
}

// quietWhileDown keeps a killed peer's host up in the state (no HostDown
// write) for as long as a test keeps it down.
func quietWhileDown(c *cluster.Config) {
	c.DownGrace, c.RefusedGrace = time.Minute, -1
}

// saveThenDiverge writes n flavors, saves a snapshot file, then writes
// more, so that the file's state is not the cluster's. It returns the
// file and the digest of the state it holds.
func saveThenDiverge(t *testing.T, leader *clustertest.Peer, n int) ([]byte, string) {
	t.Helper()
	for i := range n {
		if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("kept%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	var file bytes.Buffer
	if _, err := leader.Node.SaveSnapshot(ctxT(t, 10*time.Second), &file); err != nil {
		t.Fatal(err)
	}
	want := leader.Node.Store().Digest()
	for i := range n {
		if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("lost%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	return file.Bytes(), want
}

// TestRestoreServesReadsAtOnce: once a restore returns, and with no write
// after it, default and linearizable reads on every peer answer at once
// with the restored state (invariant 11).
func TestRestoreServesReadsAtOnce(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	file, want := saveThenDiverge(t, leader, 10)
	if _, err := leader.Node.RestoreSnapshot(ctxT(t, 30*time.Second), bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	last := leader.Node.RaftStatus().LastIndex
	readsAnswerAtOnce(t, leader, want)
	for _, p := range h.Followers(leader) {
		readsAnswerAtOnce(t, p, want)
	}
	stillQuiet(t, h, last)
}

// TestInstalledSnapshotServesReadsAtOnce: a follower that was down comes
// back to a quiet cluster, installs the leader's snapshot, and serves
// default and linearizable reads of it at once.
func TestInstalledSnapshotServesReadsAtOnce(t *testing.T) {
	t.Run("restored while it was down", func(t *testing.T) {
		h := clustertest.Start(t, 3, clustertest.Options{Tweak: quietWhileDown})
		leader := h.Leader(10 * time.Second)
		victim := h.Followers(leader)[0]
		file, want := saveThenDiverge(t, leader, 10)
		// The victim's log holds the writes the restore replaces.
		sameState(t, victim, leader.Node.Store().Digest())
		h.Kill(victim.Name)
		if _, err := leader.Node.RestoreSnapshot(ctxT(t, 30*time.Second), bytes.NewReader(file)); err != nil {
			t.Fatal(err)
		}
		last := leader.Node.RaftStatus().LastIndex
		h.Restart(victim.Name)
		installedThenReads(t, victim, want)
		stillQuiet(t, h, last)
	})
	t.Run("log compacted while it was down", func(t *testing.T) {
		h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
			quietWhileDown(c)
			c.Raft.TrailingLogs = 4
			c.Raft.SnapshotThreshold = 8
		}})
		leader := h.Leader(10 * time.Second)
		victim := h.Followers(leader)[0].Name
		h.Kill(victim)
		for i := range 30 {
			if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("c%02d", i))); err != nil {
				t.Fatal(err)
			}
		}
		// A saved backup ends the log with a barrier: the snapshot raft
		// takes next covers an index past the state's last write.
		if _, err := leader.Node.SaveSnapshot(ctxT(t, 10*time.Second), &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if err := leader.Node.Snapshot(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		last := leader.Node.RaftStatus().LastIndex
		h.Restart(victim)
		installedThenReads(t, h.Peer(victim), leader.Node.Store().Digest())
		stillQuiet(t, h, last)
	})
}

// installedThenReads waits until p holds the state whose digest is want
// from a snapshot the leader sent it, then checks its reads.
func installedThenReads(t *testing.T, p *clustertest.Peer, want string) {
	t.Helper()
	sameState(t, p, want)
	if n := metricValue(t, p, "corral_fsm_snapshot_restores_total", ""); n < 1 {
		t.Fatalf("%s caught up without installing a snapshot (restores=%v)", p.Name, n)
	}
	readsAnswerAtOnce(t, p, want)
}

// TestRestoreNotReadStaleOnALaggingFollower: a follower cut off while the
// leader restores never serves, at default or linearizable consistency,
// the state the restore replaced; once it is back it serves the restored
// state at once.
func TestRestoreNotReadStaleOnALaggingFollower(t *testing.T) {
	// p3 keeps believing in its leader while its raft is cut; the other
	// two, a majority, keep their leader on a loaded machine.
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		quietWhileDown(c)
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout = time.Second, time.Second, time.Second
		if c.Name == "p3" {
			c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout = time.Minute, time.Minute
		}
	}})
	leader := h.Leader(15 * time.Second)
	lag := h.Peer("p3")
	file, want := saveThenDiverge(t, leader, 10)
	sameState(t, lag, leader.Node.Store().Digest())
	h.CutRaft(lag.Name)
	if _, err := leader.Node.RestoreSnapshot(ctxT(t, 30*time.Second), bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	if st := lag.Node.RaftStatus(); st.Leader != leader.Name {
		t.Fatalf("%s believes the leader is %q, want %s: the test proves nothing", lag.Name, st.Leader, leader.Name)
	}
	for _, c := range []cluster.Consistency{cluster.Default, cluster.Linearizable} {
		ctx, cancel := context.WithTimeout(context.Background(), readAtOnce)
		err := lag.Node.ReadBarrier(ctx, c)
		cancel()
		if got := lag.Node.Store().Digest(); err == nil && got != want {
			t.Fatalf("%s read on cut-off %s answered with the state the restore replaced (digest %.8s, restored %.8s)", c, lag.Name, got, want)
		}
	}
	last := leader.Node.RaftStatus().LastIndex
	h.Heal(lag.Name)
	installedThenReads(t, lag, want)
	stillQuiet(t, h, last)
}

// sameState waits until p holds the state whose digest is want.
func sameState(t *testing.T, p *clustertest.Peer, want string) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, func() error {
		if got := p.Node.Store().Digest(); got != want {
			return fmt.Errorf("%s holds digest %.8s, want %.8s", p.Name, got, want)
		}
		return nil
	})
}
