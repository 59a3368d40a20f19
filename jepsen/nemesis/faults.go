package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
)

// inject applies one fault of the family (a partition of the variant) and
// returns its heal; target, when not nil, is the agent it strikes. An error
// means the fault did not (fully) happen.
func (n *Nemesis) inject(ctx context.Context, family, variant string, target *cluster.Agent) (string, string, func() error, error) {
	switch family {
	case "kill":
		ts := n.pick(1 + n.Rng.Intn(n.minority()))
		if target != nil {
			ts = []*cluster.Agent{target}
		}
		var errs []error
		for _, a := range ts {
			errs = append(errs, a.Kill())
		}
		return "kill", names(ts), func() error { return startAll(ts) }, errors.Join(errs...)
	case "pause":
		ts := n.pick(1 + n.Rng.Intn(n.minority()))
		if target != nil {
			ts = []*cluster.Agent{target}
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
	case "upgrade":
		return n.upgrade()
	case "combo":
		return n.combo(ctx, target)
	case "keyrotate":
		return n.keyrotate(ctx)
	}
	return family, "", nil, fmt.Errorf("unknown nemesis %q", family)
}

// combo takes one agent out (kill or pause) and cuts the network of the
// others at the same time.
func (n *Nemesis) combo(ctx context.Context, target *cluster.Agent) (string, string, func() error, error) {
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

func startAll(as []*cluster.Agent) error {
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
func (n *Nemesis) logVoter(ctx context.Context, a *cluster.Agent, since time.Time) {
	l := n.leader(ctx)
	if l == nil {
		n.Logf("nemesis: wipe: no leader to ask whether %s votes again", a.Name)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var st client.RaftStatus
	if err := n.API.GetJSON(cctx, l.URL(), client.RaftPath, &st); err != nil {
		n.Logf("nemesis: wipe: raft status of %s: %v", l.Name, err)
		return
	}
	n.Logf("nemesis: wipe: %s a voter again %s after the wipe: %v (voters %v, non-voters %v, leader %s)",
		a.Name, time.Since(since).Round(time.Millisecond), slices.Contains(st.Voters, a.Name), st.Voters, st.Nonvoters, st.Leader)
}
