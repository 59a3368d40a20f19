package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
)

// Ops sends operations to the peers and records each in the history: the
// invocation before the request, the completion after the answer. It keeps
// the pool of servers the clients booted and saw, from which every
// workload draws its targets; each workload of this package runs on one.
type Ops struct {
	Cl      *cluster.Cluster
	API     *client.Corral // the clients' credentials
	Rec     *history.Recorder
	Timeout time.Duration // per request; a write that times out is info
	Flavor  string
	Image   string
	Nets    *Networks // -neutron: the networks of each boot; nil: none asked for
	// BootEvery, when set, spaces the boots of the mixed and actions
	// workloads, and their deletes four times as much (so that servers
	// live long enough to be built, even by a slow Neutron): a boot asked for sooner after the last one
	// is a linearizable list instead, a delete a linearizable show
	// (-neutron: each makes Neutron bind or delete ports, which a loaded
	// Neutron does slowly).
	BootEvery time.Duration
	// MaxBusy, when set, holds boots back while the last linearizable
	// list showed this many servers building or being deleted, counting
	// the boots sent since (-neutron: each such server has Neutron
	// requests in flight, and a loaded Neutron's binds slow down sharply
	// when they overlap).
	MaxBusy int

	pool       pool
	slotMu     sync.Mutex
	lastBoot   time.Time
	lastDelete time.Time
	busy       int // servers in BUILD or deleting at the last linearizable list, plus boots sent since
}

func (w *Ops) request(method, base, path string, body any) client.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), w.Timeout)
	defer cancel()
	return w.API.Do(ctx, method, base, path, body)
}

// complete records the completion of a write from its outcome.
func (w *Ops) complete(inv history.Op, o client.Outcome, okCode int, v history.OpValue) history.Op {
	c := history.Op{Process: inv.Process, F: inv.F, Node: inv.Node, Value: v, Code: o.Code}
	switch {
	case o.Code == okCode:
		c.Type = history.OK
	case o.Definite():
		c.Type, c.Error = history.Fail, o.String()
	default:
		c.Type, c.Error = history.Info, o.String()
	}
	return w.Rec.Add(c)
}

func (w *Ops) boot(process int, peer *cluster.Agent, name string) string {
	if !w.bootSlot(time.Now()) {
		return w.list(process, peer, history.Linearizable)
	}
	return w.bootOp(process, peer, name).Type
}

// bootSlot reports whether a boot may be sent at now (BootEvery,
// MaxBusy), and takes the slot.
func (w *Ops) bootSlot(now time.Time) bool {
	w.slotMu.Lock()
	full := w.MaxBusy > 0 && w.busy >= w.MaxBusy
	w.slotMu.Unlock()
	if full || !w.slot(&w.lastBoot, w.BootEvery, now) {
		return false
	}
	w.slotMu.Lock()
	w.busy++
	w.slotMu.Unlock()
	return true
}

// sawBusy records a linearizable list's servers that are building or
// being deleted.
func (w *Ops) sawBusy(servers []history.ServerState) {
	n := 0
	for _, s := range servers {
		if s.Status == "BUILD" || s.Deleting() {
			n++
		}
	}
	w.slotMu.Lock()
	w.busy = n
	w.slotMu.Unlock()
}

// deleteSlot is bootSlot for deletes (four times BootEvery).
func (w *Ops) deleteSlot(now time.Time) bool { return w.slot(&w.lastDelete, 4*w.BootEvery, now) }

func (w *Ops) slot(last *time.Time, every time.Duration, now time.Time) bool {
	if every <= 0 {
		return true
	}
	w.slotMu.Lock()
	defer w.slotMu.Unlock()
	if !last.IsZero() && now.Sub(*last) < every {
		return false
	}
	*last = now
	return true
}

// bootOp sends one boot and returns its recorded completion.
func (w *Ops) bootOp(process int, peer *cluster.Agent, name string) history.Op {
	create := &client.ServerCreate{Name: name, FlavorRef: w.Flavor, ImageRef: w.Image}
	var nets []history.NetRequest
	if w.Nets != nil {
		nets = w.Nets.next()
		create.Networks = body(nets)
	}
	inv := w.Rec.Add(history.Op{Process: process, Type: history.Invoke, F: history.FBoot, Node: peer.Name,
		Value: history.OpValue{Name: name, Nets: nets}})
	o := w.request(http.MethodPost, peer.URL(), client.ServersPath, client.ServerCreateRequest{Server: create})
	v := history.OpValue{Name: name}
	if o.Code == http.StatusAccepted {
		var body client.ServerCreateResponse
		if err := json.Unmarshal(o.Body, &body); err != nil || body.Server.ID == "" {
			// Accepted, but we cannot tell which server: still an ack.
			return w.Rec.Add(history.Op{Process: process, Type: history.OK, F: history.FBoot, Node: peer.Name, Value: v, Code: o.Code,
				Error: fmt.Sprintf("202 without a server id: %.200s", o.Body)})
		}
		v.ID = body.Server.ID
		w.pool.add(v.ID, name)
	}
	return w.complete(inv, o, http.StatusAccepted, v)
}

