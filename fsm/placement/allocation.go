package placement

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// ConsumerAllocations is everything one consumer (a server) holds: the body
// of Placement's PUT /allocations/{consumer_uuid}.
type ConsumerAllocations struct {
	// ConsumerGeneration must be nil for a consumer without allocations and
	// the current generation otherwise. Allocations returns the current one.
	ConsumerGeneration *uint64 `json:"consumer_generation"`
	ProjectID          string  `json:"project_id"`
	UserID             string  `json:"user_id"`
	// Allocations maps provider UUID → resource class → amount.
	Allocations map[string]map[string]int64 `json:"allocations"`
}

// consumer is the stored form of a consumer's allocations.
type consumer struct {
	id            string
	project, user string
	gen           uint64
	allocs        []holding // sorted by provider UUID
}

// holding is what one consumer holds on one provider.
type holding struct {
	p   *provider
	res []resAmount // sorted by class
}

func (h *holding) amount(rc string) int64 {
	if h == nil {
		return 0
	}
	for _, r := range h.res {
		if r.rc == rc {
			return r.n
		}
	}
	return 0
}

// holding returns what c holds on p, or nil.
func (c *consumer) holding(p *provider) *holding {
	i, ok := slices.BinarySearchFunc(c.allocs, p.uuid, func(h holding, u string) int { return strings.Compare(h.p.uuid, u) })
	if !ok {
		return nil
	}
	return &c.allocs[i]
}

func cmpConsumer(c *consumer, id string) int { return strings.Compare(c.id, id) }

func (p *provider) linkConsumer(c *consumer) {
	if i, found := slices.BinarySearchFunc(p.consumers, c.id, cmpConsumer); !found {
		if p.consumers == nil {
			p.consumers = p.cons1[:0:1]
		}
		p.consumers = slices.Insert(p.consumers, i, c)
	}
}

func (p *provider) unlinkConsumer(c *consumer) {
	if i, found := slices.BinarySearchFunc(p.consumers, c.id, cmpConsumer); found {
		p.consumers = slices.Delete(p.consumers, i, i+1)
	}
}

// Gen returns a pointer to g, for ConsumerAllocations.ConsumerGeneration.
func Gen(g uint64) *uint64 { return &g }

// allocPlan is one validated consumer write.
type allocPlan struct {
	id            string
	old           *consumer // nil for a new consumer
	project, user string
	allocs        []holding // sorted by provider UUID
}

// SetAllocations replaces all of a consumer's allocations with req (an
// empty Allocations removes them and forgets the consumer). The write fits
// if, for every provider and class, the amount respects min_unit, max_unit
// and step_size and the usage by everybody else plus the amount does not
// exceed the capacity; the consumer's own previous allocations do not count.
func (s *Store) SetAllocations(consumerUUID string, req ConsumerAllocations) error {
	return s.SetAllocationsMulti(map[string]ConsumerAllocations{consumerUUID: req})
}

// SetAllocationsMulti replaces the allocations of several consumers at once
// (Placement's POST /allocations): either every write is applied or, if any
// fails, none is.
func (s *Store) SetAllocationsMulti(reqs map[string]ConsumerAllocations) error {
	plans := make([]*allocPlan, 0, len(reqs))
	seen := make(map[string]bool, len(reqs))
	for _, key := range sortedKeys(reqs) {
		pl, err := s.planConsumer(key, reqs[key])
		if err != nil {
			return err
		}
		if seen[pl.id] {
			return invalidf("consumer %s appears more than once in the request", pl.id)
		}
		seen[pl.id] = true
		plans = append(plans, pl)
	}
	if err := s.checkFit(plans); err != nil {
		return err
	}
	s.apply(plans)
	return nil
}

