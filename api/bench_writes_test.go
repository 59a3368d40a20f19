package api_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// BenchmarkAPIWritesVsRaft (make bench-api-writes) puts corral's write path
// beside the raft it is built on, with the same load in the same run: 64
// clients writing for CORRAL_BENCH_WRITES_SECONDS (default 5) per round,
// CORRAL_BENCH_WRITES_ROUNDS (default 2) interleaved rounds of each kind:
//
//   - raw: three bare hashicorp/raft peers, each with its raft-boltdb/v2 log
//     on disk and raft's TCP transport on loopback, the clients calling
//     raft.Apply on the leader with an entry the size of a flavor command,
//     on an FSM that counts;
//   - leader: corral's in-process three-peer cluster talking over loopback
//     as separate processes do (cluster/clustertest with Network: raft on
//     raft ports behind the peer token's handshake, the same log store and
//     timings), each peer serving its real API over HTTP, the clients
//     sending POST /compute/v2.1/flavors to the leader's API;
//   - spread: the same requests spread round-robin over the three peers'
//     APIs, two in three forwarded by a follower to the leader over
//     forwarding's binary RPC;
//   - spread/http: the same on a second such cluster whose peers do not
//     speak the RPC (as before it), so that followers forward over HTTP.
//
// It prints the writes per second and the ratios (goals ≥ 0.8 through the
// leader, ≥ 0.6 spread over peers); it asserts nothing about time.
func BenchmarkAPIWritesVsRaft(b *testing.B) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		b.Skip("set CORRAL_BENCH=1 to run (make bench-api-writes)")
	}
	d := time.Duration(benchEnvInt("CORRAL_BENCH_WRITES_SECONDS", 5)) * time.Second
	rounds := benchEnvInt("CORRAL_BENCH_WRITES_ROUNDS", 2)
	const clients = 64
	for b.Loop() {
		raw := startRawRaft(b)
		rpc := startBenchCluster(b, false)
		http1 := startBenchCluster(b, true)
		hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128}}
		defer hc.CloseIdleConnections()
		var seq atomic.Int64
		var sums [4]float64
		var table strings.Builder
		for r := 1; r <= rounds; r++ {
			rates := [4]float64{
				raw.load(b, clients, d),
				postFlavors(b, hc, []string{rpc.leaderURL}, &seq, clients, d),
				postFlavors(b, hc, rpc.urls, &seq, clients, d),
				postFlavors(b, hc, http1.urls, &seq, clients, d),
			}
			for i, v := range rates {
				sums[i] += v
			}
			fmt.Fprintf(&table, "  %-6d %-9.0f %-10.0f %-10.0f %-12.0f %-11.2f %-11.2f %.2f\n", r, rates[0], rates[1], rates[2], rates[3],
				rates[1]/rates[0], rates[2]/rates[0], rates[3]/rates[0])
		}
		for _, c := range []*benchCluster{rpc, http1} {
			if c.h.Leader(10*time.Second) != c.leader {
				b.Log("a corral leader changed during the run: the spread figures include forwarding to a new leader")
			}
		}
		n := float64(rounds)
		b.ReportMetric(sums[0]/n, "raw-commits/s")
		b.ReportMetric(sums[1]/n, "leader-writes/s")
		b.ReportMetric(sums[2]/n, "spread-writes/s")
		b.ReportMetric(sums[3]/n, "spread-http-writes/s")
		b.ReportMetric(sums[1]/sums[0], "leader/raw")
		b.ReportMetric(sums[2]/sums[0], "spread/raw")
		b.ReportMetric(sums[3]/sums[0], "spread-http/raw")
		fmt.Printf("\nAPI writes vs raw raft+boltdb: 3 peers in one process over loopback, %d clients, %s per round\n", clients, d)
		fmt.Printf("machine: %s/%s, %d CPUs, %s, load average %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
			runtime.Version(), loadAvg())
		fmt.Printf("  %-6s %-9s %-10s %-10s %-12s %-11s %-11s %s\n", "round", "raw /s", "leader /s", "spread /s", "spread/http", "leader÷raw",
			"spread÷raw", "spread/http÷raw")
		fmt.Print(table.String())
		fmt.Printf("  %-6s %-9.0f %-10.0f %-10.0f %-12.0f %-11.2f %-11.2f %.2f   (goals: ≥ 0.8, ≥ 0.6)\n", "all", sums[0]/n,
			sums[1]/n, sums[2]/n, sums[3]/n, sums[1]/sums[0], sums[2]/sums[0], sums[3]/sums[0])
		rpc.h.Close()
		http1.h.Close()
		raw.close()
	}
}

