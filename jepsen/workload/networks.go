package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// Networks are the networks of the boots with -neutron: every boot asks
// for the shared network, except that, while the user's own ports last,
// one boot in Every hands one of them over instead ({"port": ID}).
// Each user port goes to one boot at most, whatever its outcome: a port
// is never reused, so that a boot never races the unbinding of a delete
// and the check knows which server each port was for.
type Networks struct {
	Network string // the shared network's id
	Every   int    // one boot in Every gets a user's port (0: none)

	mu     sync.Mutex
	ports  []string // the user's ports
	handed int      // ports[:handed] went to boots
	boots  int
}

// NewNetworks makes n ports on network as the workload's user (ports, a
// client with her token), four at a time, named prefix-<i>, to hand one
// to one boot in every. It returns the networks with the ports it made,
// and the ports made so far with the error when one could not be made.
func NewNetworks(ctx context.Context, ports *client.Neutron, network, prefix string, n, every int) (*Networks, error) {
	nw := &Networks{Network: network, Every: every}
	made := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p, err := ports.CreatePort(ctx, client.NeutronNewPort{NetworkID: network, Name: fmt.Sprintf("%s-%d", prefix, i),
				Description: "jepsen: a user's port for a boot"})
			made[i], errs[i] = p.ID, err
		}(i)
	}
	wg.Wait()
	var first error
	for i := range made {
		if made[i] != "" {
			nw.ports = append(nw.ports, made[i])
		} else if first == nil && errs[i] != nil {
			first = fmt.Errorf("create user port %d on network %s: %w", i, network, errs[i])
		}
	}
	return nw, first
}

// UserPorts are every user port made for the run, handed out or not.
func (n *Networks) UserPorts() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.ports...)
}

// next is the networks of one boot.
func (n *Networks) next() []history.NetRequest {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.boots++
	if n.Every > 0 && n.boots%n.Every == 0 && n.handed < len(n.ports) {
		p := n.ports[n.handed]
		n.handed++
		return []history.NetRequest{{Port: p}}
	}
	return []history.NetRequest{{Network: n.Network}}
}

// body is the boot's networks as corral's API takes them.
func body(nets []history.NetRequest) json.RawMessage {
	list := make([]client.ServerNetwork, 0, len(nets))
	for _, r := range nets {
		list = append(list, client.ServerNetwork{UUID: r.Network, Port: r.Port})
	}
	raw, _ := json.Marshal(list) // cannot fail
	return raw
}
