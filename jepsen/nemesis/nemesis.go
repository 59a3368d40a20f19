package nemesis

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/internal/pace"
	"github.com/corral-dev/corral/testkit/netem"
)

// Nemesis injects faults on a schedule: heal, fault, heal, fault, ...
type Nemesis struct {
	Cl       *cluster.Cluster
	FW       *netem.Firewall // nil when no family cuts links
	API      *client.Corral
	Rec      *history.Recorder
	Rng      *rand.Rand
	Families []string
	Variants []string // partition variants to draw from (empty: all)
	Fault    time.Duration
	Heal     time.Duration
	Logf     func(string, ...any)
	// Aim, when set, names the agent the next kill, pause, combo or
	// isolate-one / majority-minority partition strikes (and why), waiting
	// at most AimWait; "" leaves the usual random pick.
	Aim     func(ctx context.Context, wait time.Duration) (string, string)
	AimWait time.Duration
	// Upgrade, when set, is the run's one upgrade of a peer (-old-bin):
	// the first fault due from its At on is the upgrade instead.
	Upgrade *Upgrade

	mu      sync.Mutex
	windows []history.Window
	faulty  bool // a fault is in place (injected, not yet healed)
}

// Faulty reports whether a fault is in place now.
func (n *Nemesis) Faulty() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.faulty
}

func (n *Nemesis) setFaulty(b bool) {
	n.mu.Lock()
	n.faulty = b
	n.mu.Unlock()
}

// Windows returns the faults injected so far.
func (n *Nemesis) Windows() []history.Window {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]history.Window(nil), n.windows...)
}

// Run injects faults until the run is `until` old, leaving a heal period
// at the end, and heals everything before returning.
func (n *Nemesis) Run(ctx context.Context, until time.Duration) {
	defer func() { _ = n.HealAll() }() // the caller heals again and keeps the error
	if len(n.Families) == 0 && n.Upgrade == nil {
		return
	}
	// Every family gets its turn, in a fresh random order each round.
	var queue []string
	for {
		if !pace.Sleep(ctx, n.Heal) {
			return
		}
		if n.Rec.Since()+n.Fault+n.Heal > until {
			return
		}
		family := ""
		switch {
		case n.Upgrade.due(n.Rec.Since()):
			family = "upgrade"
		case len(n.Families) == 0:
			continue
		default:
			if len(queue) == 0 {
				queue = append(queue, n.Families...)
				n.Rng.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
			}
			family = queue[0]
			queue = queue[1:]
		}
		variant := ""
		if family == "partition" {
			variant = n.drawVariant()
		}
		target, why := n.aim(ctx, family, variant)
		if ctx.Err() != nil {
			return
		}
		w := history.Window{Start: int64(n.Rec.Since())}
		name, detail, heal, err := n.inject(ctx, family, variant, target)
		if why != "" {
			detail += " (" + why + ")"
		}
		w.Name, w.Detail = name, detail
		if err != nil {
			w.Error = err.Error()
		}
		n.Logf("nemesis: %s %s%s", name, detail, errSuffix(err))
		n.setFaulty(err == nil)
		pace.Sleep(ctx, n.Fault)
		n.setFaulty(false)
		if heal != nil {
			if herr := heal(); herr != nil {
				w.HealError = herr.Error()
			}
		}
		w.End = int64(n.Rec.Since())
		n.Logf("nemesis: healed %s%s", name, errSuffix(errorOf(w.HealError)))
		n.mu.Lock()
		n.windows = append(n.windows, w)
		n.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

func errorOf(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " (error: " + err.Error() + ")"
}

// HealAll undoes every fault: links restored, paused agents resumed, dead
// agents restarted.
func (n *Nemesis) HealAll() error {
	var errs []error
	if n.FW != nil {
		errs = append(errs, n.FW.Heal())
	}
	errs = append(errs, n.Cl.HealProcesses())
	err := errors.Join(errs...)
	if err != nil {
		n.Logf("nemesis: heal: %v", err)
	}
	return err
}

// pick returns k distinct agents at random, excluding the ones in not.
func (n *Nemesis) pick(k int, not ...*cluster.Agent) []*cluster.Agent {
	var pool []*cluster.Agent
	for _, a := range n.Cl.Agents {
		skip := false
		for _, x := range not {
			skip = skip || x == a
		}
		if !skip {
			pool = append(pool, a)
		}
	}
	n.Rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	if k > len(pool) {
		k = len(pool)
	}
	return pool[:k]
}

func names(as []*cluster.Agent) string {
	var s []string
	for _, a := range as {
		s = append(s, a.Name)
	}
	return strings.Join(s, ",")
}

func (n *Nemesis) leader(ctx context.Context) *cluster.Agent {
	return n.Cl.Agent(n.Cl.Leader(ctx, n.API))
}

// minority is how many agents one fault may take out: fewer than half.
func (n *Nemesis) minority() int { return (len(n.Cl.Agents) - 1) / 2 }

// drawVariant picks a partition variant among -partitions.
func (n *Nemesis) drawVariant() string {
	vs := n.Variants
	if len(vs) == 0 {
		vs = partitionVariants
	}
	return vs[n.Rng.Intn(len(vs))]
}

// aim asks Aim for the agent a fault of this family (and partition
// variant) should strike; nil when there is no Aim, the fault strikes no
// chosen agent, or Aim named none that runs.
func (n *Nemesis) aim(ctx context.Context, family, variant string) (*cluster.Agent, string) {
	if n.Aim == nil {
		return nil, ""
	}
	switch family {
	case "kill", "pause", "combo":
	case "partition":
		if variant != "isolate-one" && variant != "majority-minority" {
			return nil, ""
		}
	default:
		return nil, ""
	}
	name, why := n.Aim(ctx, n.AimWait)
	a := n.Cl.Agent(name)
	if a == nil || !a.Running() || a.Paused() {
		return nil, "no action accepted in time: a random pick"
	}
	return a, why
}
