package placement

import (
	"slices"

	"github.com/corral-dev/corral/fsm/sched"
)

// ProviderFilter selects providers for Providers. Every set field must
// match.
type ProviderFilter struct {
	UUID string
	Name string
	// MemberOf: the provider must be in at least one aggregate of every list.
	MemberOf [][]string
	// InTree: the provider must be in the same tree as this provider.
	InTree string
	// Resources: the provider must be able to take this allocation now.
	Resources map[string]int64
	// Required traits; a trait prefixed with "!" is forbidden.
	Required []string
}

// CandidateQuery is a request for allocation candidates, Placement's
// GET /allocation_candidates with one unnumbered request group.
type CandidateQuery struct {
	// Resources maps resource class → amount; at least one is required.
	Resources map[string]int64
	// Required traits; a trait prefixed with "!" is forbidden.
	Required []string
	// MemberOf: the provider must be in at least one aggregate of every list.
	MemberOf [][]string
	// InTree restricts candidates to the tree of this provider.
	InTree string
	// Limit caps the number of candidates; 0 means no limit.
	Limit int
	// Seed, when set, orders candidates by a rendezvous hash of Seed and
	// provider UUID (highest first) instead of by UUID.
	Seed string
	// Pending is usage not yet written (provider UUID → class → amount):
	// claims decided but not yet committed. A provider is a candidate only
	// if it can take the request on top of it. It is not part of the
	// capacity the candidates' summaries report.
	Pending map[string]map[string]int64
}

// ResourceSummary is one class of a provider in a candidate's summary.
type ResourceSummary struct {
	Capacity int64 `json:"capacity"`
	Used     int64 `json:"used"`
}

// ProviderSummary describes a provider in a candidate: all its classes with
// capacity and usage, and its traits.
type ProviderSummary struct {
	UUID       string                     `json:"uuid"`
	Name       string                     `json:"name"`
	ParentUUID string                     `json:"parent_provider_uuid,omitempty"`
	RootUUID   string                     `json:"root_provider_uuid"`
	Generation uint64                     `json:"generation"`
	Resources  map[string]ResourceSummary `json:"resources"`
	Traits     []string                   `json:"traits,omitempty"`
}

// Candidate is one way to satisfy a CandidateQuery.
type Candidate struct {
	// Allocations maps provider UUID → class → amount, ready to be used as
	// ConsumerAllocations.Allocations.
	Allocations map[string]map[string]int64 `json:"allocations"`
	// Summaries describes every provider in Allocations, in UUID order.
	Summaries []ProviderSummary `json:"provider_summaries"`
}

type resAmount struct {
	rc string
	n  int64
}

// query is a compiled, validated filter.
type query struct {
	resources           []resAmount
	required, forbidden []string
	memberOf            [][]string
	tree                *provider // root of the required tree
	only                *provider // the single provider named by UUID or Name
	none                bool      // nothing can match
	pending             map[string]map[string]int64
}

func (s *Store) compile(res map[string]int64, required []string, memberOf [][]string, inTree string) (*query, error) {
	q := &query{}
	for _, rc := range sortedKeys(res) {
		if err := ValidateResourceClass(rc); err != nil {
			return nil, err
		}
		n := res[rc]
		if n < 1 || n > MaxAmount {
			return nil, invalidf("requested resource %s expects an amount from 1 to %d, got %d", rc, MaxAmount, n)
		}
		q.resources = append(q.resources, resAmount{rc, n})
	}
	var err error
	if q.required, q.forbidden, err = splitTraits(required); err != nil {
		return nil, err
	}
	for _, group := range memberOf {
		if len(group) == 0 {
			return nil, invalidf("member_of needs at least one aggregate UUID in each list")
		}
		g, err := normalizeUUIDs(group, "aggregate")
		if err != nil {
			return nil, err
		}
		q.memberOf = append(q.memberOf, g)
	}
	if inTree != "" {
		u, ok := NormalizeUUID(inTree)
		if !ok {
			return nil, invalidf("invalid in_tree provider UUID %q", inTree)
		}
		if p := s.providers[u]; p != nil {
			q.tree = p.root()
		} else {
			q.none = true
		}
	}
	return q, nil
}

