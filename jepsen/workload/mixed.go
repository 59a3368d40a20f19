package workload

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/internal/pace"
)

// Mixed is the mixed workload: Clients concurrent clients boot, delete,
// show and list servers, the even ones through one peer each, the odd ones
// through a random peer per operation; a client whose operation ended with
// an unknown outcome goes on as a new process.
type Mixed struct {
	*Ops
	Clients int
	MaxLive int // boots slow down above this many live servers
	Seed    int64
}

// Run drives the clients until ctx ends.
func (w *Mixed) Run(ctx context.Context) {
	w.pool = newPool()
	var wg sync.WaitGroup
	for i := 0; i < w.Clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w.client(ctx, i)
		}(i)
	}
	wg.Wait()
}

func (w *Mixed) client(ctx context.Context, i int) {
	rng := rand.New(rand.NewSource(w.Seed + int64(i)*7919))
	process := i
	var bound *cluster.Agent
	if i%2 == 0 {
		bound = w.Cl.Agents[(i/2)%len(w.Cl.Agents)]
	}
	for seq := 0; ctx.Err() == nil; seq++ {
		peer := bound
		if peer == nil {
			peer = w.Cl.Agents[rng.Intn(len(w.Cl.Agents))]
		}
		if t := w.step(rng, process, peer, fmt.Sprintf("jepsen-c%d-%d", i, seq)); t == history.Info {
			process += w.Clients // a process with an unknown outcome is gone; a new one takes over
		}
		pace.Sleep(ctx, time.Duration(50+rng.Intn(250))*time.Millisecond)
	}
}

// step performs one random operation and returns its completion type.
func (w *Mixed) step(rng *rand.Rand, process int, peer *cluster.Agent, name string) string {
	live := w.pool.liveCount()
	r := rng.Float64()
	consistency := history.Linearizable
	if rng.Intn(3) == 0 {
		consistency = history.Default
	}
	switch {
	case r < 0.30 && live < w.MaxLive, live == 0 && r < 0.6:
		return w.boot(process, peer, name)
	case r < 0.50 || (r < 0.60 && live >= w.MaxLive):
		if id, nm, ok := w.pool.target(rng, 0.1); ok {
			return w.delete(process, peer, id, nm)
		}
		return w.boot(process, peer, name)
	case r < 0.88:
		if id, nm, ok := w.pool.target(rng, 0.2); ok {
			return w.read(process, peer, id, nm, consistency)
		}
		return w.list(process, peer, consistency)
	default:
		return w.list(process, peer, consistency)
	}
}
