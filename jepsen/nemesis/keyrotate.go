package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/internal/pace"
)

// keyStep is one step of a rotation, as `corral keyring OP KEY` does it.
type keyStep struct {
	Op     string // install, use, remove
	Method string // of the API call
	Key    string
}

// rotationSteps is the documented order: every peer accepts the new key,
// then sends with it, then forgets the old one.
func rotationSteps(oldKey, newKey string) []keyStep {
	return []keyStep{
		{Op: "install", Method: http.MethodPost, Key: newKey},
		{Op: "use", Method: http.MethodPut, Key: newKey},
		{Op: "remove", Method: http.MethodDelete, Key: oldKey},
	}
}

// done reports whether a peer's keyring shows the step applied.
func (s keyStep) done(st client.KeyringStatus) bool {
	switch s.Op {
	case "install":
		return slices.Contains(st.Keys, s.Key)
	case "use":
		return st.Primary == s.Key
	case "remove":
		return !slices.Contains(st.Keys, s.Key) && st.Primary != ""
	}
	return false
}

// shortKey names a key in logs and reports without spelling it out.
func shortKey(k string) string {
	if len(k) > 8 {
		return k[:8] + "…"
	}
	return k
}

// keyrotate rotates the gossip key on the live cluster while the workload
// runs: `corral keyring install NEW`, `use NEW`, `remove OLD` through the
// CLI against a random peer, each step checked on every peer
// (GET /v1/operator/keyring?local=true) and applied to a peer that missed
// it with ?local=true, as docs/operations.md tells an operator; the steps
// are spread over the fault window. Then every agent's configuration gets
// the new key. Any step that cannot be completed on every peer is a fault
// that did not happen.
func (n *Nemesis) keyrotate(ctx context.Context) (string, string, func() error, error) {
	oldKey := n.Cl.GossipKey()
	if oldKey == "" {
		return "keyrotate", "gossip encryption is off", nil, errors.New("keyrotate needs gossip encryption ([gossip] encrypt)")
	}
	out, err := cluster.CLI(ctx, n.Cl.Bin, n.Cl.Dir, nil, "keygen")
	newKey := strings.TrimSpace(out)
	if err == nil && newKey == "" {
		err = errors.New("corral keygen printed no key")
	}
	if err != nil {
		return "keyrotate", "no new key", nil, err
	}
	detail := fmt.Sprintf("%s → %s", shortKey(oldKey), shortKey(newKey))
	steps := rotationSteps(oldKey, newKey)
	for i, s := range steps {
		if i > 0 && !pace.Sleep(ctx, n.Fault/4) {
			return "keyrotate", detail + ", interrupted", nil, fmt.Errorf("interrupted before %s", s.Op)
		}
		if err := n.applyKeyStep(ctx, s, n.cliKeyStep(s), 30*time.Second); err != nil {
			return "keyrotate", detail + ", failed at " + s.Op, nil, err
		}
		n.Logf("nemesis: keyrotate: %s %s on every peer", s.Op, shortKey(s.Key))
	}
	if err := n.Cl.SetGossipKey(newKey); err != nil {
		return "keyrotate", detail, nil, fmt.Errorf("rotated, but the agents' [gossip] encrypt was not updated: %w", err)
	}
	return "keyrotate", detail, nil, nil
}

// cliKeyStep runs the step with the corral CLI against a random peer.
func (n *Nemesis) cliKeyStep(s keyStep) func(context.Context) error {
	return func(ctx context.Context) error {
		a := n.pick(1)[0]
		env := append([]string{"CORRAL_ADDR=" + a.URL(), "CORRAL_TOKEN=" + n.Cl.Token}, n.Cl.PKI.CLIEnv()...)
		_, err := cluster.CLI(ctx, n.Cl.Bin, n.Cl.Dir, env, "keyring", s.Op, s.Key)
		return err
	}
}

// applyKeyStep runs the cluster-wide step, then checks every agent's own
// keyring and applies the step locally on an agent that missed it (one
// that was not a gossip member yet when the step ran), until every agent
// shows it or the timeout passes.
func (n *Nemesis) applyKeyStep(ctx context.Context, s keyStep, clusterWide func(context.Context) error, timeout time.Duration) error {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wideErr := clusterWide(dctx)
	if wideErr != nil {
		n.Logf("nemesis: keyrotate: corral keyring %s: %v (checking each peer)", s.Op, wideErr)
	}
	for {
		var missing []string
		var errs []error
		for _, a := range n.Cl.Agents {
			if err := n.keyStepOn(dctx, a, s); err != nil {
				missing = append(missing, a.Name)
				errs = append(errs, err)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if !pace.Sleep(dctx, 500*time.Millisecond) {
			return fmt.Errorf("%s %s not applied on %s within %s (cluster-wide step: %v): %w",
				s.Op, shortKey(s.Key), strings.Join(missing, ","), timeout, wideErr, errors.Join(errs...))
		}
	}
}

// keyStepOn makes sure one agent's keyring shows the step: it reads the
// keyring and, when the step is missing, applies it on that agent alone.
func (n *Nemesis) keyStepOn(ctx context.Context, a *cluster.Agent, s keyStep) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var r client.KeyringResponse
	if err := n.API.GetJSON(cctx, a.URL(), client.KeyringPath+"?local=true", &r); err != nil {
		return err
	}
	if len(r.Peers) == 1 && s.done(r.Peers[0]) {
		return nil
	}
	o := n.API.Do(cctx, s.Method, a.URL(), client.KeyringPath+"?local=true", client.KeyringRequest{Key: s.Key})
	if o.Code != http.StatusOK {
		return fmt.Errorf("%s: %s ?local=true: %s", a.Name, s.Op, o)
	}
	return fmt.Errorf("%s: %s applied locally, to be checked again", a.Name, s.Op)
}