// fits reports whether p can take n of the class now.
func fits(p *provider, rc string, n int64) bool {
	sl := p.slot(rc)
	return sl != nil && n >= sl.inv.MinUnit && n <= sl.inv.MaxUnit && n%sl.inv.StepSize == 0 &&
		sl.used+n <= sl.cap
}

// FitsWith reports whether provider uuid can take the resources res now,
// on top of the usage pending (class → amount) not yet written. An unknown
// provider fits nothing.
func (s *Store) FitsWith(uuid string, res, pending map[string]int64) bool {
	p := s.providers[uuid]
	if p == nil {
		u, _ := NormalizeUUID(uuid)
		p = s.providers[u]
	}
	if p == nil || len(res) == 0 {
		return false
	}
	for rc, n := range res {
		if !fits(p, rc, n) {
			return false
		}
		if x := pending[rc]; x > 0 && p.slot(rc).used+n+x > p.slot(rc).cap {
			return false
		}
	}
	return true
}

// prefilter returns the slots that pass every indexed constraint of q:
// tree or single provider, free capacity of each requested class, required
// and forbidden traits, aggregates. Postings are applied smallest first and
// the work stops as soon as nothing is left.
func (s *Store) prefilter(q *query) bitmap {
	b := make(bitmap, len(s.live.words))
	switch {
	case q.none:
		return b
	case q.only != nil:
		b[q.only.idx>>6] |= 1 << (uint(q.only.idx) & 63)
	case q.tree != nil:
		var mark func(*provider)
		mark = func(p *provider) {
			b[p.idx>>6] |= 1 << (uint(p.idx) & 63)
			for _, c := range p.children {
				mark(c)
			}
		}
		mark(q.tree)
	default:
		copy(b, s.live.words)
	}
	var must []*posting
	for _, r := range q.resources {
		must = append(must, s.byFree[r.rc])
	}
	for _, t := range q.required {
		must = append(must, s.byTrait[t])
	}
	for _, g := range q.memberOf {
		if len(g) == 1 {
			must = append(must, s.byAgg[g[0]])
			continue
		}
		union := &posting{words: make([]uint64, len(b))}
		for _, a := range g {
			if p := s.byAgg[a]; p != nil {
				bitmap(union.words).or(p)
			}
		}
		union.n = bitmap(union.words).count()
		must = append(must, union)
	}
	if slices.Contains(must, nil) {
		clear(b)
		return b
	}
	slices.SortStableFunc(must, func(x, y *posting) int { return x.n - y.n })
	for _, p := range must {
		if !b.and(p) {
			return b
		}
	}
	for _, t := range q.forbidden {
		if p := s.byTrait[t]; p != nil {
			b.andNot(p)
		}
	}
	return b
}

// fitsAll reports whether p can take every requested amount now.
func (q *query) fitsAll(p *provider) bool {
	extra := q.pending[p.uuid]
	for _, r := range q.resources {
		if !fits(p, r.rc, r.n) {
			return false
		}
		if x := extra[r.rc]; x > 0 && p.slot(r.rc).used+r.n+x > p.slot(r.rc).cap {
			return false
		}
	}
	return true
}

// cand is a prefiltered provider with its sort key (k1, k2, k3 ascending).
type cand struct {
	k1, k2, k3 uint64
	idx        int32
}

func (a cand) less(b cand) bool {
	if a.k1 != b.k1 {
		return a.k1 < b.k1
	}
	if a.k2 != b.k2 {
		return a.k2 < b.k2
	}
	return a.k3 < b.k3
}

