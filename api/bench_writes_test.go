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
	"github.com/corral-dev/corral/testkit/benchrow"
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
//   - spread/ryw: the same with X-Corral-Read-Your-Writes: true, so that
//     the follower that took a write answers once it has applied it too
//     (every follower write did so before that header);
//   - spread/http: the same on a second such cluster whose peers do not
//     speak the RPC (as before it), so that followers forward over HTTP.
//
// It prints the writes per second and the ratios (goals ≥ 0.8 through the
// leader, ≥ 0.6 spread over peers), and both ratios as rows of make
// bench's table (testkit/benchrow); it asserts nothing about time.
// CORRAL_BENCH_WRITES_KINDS (e.g. "leader") runs only the kinds named.
// CORRAL_BENCH_SIZE=small makes the rounds 2 s and runs raw, leader and
// spread only.
func BenchmarkAPIWritesVsRaft(b *testing.B) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		b.Skip("set CORRAL_BENCH=1 to run (make bench-api-writes)")
	}
	// CORRAL_BENCH_SIZE=small: rounds of 2 s, and only the kinds of the
	// goals (make bench).
	size := benchrow.Size(b)
	d := time.Duration(benchEnvInt("CORRAL_BENCH_WRITES_SECONDS", benchrow.Pick(size, 2, 5))) * time.Second
	rounds := benchEnvInt("CORRAL_BENCH_WRITES_ROUNDS", 2)
	// CORRAL_BENCH_WRITES_KINDS (default: every kind) runs only some of
	// them, to profile one alone.
	names := []string{"raw", "leader", "spread", "spread/ryw", "spread/http"}
	want := map[string]bool{}
	for _, k := range names {
		want[k] = true
	}
	kinds := os.Getenv("CORRAL_BENCH_WRITES_KINDS")
	if kinds == "" && size == benchrow.Small {
		kinds = "raw,leader,spread"
	}
	if kinds != "" {
		clear(want)
		for k := range strings.SplitSeq(kinds, ",") {
			want[strings.TrimSpace(k)] = true
		}
	}
	const clients = 64
	for b.Loop() {
		var raw *rawRaft
		var rpc, http1 *benchCluster
		if want["raw"] {
			raw = startRawRaft(b)
		}
		if want["leader"] || want["spread"] || want["spread/ryw"] {
			rpc = startBenchCluster(b, false)
		}
		if want["spread/http"] {
			http1 = startBenchCluster(b, true)
		}
		hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128}}
		defer hc.CloseIdleConnections()
		var seq atomic.Int64
		ryw := map[string]string{core.ReadYourWritesHeader: "true"}
		run := map[string]func() float64{
			"raw":         func() float64 { return raw.load(b, clients, d) },
			"leader":      func() float64 { return postFlavors(b, hc, []string{rpc.leaderURL}, nil, &seq, clients, d) },
			"spread":      func() float64 { return postFlavors(b, hc, rpc.urls, nil, &seq, clients, d) },
			"spread/ryw":  func() float64 { return postFlavors(b, hc, rpc.urls, ryw, &seq, clients, d) },
			"spread/http": func() float64 { return postFlavors(b, hc, http1.urls, nil, &seq, clients, d) },
		}
		sums := map[string]float64{}
		var table strings.Builder
		row := func(label string, rates map[string]float64) {
			fmt.Fprintf(&table, "  %-6s", label)
			for _, k := range names {
				fmt.Fprintf(&table, " %-12s", rate(rates, k))
			}
			for _, k := range names[1:] {
				fmt.Fprintf(&table, " %-12s", ratio(rates, k, "raw"))
			}
			table.WriteString("\n")
		}
		for r := 1; r <= rounds; r++ {
			rates := map[string]float64{}
			for _, k := range names {
				if want[k] {
					rates[k] = run[k]()
					sums[k] += rates[k] / float64(rounds)
				}
			}
			row(fmt.Sprint(r), rates)
		}
		row("all", sums)
		for _, c := range []*benchCluster{rpc, http1} {
			if c != nil && c.h.Leader(10*time.Second) != c.leader {
				b.Log("a corral leader changed during the run: the spread figures include forwarding to a new leader")
			}
		}
		for _, k := range names {
			if want[k] {
				b.ReportMetric(sums[k], strings.ReplaceAll(k, "/", "-")+"-writes/s")
			}
			if k != "raw" && want[k] && want["raw"] {
				b.ReportMetric(sums[k]/sums["raw"], strings.ReplaceAll(k, "/", "-")+"/raw")
			}
		}
		fmt.Printf("\nAPI writes vs raw raft+boltdb: 3 peers in one process over loopback, %d clients, %s per round\n", clients, d)
		fmt.Printf("machine: %s/%s, %d CPUs, %s, load average %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
			runtime.Version(), loadAvg())
		fmt.Printf("  %-6s", "round")
		for _, k := range names {
			fmt.Printf(" %-12s", k+" /s")
		}
		for _, k := range names[1:] {
			fmt.Printf(" %-12s", k+"÷raw")
		}
		fmt.Print("\n" + table.String() + "  (goals: leader÷raw ≥ 0.8, spread÷raw ≥ 0.6; spread/ryw: with X-Corral-Read-Your-Writes)\n")
		scale := fmt.Sprintf("%d rounds of %s, %d clients", rounds, d, clients)
		for _, g := range []struct{ row, kind, goal string }{
			{"api-writes-leader-ratio", "leader", ">= 0.8"}, {"api-writes-spread-ratio", "spread", ">= 0.6"}} {
			if want[g.kind] && want["raw"] && sums["raw"] > 0 {
				benchrow.Emit(b, benchrow.Row{Row: g.row, Value: sums[g.kind] / sums["raw"], Unit: "× raw", Goal: g.goal, Scale: scale})
			}
		}
		for _, c := range []*benchCluster{rpc, http1} {
			if c != nil {
				c.h.Close()
			}
		}
		if raw != nil {
			raw.close()
		}
	}
}

// rate is k's writes per second in rates ("-" when it did not run).
func rate(rates map[string]float64, k string) string {
	if v, ok := rates[k]; ok {
		return fmt.Sprintf("%.0f", v)
	}
	return "-"
}

// ratio is rates[k] ÷ rates[of] ("-" when either did not run).
func ratio(rates map[string]float64, k, of string) string {
	v, ok1 := rates[k]
	w, ok2 := rates[of]
	if !ok1 || !ok2 || w == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/w)
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
// sending to urls[i % len(urls)] with the headers hdr, and returns the created flavors per
// second. Any answer but 200 fails the benchmark.
func postFlavors(tb testing.TB, hc *http.Client, urls []string, hdr map[string]string, seq *atomic.Int64, clients int, d time.Duration) float64 {
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
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
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
