package fsm

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit"
)

// The codec benchmarks measure what every peer pays per log entry: the
// leader's encode, and on every peer the decode and Apply (which decodes
// too) of representative entries, in each entry encoding:
//
//	go test -run '^$' -bench 'Benchmark(Encode|Decode|ApplyEntry)$' -benchmem ./fsm/

// benchEncoding is one way of writing a log entry.
type benchEncoding struct {
	name   string
	encode func(Command) ([]byte, error)
}

var benchEncodings = []benchEncoding{
	{"json", Encode},
	{"msgpack", func(c Command) ([]byte, error) { return EncodeAs(c, EncodingMsgpack) }},
}

// benchEntry is a representative log entry and the store it applies to:
// fresh returns the store as it stands before the entry; apply's entries
// are applied in turn, the store made fresh again after the last.
type benchEntry struct {
	name  string
	cmds  []Command // each applies to the store the previous ones left
	fresh func(tb testing.TB) *Store
}

// benchBoot is one boot request as the API writes it: a name, a flavor,
// an image, a network, metadata, a key pair, tags and a description.
func benchBoot(from, n int) ServerSet {
	set := bootRequest(from, n, 1)
	set.Server.Meta = Meta{RequestID: fmt.Sprintf("req-%08d-0000-4000-8000-000000000000", from)}
	set.Server.Networks = []Network{{UUID: "6b7d9a55-5b47-4b0a-8a3b-6f1e2f0d0a11"}}
	set.Server.Metadata = map[string]string{"role": "web", "tier": "front", "owner": "team-7"}
	set.Server.KeyName = "ops"
	return set
}

// benchCluster is the store boots apply to: three Ironic hosts, the
// bare-metal flavor, n nodes, the key pair.
func benchCluster(tb testing.TB, n int) *Store {
	a := newApplier(tb)
	for _, h := range []string{"h1", "h2", "h3"} {
		a.ok(&RegisterHost{Meta: at(0), Name: h, Kind: KindIronic})
	}
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = benchNode(i)
	}
	for len(nodes) > 0 {
		k := min(len(nodes), 500)
		a.ok(&SyncNodes{Meta: at(0), Upserts: nodes[:k]})
		nodes = nodes[k:]
	}
	f := testFlavor("bm", "bare-metal-gold")
	f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
		"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	a.ok(&CreateFlavor{Meta: at(0), Flavor: f})
	a.ok(&CreateKeyPair{Meta: at(0), KeyPair: KeyPair{Name: "ops", UserID: "u1", Type: "ssh",
		PublicKey:   "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGn8m0c0rWq2d6u3f0c2ZpVh9qf3m2b1o8X1x6cXhq0a ops@example",
		Fingerprint: "3f:0a:51:7c:2b:aa:19:e4:05:77:c1:9d:6e:0f:88:12"}})
	return a.s
}

// benchNode is an Ironic node as the mirror writes it.
func benchNode(i int) Node {
	return Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("rack%02d-node%03d", i/40, i%40),
		ResourceClass: "baremetal-gold", ProvisionState: "available", PowerState: "power off",
		Properties:   map[string]string{"cpus": "64", "memory_mb": "131072", "local_gb": "371", "cpu_arch": "x86_64"},
		Capabilities: map[string]string{"boot_mode": "uefi"}, Traits: []string{"CUSTOM_GOLD", "CUSTOM_RACK_A"}}
}

// benchSets returns rounds CreateServerSets entries of perRound boot
// requests of one server each, decided by the leader's scheduler one
// after the other, and the store they apply to.
func benchSets(tb testing.TB, perRound, rounds int) benchEntry {
	fresh := func(tb testing.TB) *Store { return benchCluster(tb, perRound*rounds) }
	s := fresh(tb)
	var cmds []Command
	for r := range rounds {
		sets := make([]ServerSet, perRound)
		for i := range sets {
			sets[i] = benchBoot(r*perRound+i, 1)
		}
		d, ok := s.Schedule(&CreateServerSets{Meta: at(5 + r), Sets: sets}, nil)
		if !ok {
			tb.Fatal("a CreateServerSets carries no decision")
		}
		res := s.Apply(s.AppliedIndex()+1, mustEncode(tb, d.Command))
		for i, r := range res.Value.(BatchResult) {
			if r.Err != nil {
				tb.Fatalf("boot %d: %v", i, r.Err)
			}
		}
		cmds = append(cmds, d.Command)
	}
	return benchEntry{name: fmt.Sprintf("CreateServerSets%d", perRound), cmds: cmds, fresh: fresh}
}

