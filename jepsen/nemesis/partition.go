package nemesis

import (
	"context"
	"fmt"
	"slices"

	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/testkit/netem"
)

// partition cuts the network by variant among the agents other than skip;
// an isolate-one or majority-minority partition puts first (when not nil)
// on the small side.
func (n *Nemesis) partition(ctx context.Context, variant string, skip, first *cluster.Agent) (string, string, func() error, error) {
	heal := func() error { return n.FW.Heal() }
	var others []*cluster.Agent
	for _, a := range n.Cl.Agents {
		if a != skip {
			others = append(others, a)
		}
	}
	n.Rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	if i := slices.Index(others, first); i > 0 && (variant == "isolate-one" || variant == "majority-minority") {
		others[0], others[i] = others[i], others[0]
	}
	var a, b []*cluster.Agent
	switch variant {
	case "isolate-leader":
		l := n.leader(ctx)
		if l == nil || l == skip {
			variant = "isolate-one"
			a = others[:1]
			break
		}
		a = []*cluster.Agent{l}
	case "majority-minority":
		a = others[:len(others)/2]
	case "bridge":
		if len(others) < 3 {
			variant, a = "isolate-one", others[:1]
			break
		}
		k := (len(others) - 1) / 2
		a, b = others[:k], others[k+1:]
		err := n.FW.Cut(hosts(a), hosts(b))
		return "partition-bridge", fmt.Sprintf("{%s} | bridge %s | {%s}", names(a), others[k].Name, names(b)), heal, err
	default:
		variant = "isolate-one"
		a = others[:1]
	}
	for _, x := range n.Cl.Agents {
		inA := false
		for _, y := range a {
			inA = inA || x == y
		}
		if !inA {
			b = append(b, x)
		}
	}
	err := n.FW.Cut(hosts(a), hosts(b))
	return "partition-" + variant, fmt.Sprintf("{%s} | {%s}", names(a), names(b)), heal, err
}

func hosts(as []*cluster.Agent) []netem.Host {
	out := make([]netem.Host, len(as))
	for i, a := range as {
		out[i] = a.NetHost()
	}
	return out
}