// find returns up to limit (0: all) providers matching q, in UUID order or,
// with a seed, by descending rendezvous score then UUID. Candidates are
// sorted lazily (a heap) so a small limit costs little.
func (s *Store) find(q *query, limit int, seed string) []*provider {
	pre := s.prefilter(q)
	cs := make([]cand, 0, pre.count())
	sh := sched.SeedHash(seed)
	pre.each(func(i int32) {
		k := s.ids[i]
		if seed == "" {
			cs = append(cs, cand{k.hi, k.lo, 0, i})
		} else {
			cs = append(cs, cand{^sched.Score(sh, k.hi, k.lo), k.hi, k.lo, i})
		}
	})
	var out []*provider
	take := func(c cand) bool {
		if p := s.slots[c.idx]; q.fitsAll(p) {
			out = append(out, p)
		}
		return limit <= 0 || len(out) < limit
	}
	if limit <= 0 || 4*limit >= len(cs) {
		slices.SortFunc(cs, func(a, b cand) int {
			switch {
			case a.less(b):
				return -1
			case b.less(a):
				return 1
			}
			return 0
		})
		for _, c := range cs {
			if !take(c) {
				break
			}
		}
		return out
	}
	for i := len(cs)/2 - 1; i >= 0; i-- {
		siftDown(cs, i)
	}
	for len(cs) > 0 {
		top := cs[0]
		cs[0] = cs[len(cs)-1]
		cs = cs[:len(cs)-1]
		siftDown(cs, 0)
		if !take(top) {
			break
		}
	}
	return out
}

func siftDown(h []cand, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// Candidates returns the providers that can satisfy q alone, as allocation
// requests with provider summaries. See the package documentation for the
// order.
func (s *Store) Candidates(q CandidateQuery) ([]Candidate, error) {
	if len(q.Resources) == 0 {
		return nil, invalidf("an allocation candidates request needs at least one resource, " +
			"such as resources=VCPU:1,MEMORY_MB:512")
	}
	if q.Limit < 0 {
		return nil, invalidf("limit must not be negative, got %d", q.Limit)
	}
	cq, err := s.compile(q.Resources, q.Required, q.MemberOf, q.InTree)
	if err != nil {
		return nil, err
	}
	cq.pending = q.Pending
	ps := s.find(cq, q.Limit, q.Seed)
	out := make([]Candidate, len(ps))
	// Summaries and trait lists are carved from shared backing arrays with
	// full slice expressions: fewer allocations, still independent slices.
	sums := make([]ProviderSummary, len(ps))
	ntraits := 0
	for _, p := range ps {
		ntraits += len(p.traits)
	}
	traits := make([]string, 0, ntraits)
	for i, p := range ps {
		res := make(map[string]int64, len(cq.resources))
		for _, r := range cq.resources {
			res[r.rc] = r.n
		}
		start := len(traits)
		traits = append(traits, p.traits...)
		sums[i] = p.summary(traits[start:len(traits):len(traits)])
		out[i] = Candidate{
			Allocations: map[string]map[string]int64{p.uuid: res},
			Summaries:   sums[i : i+1 : i+1],
		}
	}
	return out, nil
}

// summary describes p, with traits (a copy of p.traits) as its trait list.
func (p *provider) summary(traits []string) ProviderSummary {
	ps := ProviderSummary{
		UUID:       p.uuid,
		Name:       p.name,
		RootUUID:   p.root().uuid,
		Generation: p.gen,
		Resources:  make(map[string]ResourceSummary, len(p.inv)),
	}
	if len(traits) > 0 {
		ps.Traits = traits
	}
	if p.parent != nil {
		ps.ParentUUID = p.parent.uuid
	}
	for _, sl := range p.inv {
		ps.Resources[sl.rc] = ResourceSummary{Capacity: sl.cap, Used: sl.used}
	}
	return ps
}

// Providers returns the providers matching f, in UUID order.
func (s *Store) Providers(f ProviderFilter) ([]Provider, error) {
	q, err := s.compile(f.Resources, f.Required, f.MemberOf, f.InTree)
	if err != nil {
		return nil, err
	}
	if f.UUID != "" {
		u, _ := NormalizeUUID(f.UUID)
		q.only = s.providers[u]
		q.none = q.none || q.only == nil
	}
	if f.Name != "" {
		p := s.byName[f.Name]
		q.none = q.none || p == nil || (q.only != nil && q.only != p)
		q.only = p
	}
	ps := s.find(q, 0, "")
	out := make([]Provider, len(ps))
	for i, p := range ps {
		out[i] = p.export()
	}
	return out, nil
}
