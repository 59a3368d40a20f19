package placement

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

const (
	benchProviders = 100_000
	benchClasses   = 5
	benchTraits    = 20
)

var (
	bench100kOnce  sync.Once
	bench100kStore *Store
)

func benchClass(i int) string { return fmt.Sprintf("CUSTOM_C%d", i) }
func benchTrait(i int) string { return fmt.Sprintf("CUSTOM_T%02d", i) }

// build100k builds 10^5 bare-metal-like providers in random UUID order:
// one unit of one of 5 custom classes each, 4 traits out of 20, and about
// half of them allocated.
func build100k(tb testing.TB) *Store {
	r := rand.New(rand.NewPCG(42, 42))
	s := New()
	for i := 0; i < benchProviders; i++ {
		a, b := r.Uint64(), r.Uint64()
		uuid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0xfff, b&0xffffffffffff)
		perm := r.Perm(benchTraits)[:4]
		traits := make([]string, len(perm))
		for j, t := range perm {
			traits[j] = benchTrait(t)
		}
		rc := benchClass(i % benchClasses)
		_, err := s.CreateProvider(Provider{UUID: uuid, Name: fmt.Sprintf("node-%06d", i), Traits: traits,
			Inventories: map[string]Inventory{rc: {Total: 1}}})
		if err != nil {
			tb.Fatal(err)
		}
		if r.IntN(2) == 0 {
			err := s.SetAllocations(uid(1, i), ConsumerAllocations{ProjectID: "p", UserID: "u",
				Allocations: map[string]map[string]int64{uuid: {rc: 1}}})
			if err != nil {
				tb.Fatal(err)
			}
		}
	}
	return s
}

func store100k(tb testing.TB) *Store {
	bench100kOnce.Do(func() { bench100kStore = build100k(tb) })
	return bench100kStore
}

func benchQuery(r *rand.Rand, seeded bool) CandidateQuery {
	t1 := r.IntN(benchTraits)
	t2 := (t1 + 1 + r.IntN(benchTraits-1)) % benchTraits
	q := CandidateQuery{
		Resources: map[string]int64{benchClass(r.IntN(benchClasses)): 1},
		Required:  []string{benchTrait(t1), benchTrait(t2)},
		Limit:     1000,
	}
	if seeded {
		q.Seed = uid(1, r.IntN(1<<20))
	}
	return q
}

func BenchmarkBuild100k(b *testing.B) {
	for b.Loop() {
		build100k(b)
	}
}

func BenchmarkCandidates100k(b *testing.B) {
	s := store100k(b)
	q := CandidateQuery{Resources: map[string]int64{"CUSTOM_C0": 1},
		Required: []string{"CUSTOM_T00", "CUSTOM_T01"}, Limit: 1000}
	var cs []Candidate
	for b.Loop() {
		var err error
		if cs, err = s.Candidates(q); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(cs)), "candidates")
}

func BenchmarkCandidatesSeeded100k(b *testing.B) {
	s := store100k(b)
	q := CandidateQuery{Resources: map[string]int64{"CUSTOM_C0": 1},
		Required: []string{"CUSTOM_T00", "CUSTOM_T01"}, Limit: 10, Seed: uid(1, 7)}
	for b.Loop() {
		if _, err := s.Candidates(q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCandidatesLatency100k runs 1000 varied queries (random class and
// two random required traits, half of them seeded) and reports the p50, p99
// and maximum of their wall-clock time and of the CPU time of the thread
// running them (which excludes waiting for a CPU on a busy machine).
func BenchmarkCandidatesLatency100k(b *testing.B) {
	s := store100k(b)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var wall, cpu []time.Duration
	for b.Loop() {
		r := rand.New(rand.NewPCG(7, 7))
		wall, cpu = make([]time.Duration, 1000), make([]time.Duration, 1000)
		for i := range wall {
			q := benchQuery(r, i%2 == 1)
			start, startCPU := time.Now(), threadCPU()
			if _, err := s.Candidates(q); err != nil {
				b.Fatal(err)
			}
			wall[i], cpu[i] = time.Since(start), threadCPU()-startCPU
		}
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"wall", wall}, {"cpu", cpu}} {
		slices.Sort(m.d)
		b.ReportMetric(ms(m.d[len(m.d)/2]), m.name+"-p50-ms")
		b.ReportMetric(ms(m.d[len(m.d)*99/100]), m.name+"-p99-ms")
		b.ReportMetric(ms(m.d[len(m.d)-1]), m.name+"-max-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func BenchmarkSnapshot100k(b *testing.B) {
	s := store100k(b)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if _, err := s.WriteTo(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/1e6, "MB")
}

func BenchmarkRestore100k(b *testing.B) {
	s := store100k(b)
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Restore(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClone100k(b *testing.B) {
	s := store100k(b)
	for b.Loop() {
		s.Clone()
	}
}
