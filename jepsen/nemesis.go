package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/testkit/netem"
)

// Window is one fault, from injection to heal, in nanoseconds since the
// start of the run. Error says why the fault was not (fully) injected,
// HealError why it was not (fully) undone: either makes the run invalid,
// since the history was not recorded under the faults the report names.
type Window struct {
	Name      string `json:"name"`
	Detail    string `json:"detail"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	Error     string `json:"error,omitempty"`
	HealError string `json:"heal_error,omitempty"`
}

// Families of faults, selectable with -nemesis.
var allFamilies = []string{"kill", "pause", "partition", "leader", "wipe", "restart", "combo", "keyrotate"}

// Partition variants, selectable with -partitions.
var partitionVariants = []string{"isolate-one", "majority-minority", "isolate-leader", "bridge"}

// ParseVariants parses "majority-minority,bridge" (empty: all).
func ParseVariants(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		ok := false
		for _, k := range partitionVariants {
			ok = ok || k == v
		}
		if !ok {
			return nil, fmt.Errorf("unknown partition %q: use %s", v, strings.Join(partitionVariants, ","))
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseFamilies parses "kill,pause" or "all" (or "none").
func ParseFamilies(s string) ([]string, error) {
	if s == "all" {
		return allFamilies, nil
	}
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		ok := false
		for _, k := range allFamilies {
			ok = ok || k == f
		}
		if !ok {
			return nil, fmt.Errorf("unknown nemesis %q: use %s or all", f, strings.Join(allFamilies, ","))
		}
		out = append(out, f)
	}
	return out, nil
}

// NeedsGossipKey reports whether a family rotates the gossip key (the
// agents then start with gossip encryption).
func NeedsGossipKey(families []string) bool { return slices.Contains(families, "keyrotate") }

// NeedsFirewall reports whether any family cuts links.
func NeedsFirewall(families []string) bool {
	for _, f := range families {
		if f == "partition" || f == "combo" {
			return true
		}
	}
	return false
}

// Nemesis injects faults on a schedule: heal, fault, heal, fault, ...
type Nemesis struct {
	Cl       *Cluster
	FW       *netem.Firewall // nil when no family cuts links
	API      *Corral
	Rec      *Recorder
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

	mu      sync.Mutex
	windows []Window
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
func (n *Nemesis) Windows() []Window {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Window(nil), n.windows...)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Run injects faults until the run is `until` old, leaving a heal period
// at the end, and heals everything before returning.
func (n *Nemesis) Run(ctx context.Context, until time.Duration) {
	defer func() { _ = n.HealAll() }() // the caller heals again and keeps the error
	if len(n.Families) == 0 {
		return
	}
	// Every family gets its turn, in a fresh random order each round.
	var queue []string
	for {
		if !sleepCtx(ctx, n.Heal) {
			return
		}
		if n.Rec.Since()+n.Fault+n.Heal > until {
			return
		}
		if len(queue) == 0 {
			queue = append(queue, n.Families...)
			n.Rng.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
		}
		family := queue[0]
		queue = queue[1:]
		variant := ""
		if family == "partition" {
			variant = n.drawVariant()
		}
		target, why := n.aim(ctx, family, variant)
		if ctx.Err() != nil {
			return
		}
		w := Window{Start: int64(n.Rec.Since())}
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
		sleepCtx(ctx, n.Fault)
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
func (n *Nemesis) pick(k int, not ...*Agent) []*Agent {
	var pool []*Agent
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

func names(as []*Agent) string {
	var s []string
	for _, a := range as {
		s = append(s, a.Name)
	}
	return strings.Join(s, ",")
}

func (n *Nemesis) leader(ctx context.Context) *Agent {
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
func (n *Nemesis) aim(ctx context.Context, family, variant string) (*Agent, string) {
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

// inject applies one fault of the family (a partition of the variant) and
// returns its heal; target, when not nil, is the agent it strikes. An error
// means the fault did not (fully) happen.
func (n *Nemesis) inject(ctx context.Context, family, variant string, target *Agent) (string, string, func() error, error) {
	switch family {
	case "kill":
		ts := n.pick(1 + n.Rng.Intn(n.minority()))
		if target != nil {
			ts = []*Agent{target}
		}
		var errs []error
		for _, a := range ts {
			errs = append(errs, a.Kill())
		}
		return "kill", names(ts), func() error { return startAll(ts) }, errors.Join(errs...)
	case "pause":
		ts := n.pick(1 + n.Rng.Intn(n.minority()))
		if target != nil {
			ts = []*Agent{target}
		}
		var errs []error
		for _, a := range ts {
			errs = append(errs, a.Pause())
		}
		return "pause", names(ts), func() error {
			var errs []error
			for _, a := range ts {
				errs = append(errs, a.Resume())
			}
			return errors.Join(errs...)
		}, errors.Join(errs...)
	case "partition":
		if variant == "" {
			variant = n.drawVariant()
		}
		return n.partition(ctx, variant, nil, target)
	case "leader":
		l := n.leader(ctx)
		if l == nil {
			return "leader-kill", "no leader known", nil, fmt.Errorf("no leader to kill")
		}
		return "leader-kill", l.Name, func() error { return l.Start() }, l.Kill()
	case "wipe":
		a := n.pick(1)[0]
		if n.Rng.Intn(3) == 0 {
			if l := n.leader(ctx); l != nil {
				a = l
			}
		}
		err := a.Wipe()
		if err == nil {
			err = a.Start()
		}
		wiped := time.Now()
		return "wipe", a.Name + " restarted with an empty data dir", func() error {
			if err := a.Start(); err != nil {
				return err
			}
			n.logVoter(ctx, a, wiped)
			return nil
		}, err
	case "restart":
		a := n.pick(1)[0]
		if n.Rng.Intn(2) == 0 {
			if l := n.leader(ctx); l != nil {
				a = l
			}
		}
		err := a.Terminate(10 * time.Second)
		if err == nil {
			err = a.Start()
		}
		return "restart", a.Name + " stopped with SIGTERM and restarted", func() error { return a.Start() }, err
	case "combo":
		return n.combo(ctx, target)
	case "keyrotate":
		return n.keyrotate(ctx)
	}
	return family, "", nil, fmt.Errorf("unknown nemesis %q", family)
}

// combo takes one agent out (kill or pause) and cuts the network of the
// others at the same time.
func (n *Nemesis) combo(ctx context.Context, target *Agent) (string, string, func() error, error) {
	victim := n.pick(1)[0]
	if target != nil {
		victim = target
	}
	how := "kill"
	var verr error
	if n.Rng.Intn(2) == 0 {
		how = "pause"
		verr = victim.Pause()
	} else {
		verr = victim.Kill()
	}
	variant := []string{"isolate-one", "isolate-leader", "bridge"}[n.Rng.Intn(3)]
	name, detail, heal, err := n.partition(ctx, variant, victim, nil)
	undo := func() error {
		var errs []error
		if heal != nil {
			errs = append(errs, heal())
		}
		if how == "pause" && victim.Paused() {
			errs = append(errs, victim.Resume())
		}
		errs = append(errs, victim.Start())
		return errors.Join(errs...)
	}
	return "combo-" + how + "+" + name, how + " " + victim.Name + "; " + detail, undo, errors.Join(verr, err)
}

// partition cuts the network by variant among the agents other than skip;
// an isolate-one or majority-minority partition puts first (when not nil)
// on the small side.
func (n *Nemesis) partition(ctx context.Context, variant string, skip, first *Agent) (string, string, func() error, error) {
	heal := func() error { return n.FW.Heal() }
	var others []*Agent
	for _, a := range n.Cl.Agents {
		if a != skip {
			others = append(others, a)
		}
	}
	n.Rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	if i := slices.Index(others, first); i > 0 && (variant == "isolate-one" || variant == "majority-minority") {
		others[0], others[i] = others[i], others[0]
	}
	var a, b []*Agent
	switch variant {
	case "isolate-leader":
		l := n.leader(ctx)
		if l == nil || l == skip {
			variant = "isolate-one"
			a = others[:1]
			break
		}
		a = []*Agent{l}
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

func hosts(as []*Agent) []netem.Host {
	out := make([]netem.Host, len(as))
	for i, a := range as {
		out[i] = a.NetHost()
	}
	return out
}

func startAll(as []*Agent) error {
	var errs []error
	for _, a := range as {
		errs = append(errs, a.Start())
	}
	return errors.Join(errs...)
}

// logVoter records whether a peer that came back with an empty data dir
// is a voter again by the end of its window: it rejoins as a non-voter
// and is promoted once it has caught up (docs/operations.md, "Dead voters
// and empty data dirs"). Only logged: a slow catch-up is not a fault.
func (n *Nemesis) logVoter(ctx context.Context, a *Agent, since time.Time) {
	l := n.leader(ctx)
	if l == nil {
		n.Logf("nemesis: wipe: no leader to ask whether %s votes again", a.Name)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var st RaftStatus
	if err := n.API.GetJSON(cctx, l.URL(), "/v1/cluster/raft", &st); err != nil {
		n.Logf("nemesis: wipe: raft status of %s: %v", l.Name, err)
		return
	}
	n.Logf("nemesis: wipe: %s a voter again %s after the wipe: %v (voters %v, non-voters %v, leader %s)",
		a.Name, time.Since(since).Round(time.Millisecond), slices.Contains(st.Voters, a.Name), st.Voters, st.NonVoters, st.Leader)
}
