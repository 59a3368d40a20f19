package workload

import (
	"math/rand"
	"sync"
)

// pool is what the clients know about the servers they made.
type pool struct {
	mu      sync.Mutex
	names   map[string]string // id → name
	live    []string          // ids booted and not deleted, as far as we know
	gone    []string          // ids deleted (or maybe deleted)
	isLive  map[string]bool
	counter int
}

func newPool() pool { return pool{names: map[string]string{}, isLive: map[string]bool{}} }

func (p *pool) add(id, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.names[id]; ok {
		return
	}
	p.names[id] = name
	p.live = append(p.live, id)
	p.isLive[id] = true
}

func (p *pool) drop(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isLive[id] {
		return
	}
	delete(p.isLive, id)
	for i, x := range p.live {
		if x == id {
			p.live = append(p.live[:i], p.live[i+1:]...)
			break
		}
	}
	p.gone = append(p.gone, id)
}

// target picks a live id (or, with probability pGone, any gone one).
func (p *pool) target(rng *rand.Rand, pGone float64) (string, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.live
	if len(p.gone) > 0 && (len(list) == 0 || rng.Float64() < pGone) {
		list = p.gone
	}
	if len(list) == 0 {
		return "", "", false
	}
	id := list[rng.Intn(len(list))]
	return id, p.names[id], true
}

func (p *pool) liveCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}
