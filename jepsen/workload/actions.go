package workload

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"sync"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/internal/pace"
)

// How the actions workload aims its faults: the nemesis waits up to
// AimWait for an action accepted once a fault is due, then strikes its
// owner StrikeMin to StrikeMax after the 202.
const (
	AimWait      = 8 * time.Second
	StrikeMin    = 200 * time.Millisecond
	StrikeMax    = 1500 * time.Millisecond
	ActionSettle = 60 * time.Second // how long a client waits for an action to be over
)

// actionBody is Nova's request body of an action.
func actionBody(kind, image string) client.ActionRequest {
	switch kind {
	case history.ActStop:
		return client.Action(client.ActionStop, nil)
	case history.ActStart:
		return client.Action(client.ActionStart, nil)
	case history.ActRebootSoft:
		return client.Action(client.ActionReboot, client.RebootAction{Type: client.RebootSoft})
	case history.ActRebootHard:
		return client.Action(client.ActionReboot, client.RebootAction{Type: client.RebootHard})
	}
	return client.Action(client.ActionRebuild, client.RebuildAction{ImageRef: image})
}

// pickAction draws an action Nova allows on a server in status.
func pickAction(rng *rand.Rand, status string) string {
	r := rng.Float64()
	if status == "SHUTOFF" {
		switch {
		case r < 0.5:
			return history.ActStart
		case r < 0.75:
			return history.ActRebuild
		}
		return history.ActRebootHard
	}
	switch {
	case r < 0.35:
		return history.ActRebuild
	case r < 0.6:
		return history.ActRebootHard
	case r < 0.8:
		return history.ActRebootSoft
	}
	return history.ActStop
}

// aimed is an action just accepted, for the nemesis to strike its owner.
type aimed struct {
	Server, Host, Kind, RequestID string
	At                            time.Time
}

// Actions is the actions workload: Clients clients boot (up to MaxLive
// servers), delete (less often than the mixed workload, so that servers
// live long enough to be acted on), show and list; Actors more clients each
// pick a live server, show it (linearizable, recorded), send an action its
// status allows with a fresh X-OpenStack-Request-Id, and show it until the
// action is over (task state cleared, or gone, or Settle passed).
type Actions struct {
	*Ops
	Clients int
	MaxLive int
	Seed    int64
	Actors  int
	Admin   *client.Corral // reads a server's owner when the clients' credentials do not show it
	Settle  time.Duration
	// StrikeMin and StrikeMax bound the delay between an action's 202 and
	// the fault Aim aims at its owner: long enough for the owner to have
	// started the side effect, short enough to land before it is done.
	StrikeMin, StrikeMax time.Duration

	accepted chan aimed
	mu       sync.Mutex
	rng      *rand.Rand // Aim's
}

// actionProcess numbers the actors' processes apart from the clients'.
const actionProcess = 1 << 20

// Run drives the clients until ctx ends.
func (a *Actions) Run(ctx context.Context) {
	a.pool = newPool()
	a.accepted = make(chan aimed, 64)
	a.rng = rand.New(rand.NewSource(a.Seed ^ 0x5eed))
	var wg sync.WaitGroup
	for i := 0; i < a.Clients; i++ {
		wg.Go(func() { a.churn(ctx, i) })
	}
	for i := 0; i < a.Actors; i++ {
		wg.Go(func() { a.actor(ctx, i) })
	}
	wg.Wait()
}

// churn boots up to MaxLive servers, deletes some, shows and lists.
func (a *Actions) churn(ctx context.Context, i int) {
	w := a
	rng := rand.New(rand.NewSource(w.Seed + int64(i)*7919))
	process := i
	for seq := 0; ctx.Err() == nil; seq++ {
		peer := w.Cl.Agents[rng.Intn(len(w.Cl.Agents))]
		live := w.pool.liveCount()
		r := rng.Float64()
		var t string
		switch {
		case r < 0.4 && live < w.MaxLive:
			t = w.boot(process, peer, fmt.Sprintf("jepsen-c%d-%d", i, seq))
		case r < 0.5 && live > w.MaxLive/2:
			if id, nm, ok := w.pool.target(rng, 0.05); ok {
				t = w.delete(process, peer, id, nm)
			}
		case r < 0.85:
			if id, nm, ok := w.pool.target(rng, 0.1); ok {
				t = w.read(process, peer, id, nm, history.Linearizable)
			}
		default:
			t = w.list(process, peer, history.Linearizable)
		}
		if t == history.Info {
			process += w.Clients
		}
		pace.Sleep(ctx, time.Duration(100+rng.Intn(300))*time.Millisecond)
	}
}

