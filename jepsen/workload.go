package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Workload runs concurrent clients that boot, delete, show and list
// servers through random peers, recording every operation.
type Workload struct {
	Cl      *Cluster
	API     *Corral
	Rec     *Recorder
	Clients int
	Timeout time.Duration // per request; a write that times out is info
	MaxLive int           // boots slow down above this many live servers
	Flavor  string
	Image   string
	Seed    int64

	pool pool
}

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

// Run drives the clients until ctx ends.
func (w *Workload) Run(ctx context.Context) {
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

func (w *Workload) client(ctx context.Context, i int) {
	rng := rand.New(rand.NewSource(w.Seed + int64(i)*7919))
	process := i
	var bound *Agent
	if i%2 == 0 {
		bound = w.Cl.Agents[(i/2)%len(w.Cl.Agents)]
	}
	for seq := 0; ctx.Err() == nil; seq++ {
		peer := bound
		if peer == nil {
			peer = w.Cl.Agents[rng.Intn(len(w.Cl.Agents))]
		}
		if t := w.step(rng, process, peer, fmt.Sprintf("jepsen-c%d-%d", i, seq)); t == Info {
			process += w.Clients // a process with an unknown outcome is gone; a new one takes over
		}
		sleepCtx(ctx, time.Duration(50+rng.Intn(250))*time.Millisecond)
	}
}

// step performs one random operation and returns its completion type.
func (w *Workload) step(rng *rand.Rand, process int, peer *Agent, name string) string {
	live := w.pool.liveCount()
	r := rng.Float64()
	consistency := Linearizable
	if rng.Intn(3) == 0 {
		consistency = Default
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

func (w *Workload) request(method, base, path string, body any) Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), w.Timeout)
	defer cancel()
	return w.API.Do(ctx, method, base, path, body)
}

// complete records the completion of a write from its outcome.
func (w *Workload) complete(inv Op, o Outcome, okCode int, v OpValue) Op {
	c := Op{Process: inv.Process, F: inv.F, Node: inv.Node, Value: v, Code: o.Code}
	switch {
	case o.Code == okCode:
		c.Type = OK
	case o.Definite():
		c.Type, c.Error = Fail, o.String()
	default:
		c.Type, c.Error = Info, o.String()
	}
	return w.Rec.Add(c)
}

func (w *Workload) boot(process int, peer *Agent, name string) string {
	return w.bootOp(process, peer, name).Type
}

// bootOp sends one boot and returns its recorded completion.
func (w *Workload) bootOp(process int, peer *Agent, name string) Op {
	inv := w.Rec.Add(Op{Process: process, Type: Invoke, F: FBoot, Node: peer.Name, Value: OpValue{Name: name}})
	o := w.request(http.MethodPost, peer.URL(), "/compute/v2.1/servers", map[string]any{"server": map[string]any{
		"name": name, "flavorRef": w.Flavor, "imageRef": w.Image}})
	v := OpValue{Name: name}
	if o.Code == http.StatusAccepted {
		var body struct {
			Server struct {
				ID string `json:"id"`
			} `json:"server"`
		}
		if err := json.Unmarshal(o.Body, &body); err != nil || body.Server.ID == "" {
			// Accepted, but we cannot tell which server: still an ack.
			return w.Rec.Add(Op{Process: process, Type: OK, F: FBoot, Node: peer.Name, Value: v, Code: o.Code,
				Error: fmt.Sprintf("202 without a server id: %.200s", o.Body)})
		}
		v.ID = body.Server.ID
		w.pool.add(v.ID, name)
	}
	return w.complete(inv, o, http.StatusAccepted, v)
}

func (w *Workload) delete(process int, peer *Agent, id, name string) string {
	return w.deleteOp(process, peer, id, name).Type
}

// deleteOp sends one delete and returns its recorded completion.
func (w *Workload) deleteOp(process int, peer *Agent, id, name string) Op {
	v := OpValue{ID: id, Name: name}
	inv := w.Rec.Add(Op{Process: process, Type: Invoke, F: FDelete, Node: peer.Name, Value: v})
	o := w.request(http.MethodDelete, peer.URL(), "/compute/v2.1/servers/"+url.PathEscape(id), nil)
	if o.Code == http.StatusNotFound {
		v.NotFound = true
	}
	c := w.complete(inv, o, http.StatusNoContent, v)
	if c.Type != Fail || v.NotFound {
		w.pool.drop(id)
	}
	return c
}

func (w *Workload) read(process int, peer *Agent, id, name, consistency string) string {
	return w.readOp(process, peer, id, name, consistency).Type
}

// readOp shows one server and returns the recorded completion.
func (w *Workload) readOp(process int, peer *Agent, id, name, consistency string) Op {
	v := OpValue{ID: id, Name: name}
	w.Rec.Add(Op{Process: process, Type: Invoke, F: FRead, Node: peer.Name, Consistency: consistency, Value: v})
	o := w.request(http.MethodGet, peer.URL(), "/compute/v2.1/servers/"+url.PathEscape(id)+"?consistency="+consistency, nil)
	c := Op{Process: process, F: FRead, Node: peer.Name, Consistency: consistency, Code: o.Code}
	switch o.Code {
	case http.StatusOK:
		var body struct {
			Server novaServer `json:"server"`
		}
		if err := json.Unmarshal(o.Body, &body); err != nil {
			c.Type, c.Error = Fail, "unreadable body: "+err.Error()
			break
		}
		st := body.Server.State()
		v.Server = &st
		c.Type = OK
	case http.StatusNotFound:
		v.NotFound = true
		c.Type = OK
		w.pool.drop(id)
	default:
		c.Type, c.Error = readFailure(o)
	}
	c.Value = v
	return w.Rec.Add(c)
}

func (w *Workload) list(process int, peer *Agent, consistency string) string {
	return w.listOp(process, peer, consistency).Type
}

// listOp lists the live servers and returns the recorded completion.
func (w *Workload) listOp(process int, peer *Agent, consistency string) Op {
	w.Rec.Add(Op{Process: process, Type: Invoke, F: FList, Node: peer.Name, Consistency: consistency})
	o := w.request(http.MethodGet, peer.URL(), "/compute/v2.1/servers/detail?consistency="+consistency, nil)
	c := Op{Process: process, F: FList, Node: peer.Name, Consistency: consistency, Code: o.Code}
	var body struct {
		Servers []novaServer `json:"servers"`
	}
	switch {
	case o.Code == http.StatusOK && json.Unmarshal(o.Body, &body) == nil:
		c.Type = OK
		c.Value.Servers = []ServerState{}
		for _, s := range body.Servers {
			st := s.State()
			c.Value.Servers = append(c.Value.Servers, st)
			w.pool.add(st.ID, st.Name)
		}
	default:
		c.Type, c.Error = readFailure(o)
	}
	return w.Rec.Add(c)
}

// readFailure classifies a read that did not succeed: a read has no
// effect, so this only matters for availability.
func readFailure(o Outcome) (string, string) {
	if o.Code == 0 && !o.NotSent {
		return Info, o.String()
	}
	return Fail, o.String()
}