// planConsumer validates one consumer's request against the current state.
func (s *Store) planConsumer(key string, req ConsumerAllocations) (*allocPlan, error) {
	id, ok := NormalizeUUID(key)
	if !ok {
		return nil, invalidf("invalid consumer UUID %q", key)
	}
	pl := &allocPlan{id: id, old: s.consumers[id], project: req.ProjectID, user: req.UserID}
	switch {
	case pl.old == nil && req.ConsumerGeneration != nil:
		return nil, newErr(ErrConcurrentUpdate, "",
			"consumer %s has no allocations, but the request expected consumer generation %d: "+
				"its allocations were removed since they were read; pass a null generation to create them",
			id, *req.ConsumerGeneration)
	case pl.old != nil && req.ConsumerGeneration == nil:
		return nil, newErr(ErrConcurrentUpdate, "",
			"consumer %s already has allocations at generation %d, but the request expected a new consumer "+
				"(null generation): read its allocations and retry with that generation", id, pl.old.gen)
	case pl.old != nil && *req.ConsumerGeneration != pl.old.gen:
		return nil, newErr(ErrConcurrentUpdate, "",
			"consumer %s generation is %d, the request expected %d: its allocations changed since they were read; "+
				"read them again and retry", id, pl.old.gen, *req.ConsumerGeneration)
	}
	for _, pkey := range sortedKeys(req.Allocations) {
		pu, ok := NormalizeUUID(pkey)
		if !ok {
			return nil, invalidf("consumer %s: invalid resource provider UUID %q", id, pkey)
		}
		p := s.providers[pu]
		if p == nil {
			return nil, invalidf("consumer %s: allocation for resource provider %s that does not exist", id, pu)
		}
		res := req.Allocations[pkey]
		if len(res) == 0 {
			return nil, invalidf("consumer %s: allocation for resource provider %s names no resources", id, pu)
		}
		h := holding{p: p, res: make([]resAmount, 0, len(res))}
		for _, rc := range sortedKeys(res) {
			if err := ValidateResourceClass(rc); err != nil {
				return nil, err
			}
			if n := res[rc]; n < 1 || n > MaxAmount {
				return nil, invalidf("consumer %s: amount of %s on resource provider %s must be from 1 to %d, got %d",
					id, rc, pu, MaxAmount, n)
			}
			name := rc
			if sl := p.slot(rc); sl != nil {
				name = sl.rc // share the stored string
			}
			h.res = append(h.res, resAmount{name, res[rc]})
		}
		pl.allocs = append(pl.allocs, h)
	}
	slices.SortFunc(pl.allocs, func(a, b holding) int { return strings.Compare(a.p.uuid, b.p.uuid) })
	for i := 1; i < len(pl.allocs); i++ {
		if pl.allocs[i].p == pl.allocs[i-1].p {
			return nil, invalidf("consumer %s: resource provider %s appears more than once", id, pl.allocs[i].p.uuid)
		}
	}
	if len(pl.allocs) > 0 {
		if err := validOwner("project_id", pl.project); err != nil {
			return nil, err
		}
		if err := validOwner("user_id", pl.user); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

func validOwner(field, v string) error {
	if v == "" || len(v) > MaxSymbolLen || !utf8.ValidString(v) {
		return invalidf("%s must be 1 to %d bytes of UTF-8, got %q", field, MaxSymbolLen, v)
	}
	return nil
}

// checkFit checks every new allocation against inventory constraints and
// capacity, counting the net effect of all plans together.
func (s *Store) checkFit(plans []*allocPlan) error {
	delta := make(map[*slot]int64)
	for _, pl := range plans {
		if pl.old != nil {
			for _, h := range pl.old.allocs {
				for _, r := range h.res {
					delta[h.p.slot(r.rc)] -= r.n
				}
			}
		}
		for _, h := range pl.allocs {
			for _, r := range h.res {
				if sl := h.p.slot(r.rc); sl != nil {
					delta[sl] += r.n
				}
			}
		}
	}
	for _, pl := range plans {
		for _, h := range pl.allocs {
			p := h.p
			for _, r := range h.res {
				rc, n := r.rc, r.n
				sl := p.slot(rc)
				if sl == nil {
					return newErr(ErrNotEnough, "",
						"consumer %s: resource provider %s (%s) has no inventory of %s (requested %d)",
						pl.id, p.uuid, p.name, rc, n)
				}
				if inv := sl.inv; n < inv.MinUnit || n > inv.MaxUnit || n%inv.StepSize != 0 {
					return newErr(ErrNotEnough, "",
						"consumer %s: %d %s on resource provider %s (%s) violates its inventory constraints: "+
							"min_unit %d, max_unit %d, step_size %d",
						pl.id, n, rc, p.uuid, p.name, inv.MinUnit, inv.MaxUnit, inv.StepSize)
				}
				if after := sl.used + delta[sl]; after > sl.cap {
					return newErr(ErrNotEnough, "",
						"consumer %s: not enough %s on resource provider %s (%s): requested %d, "+
							"%d used by other allocations, capacity %d",
						pl.id, rc, p.uuid, p.name, n, after-n, sl.cap)
				}
			}
		}
	}
	return nil
}

// apply performs validated plans.
func (s *Store) apply(plans []*allocPlan) {
	touched := make(map[*provider]bool)
	for _, pl := range plans {
		if c := pl.old; c != nil {
			for _, h := range c.allocs {
				touched[h.p] = true
				for _, r := range h.res {
					h.p.slot(r.rc).used -= r.n
					s.refreshFree(h.p, r.rc)
				}
				h.p.unlinkConsumer(c)
			}
			s.addProjectUsage(c.project, c.allocs, -1)
		}
	}
	for _, pl := range plans {
		if len(pl.allocs) == 0 {
			delete(s.consumers, pl.id)
			continue
		}
		c := pl.old
		if c == nil {
			c = &consumer{id: pl.id}
			s.consumers[pl.id] = c
		} else {
			c.gen++
		}
		c.project, c.user, c.allocs = pl.project, pl.user, pl.allocs
		for _, h := range c.allocs {
			touched[h.p] = true
		}
		s.hold(c)
	}
	for p := range touched {
		p.gen++
	}
}

// hold adds c's allocations to usages and links c from its providers.
func (s *Store) hold(c *consumer) {
	for _, h := range c.allocs {
		for _, r := range h.res {
			h.p.slot(r.rc).used += r.n
			s.refreshFree(h.p, r.rc)
		}
		h.p.linkConsumer(c)
	}
	s.addProjectUsage(c.project, c.allocs, 1)
}

func (s *Store) addProjectUsage(project string, allocs []holding, sign int64) {
	u := s.projects[project]
	if u == nil {
		u = make(map[string]int64)
		s.projects[project] = u
	}
	for _, h := range allocs {
		for _, r := range h.res {
			u[r.rc] += sign * r.n
			if u[r.rc] == 0 {
				delete(u, r.rc)
			}
		}
	}
	if len(u) == 0 {
		delete(s.projects, project)
	}
}

// Allocations returns a consumer's allocations and current generation, and
// false if it has none.
func (s *Store) Allocations(consumerUUID string) (ConsumerAllocations, bool) {
	id, ok := NormalizeUUID(consumerUUID)
	if !ok {
		return ConsumerAllocations{}, false
	}
	c := s.consumers[id]
	if c == nil {
		return ConsumerAllocations{}, false
	}
	out := ConsumerAllocations{
		ConsumerGeneration: Gen(c.gen),
		ProjectID:          c.project,
		UserID:             c.user,
		Allocations:        make(map[string]map[string]int64, len(c.allocs)),
	}
	for _, h := range c.allocs {
		out.Allocations[h.p.uuid] = h.resMap()
	}
	return out, true
}

func (h *holding) resMap() map[string]int64 {
	m := make(map[string]int64, len(h.res))
	for _, r := range h.res {
		m[r.rc] = r.n
	}
	return m
}

// Consumers returns the UUIDs of every consumer holding allocations, sorted.
func (s *Store) Consumers() []string { return sortedKeys(s.consumers) }

// ProviderAllocations returns, for one provider, consumer UUID → resource
// class → amount.
func (s *Store) ProviderAllocations(uuid string) (map[string]map[string]int64, error) {
	p, err := s.lookup(uuid)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]int64, len(p.consumers))
	for _, c := range p.consumers {
		out[c.id] = c.holding(p).resMap()
	}
	return out, nil
}
