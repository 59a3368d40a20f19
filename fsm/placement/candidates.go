package placement

import (
	"container/heap"
	"hash/fnv"
	"slices"
	"strings"
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
	sl := p.inv[rc]
	return sl != nil && n >= sl.inv.MinUnit && n <= sl.inv.MaxUnit && n%sl.inv.StepSize == 0 &&
		sl.used+n <= sl.cap
}

func (q *query) match(p *provider) bool {
	if q.tree != nil && p.root() != q.tree {
		return false
	}
	for _, t := range q.required {
		if !p.hasTrait(t) {
			return false
		}
	}
	for _, t := range q.forbidden {
		if p.hasTrait(t) {
			return false
		}
	}
	for _, g := range q.memberOf {
		if !slices.ContainsFunc(g, p.inAggregate) {
			return false
		}
	}
	for _, r := range q.resources {
		if !fits(p, r.rc, r.n) {
			return false
		}
	}
	return true
}

// walk calls fn, in UUID order, for every provider of the smallest
// candidate set that constrains q (a posting list, the tree, or the single
// provider asked for), until fn returns false. match is not applied.
func (s *Store) walk(q *query, fn func(*provider) bool) {
	if q.none {
		return
	}
	if q.only != nil {
		fn(q.only)
		return
	}
	if q.tree != nil {
		var members []*provider
		var dfs func(*provider)
		dfs = func(p *provider) {
			members = append(members, p)
			for _, c := range p.children {
				dfs(c)
			}
		}
		dfs(q.tree)
		slices.SortFunc(members, func(a, b *provider) int { return strings.Compare(a.uuid, b.uuid) })
		for _, p := range members {
			if !fn(p) {
				return
			}
		}
		return
	}
	best := &s.all
	consider := func(m postings, key string) {
		l := m[key]
		if l == nil {
			l = &plist{}
		}
		if l.len() < best.len() {
			best = l
		}
	}
	for _, r := range q.resources {
		consider(s.byRC, r.rc)
	}
	for _, t := range q.required {
		consider(s.byTrait, t)
	}
	for _, g := range q.memberOf {
		if len(g) == 1 {
			consider(s.byAgg, g[0])
		}
	}
	best.each(fn)
}

// find returns the providers matching q: in UUID order stopping at limit,
// or, with a seed, the limit best by rendezvous score.
func (s *Store) find(q *query, limit int, seed string) []*provider {
	var out []*provider
	if seed == "" {
		s.walk(q, func(p *provider) bool {
			if q.match(p) {
				out = append(out, p)
			}
			return limit <= 0 || len(out) < limit
		})
		return out
	}
	h := &scored{}
	s.walk(q, func(p *provider) bool {
		if !q.match(p) {
			return true
		}
		e := scoredProvider{score(seed, p.uuid), p}
		if limit <= 0 || h.Len() < limit {
			heap.Push(h, e)
		} else if h.worse((*h)[0], e) {
			(*h)[0] = e
			heap.Fix(h, 0)
		}
		return true
	})
	slices.SortFunc(*h, func(a, b scoredProvider) int {
		switch {
		case h.worse(b, a):
			return -1
		case h.worse(a, b):
			return 1
		}
		return 0
	})
	out = make([]*provider, len(*h))
	for i, e := range *h {
		out[i] = e.p
	}
	return out
}

// score is the rendezvous score of a provider for a seed.
func score(seed, uuid string) uint64 {
	f := fnv.New64a()
	_, _ = f.Write([]byte(seed))
	_, _ = f.Write([]byte{0})
	_, _ = f.Write([]byte(uuid))
	x := f.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

type scoredProvider struct {
	score uint64
	p     *provider
}

// scored is a min-heap: the root is the worst kept candidate.
type scored []scoredProvider

func (h scored) worse(a, b scoredProvider) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.p.uuid > b.p.uuid
}
func (h scored) Len() int           { return len(h) }
func (h scored) Less(i, j int) bool { return h.worse(h[i], h[j]) }
func (h scored) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scored) Push(x any)        { *h = append(*h, x.(scoredProvider)) }
func (h *scored) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
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
	ps := s.find(cq, q.Limit, q.Seed)
	out := make([]Candidate, len(ps))
	for i, p := range ps {
		res := make(map[string]int64, len(cq.resources))
		for _, r := range cq.resources {
			res[r.rc] = r.n
		}
		out[i] = Candidate{
			Allocations: map[string]map[string]int64{p.uuid: res},
			Summaries:   []ProviderSummary{p.summary()},
		}
	}
	return out, nil
}

func (p *provider) summary() ProviderSummary {
	ps := ProviderSummary{
		UUID:       p.uuid,
		Name:       p.name,
		RootUUID:   p.root().uuid,
		Generation: p.gen,
		Resources:  make(map[string]ResourceSummary, len(p.inv)),
		Traits:     slices.Clone(p.traits),
	}
	if p.parent != nil {
		ps.ParentUUID = p.parent.uuid
	}
	for rc, sl := range p.inv {
		ps.Resources[rc] = ResourceSummary{Capacity: sl.cap, Used: sl.used}
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