// actor acts on live servers, one action at a time.
func (a *Actions) actor(ctx context.Context, i int) {
	w := a
	rng := rand.New(rand.NewSource(w.Seed + int64(i)*104729 + 1))
	process := actionProcess + i
	next := func() { process += a.Actors } // a process with an unknown outcome is gone
	for ctx.Err() == nil {
		id, name, ok := w.pool.target(rng, 0)
		peer := w.Cl.Agents[rng.Intn(len(w.Cl.Agents))]
		if !ok {
			pace.Sleep(ctx, 300*time.Millisecond)
			continue
		}
		c := w.readOp(process, peer, id, name, history.Linearizable)
		if c.Type == history.Info {
			next()
		}
		st := c.Value.Server
		if c.Type != history.OK || st == nil || st.Task != "" || (st.Status != "ACTIVE" && st.Status != "SHUTOFF") {
			pace.Sleep(ctx, time.Duration(100+rng.Intn(200))*time.Millisecond)
			continue
		}
		info := &history.ActionInfo{Kind: pickAction(rng, st.Status), RequestID: "req-" + client.NewUUID(), Node: st.Node,
			Host: st.Host, Status: st.Status}
		if info.Host == "" {
			info.Host, info.Node = a.owner(id, info.Node)
		}
		done := a.act(process, peer, id, name, info)
		if done.Type == history.Info {
			next()
		}
		if done.Type != history.Fail {
			if a.await(ctx, process, id, name, rng) == history.Info {
				next()
			}
		}
		pace.Sleep(ctx, time.Duration(100+rng.Intn(300))*time.Millisecond)
	}
}

// owner asks corral's /v1 API (as the admin) who owns the server, for
// clients whose token does not show OS-EXT-SRV-ATTR:host.
func (a *Actions) owner(id, node string) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), a.Timeout)
	defer cancel()
	var body client.OwnerResponse
	base := a.Cl.Agents[0].URL()
	if err := a.Admin.GetJSON(ctx, base, client.OwnerPath(id), &body); err != nil {
		return "", node
	}
	if node == "" {
		node = body.Owner.Node
	}
	return body.Owner.Host, node
}

// act sends one action and returns its recorded completion; an accepted
// one is offered to the nemesis.
func (a *Actions) act(process int, peer *cluster.Agent, id, name string, info *history.ActionInfo) history.Op {
	w := a
	v := history.OpValue{ID: id, Name: name, Action: info}
	inv := w.Rec.Add(history.Op{Process: process, Type: history.Invoke, F: history.FAction, Node: peer.Name, Value: v})
	ctx, cancel := context.WithTimeout(context.Background(), w.Timeout)
	o := w.API.DoWith(ctx, http.MethodPost, peer.URL(), client.ServerActionPath(id),
		actionBody(info.Kind, w.Image), http.Header{"X-Openstack-Request-Id": {info.RequestID}})
	cancel()
	done := *info
	done.Echoed = o.RequestID
	v.Action = &done
	if o.Code == http.StatusNotFound {
		v.NotFound = true
	}
	c := w.complete(inv, o, http.StatusAccepted, v)
	if c.Type == history.OK {
		select {
		case a.accepted <- aimed{Server: id, Host: info.Host, Kind: info.Kind, RequestID: info.RequestID, At: time.Now()}:
		default:
		}
	}
	return c
}

// await shows the server (linearizable, through random peers) until its
// action is over, it is gone, Settle passes or the run ends. It returns
// the type of the last show.
func (a *Actions) await(ctx context.Context, process int, id, name string, rng *rand.Rand) string {
	w := a
	deadline := time.Now().Add(a.Settle)
	for time.Now().Before(deadline) && pace.Sleep(ctx, 300*time.Millisecond) {
		peer := w.Cl.Agents[rng.Intn(len(w.Cl.Agents))]
		c := w.readOp(process, peer, id, name, history.Linearizable)
		if c.Type == history.Info {
			return history.Info
		}
		if c.Type != history.OK {
			continue
		}
		if s := c.Value.Server; c.Value.NotFound || (s != nil && s.Task == "" && !s.Acting()) {
			return history.OK
		}
	}
	return history.OK
}

// Aim waits (at most wait) for an action accepted from now on and returns
// its owner, once the strike delay has passed, with a description; "" when
// none came.
func (a *Actions) Aim(ctx context.Context, wait time.Duration) (string, string) {
	if a.accepted == nil {
		return "", ""
	}
	for drained := false; !drained; {
		select {
		case <-a.accepted: // accepted before the fault was due: probably over
		default:
			drained = true
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case x := <-a.accepted:
			if x.Host == "" {
				continue
			}
			a.mu.Lock()
			d := a.StrikeMin
			if a.StrikeMax > a.StrikeMin {
				d += time.Duration(a.rng.Int63n(int64(a.StrikeMax - a.StrikeMin)))
			}
			a.mu.Unlock()
			if !pace.Sleep(ctx, time.Until(x.At.Add(d))) {
				return "", ""
			}
			return x.Host, fmt.Sprintf("owner of %s, whose %s %s was accepted %s before",
				x.Server, x.Kind, x.RequestID, time.Since(x.At).Round(time.Millisecond))
		case <-t.C:
			return "", ""
		case <-ctx.Done():
			return "", ""
		}
	}
}