// benchEntries are the entries measured: a batch of one boot and of 64
// (the leader's batches under load), the node mirror's sync of 100
// nodes, an owner's progress report, a Neutron port recorded.
func benchEntries(tb testing.TB) []benchEntry {
	one, many := benchSets(tb, 1, 8), benchSets(tb, 64, 4)
	booted := func(tb testing.TB) (*Store, Server) {
		s := benchCluster(tb, 8)
		if r := s.Apply(s.AppliedIndex()+1, mustEncode(tb, one.cmds[0])); r.Err != nil {
			tb.Fatal(r.Err)
		}
		srv, err := s.Server(sid(0))
		if err != nil {
			tb.Fatal(err)
		}
		return s, srv
	}
	_, srv := booted(tb)
	nodes := make([]Node, 100)
	for i := range nodes {
		nodes[i] = benchNode(i)
		nodes[i].PowerState, nodes[i].LastSeen = "power on", at(3).At
	}
	return []benchEntry{one, many,
		{name: "SyncNodes100", cmds: []Command{&SyncNodes{Meta: at(9), Upserts: nodes}},
			fresh: func(tb testing.TB) *Store { return benchCluster(tb, 100) }},
		{name: "SetServerTask", cmds: []Command{&SetServerTask{Meta: Meta{At: at(9).At, RequestID: "req-1", Bounded: true},
			ID: srv.ID, Host: srv.Host, Epoch: srv.Epoch, Status: StatusBuild, TaskState: "spawning"}},
			fresh: func(tb testing.TB) *Store { s, _ := booted(tb); return s }},
		{name: "RecordServerPort", cmds: []Command{&RecordServerPort{Meta: at(9), ID: srv.ID, Host: srv.Host, Epoch: srv.Epoch,
			Port: ServerPort{ID: "3b1c2a9e-6f0d-4c55-9e1a-2f7d3c4b5a60", NetworkID: "6b7d9a55-5b47-4b0a-8a3b-6f1e2f0d0a11",
				NetworkName: "provider", MAC: "fa:16:3e:12:34:56",
				FixedIPs: []PortIP{{Address: "192.0.2.17", Version: 4}, {Address: "2001:db8::17", Version: 6}}}}},
			fresh: func(tb testing.TB) *Store { s, _ := booted(tb); return s }},
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, e := range benchEntries(b) {
		for _, enc := range benchEncodings {
			b.Run(e.name+"/"+enc.name, func(b *testing.B) {
				data, err := enc.encode(e.cmds[0])
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				cpu := testkit.ProcessCPU()
				for b.Loop() {
					if _, err := enc.encode(e.cmds[0]); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, cpu)
			})
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, e := range benchEntries(b) {
		for _, enc := range benchEncodings {
			b.Run(e.name+"/"+enc.name, func(b *testing.B) {
				data, err := enc.encode(e.cmds[0])
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				cpu := testkit.ProcessCPU()
				for b.Loop() {
					if _, err := Decode(data); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// BenchmarkApplyEntry applies each entry (decode included) to the store
// it was decided on. Entries that cannot apply twice (boots) are applied
// in turn and the store restored, off the clock, once they are used up;
// the others are applied again and again.
func BenchmarkApplyEntry(b *testing.B) {
	for _, e := range benchEntries(b) {
		for _, enc := range benchEncodings {
			b.Run(e.name+"/"+enc.name, func(b *testing.B) {
				entries := make([][]byte, len(e.cmds))
				for i, c := range e.cmds {
					data, err := enc.encode(c)
					if err != nil {
						b.Fatal(err)
					}
					entries[i] = data
				}
				s := e.fresh(b)
				base := snapshotBytes(b, s)
				b.ReportAllocs()
				var restoring time.Duration // CPU time of the restores, not counted
				cpu := testkit.ProcessCPU()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := i % len(entries)
					if k == 0 && i > 0 && len(entries) > 1 {
						b.StopTimer()
						start := testkit.ProcessCPU()
						if err := s.Restore(bytes.NewReader(base)); err != nil {
							b.Fatal(err)
						}
						restoring += testkit.ProcessCPU() - start
						b.StartTimer()
					}
					r := s.Apply(s.AppliedIndex()+1, entries[k])
					if r.Err != nil {
						b.Fatal(r.Err)
					}
					if br, ok := r.Value.(BatchResult); ok && br[0].Err != nil {
						b.Fatal(br[0].Err)
					}
				}
				reportCPU(b, cpu+restoring)
			})
		}
	}
}