// benchCluster is three peers over loopback, each serving its API.
type benchCluster struct {
	h         *clustertest.Harness
	leader    *clustertest.Peer
	leaderURL string
	urls      []string
}

// startBenchCluster starts three peers talking over loopback with their
// APIs served; with noRPC they forward over HTTP, as peers did before
// forwarding's RPC.
func startBenchCluster(tb testing.TB, noRPC bool) *benchCluster {
	tb.Helper()
	h := clustertest.Start(tb, 3, clustertest.Options{Logger: slog.New(slog.DiscardHandler), Network: true,
		Tweak: func(cfg *cluster.Config) {
			cfg.Raft.HeartbeatTimeout, cfg.Raft.ElectionTimeout = benchRaft.HeartbeatTimeout, benchRaft.ElectionTimeout
			cfg.Raft.LeaderLeaseTimeout, cfg.Raft.CommitTimeout = benchRaft.LeaderLeaseTimeout, benchRaft.CommitTimeout
			cfg.PeerPaths = api.PeerPaths()
			cfg.NoForwardRPC = noRPC
		}})
	c := &benchCluster{h: h, leader: h.Leader(10 * time.Second)}
	for _, p := range h.Running() {
		url := serveTB(tb, p)
		c.urls = append(c.urls, url)
		if p == c.leader {
			c.leaderURL = url
		}
	}
	return c
}

// loadAvg is the first three fields of /proc/loadavg ("?" elsewhere).
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// serveTB serves one peer's API on its address until the benchmark ends
// and returns its URL.
func serveTB(tb testing.TB, p *clustertest.Peer) string {
	tb.Helper()
	srv, err := api.New(api.Config{
		Tokens:   map[string]core.Role{adminToken: core.RoleAdmin},
		Peers:    p.Node, // forwarding over HTTP reaches the leader's peers' endpoints
		Registry: p.Registry,
		Gatherer: p.Registry,
		Logger:   slog.New(slog.DiscardHandler),
	}, p.Node)
	if err != nil {
		tb.Fatalf("api.New for %s: %v", p.Name, err)
	}
	p.Serve(srv.Handler())
	return "http://" + p.APIAddr()
}