func (w *Ops) delete(process int, peer *cluster.Agent, id, name string) string {
	if !w.deleteSlot(time.Now()) {
		return w.read(process, peer, id, name, history.Linearizable)
	}
	return w.deleteOp(process, peer, id, name).Type
}

// deleteOp sends one delete and returns its recorded completion.
func (w *Ops) deleteOp(process int, peer *cluster.Agent, id, name string) history.Op {
	v := history.OpValue{ID: id, Name: name}
	inv := w.Rec.Add(history.Op{Process: process, Type: history.Invoke, F: history.FDelete, Node: peer.Name, Value: v})
	o := w.request(http.MethodDelete, peer.URL(), client.ServerPath(id), nil)
	if o.Code == http.StatusNotFound {
		v.NotFound = true
	}
	c := w.complete(inv, o, http.StatusNoContent, v)
	if c.Type != history.Fail || v.NotFound {
		w.pool.drop(id)
	}
	return c
}

func (w *Ops) read(process int, peer *cluster.Agent, id, name, consistency string) string {
	return w.readOp(process, peer, id, name, consistency).Type
}

// readOp shows one server and returns the recorded completion.
func (w *Ops) readOp(process int, peer *cluster.Agent, id, name, consistency string) history.Op {
	v := history.OpValue{ID: id, Name: name}
	w.Rec.Add(history.Op{Process: process, Type: history.Invoke, F: history.FRead, Node: peer.Name, Consistency: consistency, Value: v})
	o := w.request(http.MethodGet, peer.URL(), client.ServerPath(id)+"?consistency="+consistency, nil)
	c := history.Op{Process: process, F: history.FRead, Node: peer.Name, Consistency: consistency, Code: o.Code}
	switch o.Code {
	case http.StatusOK:
		var body client.ServerResponse
		if err := json.Unmarshal(o.Body, &body); err != nil {
			c.Type, c.Error = history.Fail, "unreadable body: "+err.Error()
			break
		}
		st := history.StateOf(body.Server)
		v.Server = &st
		c.Type = history.OK
	case http.StatusNotFound:
		v.NotFound = true
		c.Type = history.OK
		w.pool.drop(id)
	default:
		c.Type, c.Error = readFailure(o)
	}
	c.Value = v
	return w.Rec.Add(c)
}

func (w *Ops) list(process int, peer *cluster.Agent, consistency string) string {
	return w.listOp(process, peer, consistency).Type
}

// listOp lists the live servers and returns the recorded completion.
func (w *Ops) listOp(process int, peer *cluster.Agent, consistency string) history.Op {
	w.Rec.Add(history.Op{Process: process, Type: history.Invoke, F: history.FList, Node: peer.Name, Consistency: consistency})
	o := w.request(http.MethodGet, peer.URL(), client.ServersDetailPath+"?consistency="+consistency, nil)
	c := history.Op{Process: process, F: history.FList, Node: peer.Name, Consistency: consistency, Code: o.Code}
	var body client.ServersResponse
	switch {
	case o.Code == http.StatusOK && json.Unmarshal(o.Body, &body) == nil:
		c.Type = history.OK
		c.Value.Servers = []history.ServerState{}
		for _, s := range body.Servers {
			st := history.StateOf(s)
			c.Value.Servers = append(c.Value.Servers, st)
			w.pool.add(st.ID, st.Name)
		}
		if consistency == history.Linearizable {
			w.sawBusy(c.Value.Servers)
		}
	default:
		c.Type, c.Error = readFailure(o)
	}
	return w.Rec.Add(c)
}

// readFailure classifies a read that did not succeed: a read has no
// effect, so this only matters for availability.
func readFailure(o client.Outcome) (string, string) {
	if o.Code == 0 && !o.NotSent {
		return history.Info, o.String()
	}
	return history.Fail, o.String()
}