// postFlavors creates flavors from clients goroutines for d, client i
// sending to urls[i % len(urls)], and returns the created flavors per
// second. Any answer but 200 fails the benchmark.
func postFlavors(tb testing.TB, hc *http.Client, urls []string, seq *atomic.Int64, clients int, d time.Duration) float64 {
	tb.Helper()
	var n, bad atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range clients {
		url := urls[i%len(urls)] + computeBase + "/flavors"
		wg.Go(func() {
			for time.Now().Before(deadline) {
				k := seq.Add(1)
				body := fmt.Sprintf(`{"flavor":{"name":"bench-%d","ram":4096,"vcpus":2,"disk":40}}`, k)
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("X-Auth-Token", adminToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				msg, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, msg))
					continue
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		tb.Fatalf("%d flavor creations failed, first: %v", bad.Load(), firstErr.Load())
	}
	return float64(n.Load()) / d.Seconds()
}

// rawRaft is three bare raft peers with boltdb logs.
type rawRaft struct {
	rafts  []*raft.Raft
	stores []*raftboltdb.BoltStore
	trans  []*raft.NetworkTransport
	entry  []byte
}

// countFSM applies by counting.
type countFSM struct{ n atomic.Uint64 }

func (f *countFSM) Apply(*raft.Log) any { return f.n.Add(1) }

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return countSnap(f.n.Load()), nil }

func (f *countFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

type countSnap uint64

func (s countSnap) Persist(sink raft.SnapshotSink) error {
	if _, err := fmt.Fprintf(sink, "%d", uint64(s)); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (countSnap) Release() {}

// benchRaft are the raft timings of both kinds of peers: clustertest's,
// with a heartbeat timeout of a second, so that three clusters and 64
// clients on a loaded machine do not make a leader step down mid-round.
var benchRaft = cluster.RaftTimings{HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
	LeaderLeaseTimeout: time.Second, CommitTimeout: 5 * time.Millisecond}

// startRawRaft starts three raft peers with benchRaft's timings and waits
// for a leader.
func startRawRaft(tb testing.TB) *rawRaft {
	tb.Helper()
	// The entry corral's leader writes (in the encoding it writes once
	// every peer reads it), so that both sides commit as many bytes.
	entry, err := fsm.EncodeAs(&fsm.CreateFlavor{Meta: fsm.Meta{At: time.Now().UTC(), RequestID: "req-00000000-0000-0000-0000-000000000000"},
		Flavor: fsm.Flavor{ID: "00000000-0000-4000-8000-000000000000", Name: "bench-000000", VCPUs: 2, RAM: 4096, Disk: 40,
			RxTxFactor: 1, IsPublic: true}}, fsm.EncodingMsgpack)
	if err != nil {
		tb.Fatal(err)
	}
	rr := &rawRaft{entry: entry}
	var trans []*raft.NetworkTransport
	var servers []raft.Server
	for i := range 3 {
		// corral's peers pool 3 connections per peer with a 5 s timeout.
		tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 5*time.Second, io.Discard)
		if err != nil {
			tb.Fatal(err)
		}
		trans = append(trans, tr)
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("raw%d", i+1)), Address: tr.LocalAddr()})
	}
	for i, tr := range trans {
		dir := tb.TempDir()
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		if err != nil {
			tb.Fatal(err)
		}
		rc := raft.DefaultConfig()
		rc.LocalID = servers[i].ID
		rc.HeartbeatTimeout, rc.ElectionTimeout = benchRaft.HeartbeatTimeout, benchRaft.ElectionTimeout
		rc.LeaderLeaseTimeout, rc.CommitTimeout = benchRaft.LeaderLeaseTimeout, benchRaft.CommitTimeout
		rc.LogOutput = io.Discard
		rc.BatchApplyCh = true                     // as corral's peers run it
		cached, err := raft.NewLogCache(512, bolt) // as corral's peers keep recent entries
		if err != nil {
			tb.Fatal(err)
		}
		r, err := raft.NewRaft(rc, &countFSM{}, cached, bolt, raft.NewDiscardSnapshotStore(), tr)
		if err != nil {
			tb.Fatal(err)
		}
		rr.rafts = append(rr.rafts, r)
		rr.stores = append(rr.stores, bolt)
	}
	rr.trans = trans
	if err := rr.rafts[0].BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		tb.Fatal(err)
	}
	testkit.Eventually(tb, 10*time.Second, func() error {
		if rr.leader() == nil {
			return fmt.Errorf("no raw raft leader")
		}
		return nil
	})
	return rr
}

func (rr *rawRaft) leader() *raft.Raft {
	for _, r := range rr.rafts {
		if r.State() == raft.Leader {
			return r
		}
	}
	return nil
}

// load commits entries from clients goroutines through the leader for d
// and returns commits per second.
func (rr *rawRaft) load(tb testing.TB, clients int, d time.Duration) float64 {
	tb.Helper()
	var n, bad atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				l := rr.leader()
				if l == nil {
					bad.Add(1)
					continue
				}
				if err := l.Apply(bytes.Clone(rr.entry), 5*time.Second).Error(); err != nil {
					bad.Add(1)
					continue
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		tb.Logf("raw raft: %d applies failed (leader change)", bad.Load())
	}
	return float64(n.Load()) / d.Seconds()
}

func (rr *rawRaft) close() {
	for _, r := range rr.rafts {
		_ = r.Shutdown().Error()
	}
	for _, s := range rr.stores {
		_ = s.Close()
	}
	for _, t := range rr.trans {
		_ = t.Close()
	}
}
