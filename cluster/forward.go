package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/fsm"
)

// Forwarder carries a follower's writes and read-index requests to the
// leader whose API listens at leaderAPI. forward.Client is the one used in
// production; tests may inject an in-memory one.
type Forwarder interface {
	Apply(ctx context.Context, leaderAPI string, data []byte) (uint64, error)
	ReadIndex(ctx context.Context, leaderAPI string, verify bool) (uint64, error)
}

// forwardApply sends cmd to the leader and counts the outcome.
func (n *Node) forwardApply(ctx context.Context, cmd fsm.Command) (uint64, error) {
	api, leader, err := n.leaderTarget()
	if err != nil {
		return 0, err
	}
	data, err := fsm.EncodeAs(cmd, n.forwardEncoding(leader))
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", cmd.Type(), err)
	}
	idx, err := n.fwd.Apply(ctx, api, data)
	switch {
	case err == nil:
		n.metrics.forwardedWrite.WithLabelValues("ok").Inc()
	case rejected(err):
		n.metrics.forwardedWrite.WithLabelValues("rejected").Inc()
	default:
		n.metrics.forwardedWrite.WithLabelValues("error").Inc()
	}
	return idx, err
}

// rejected errors are the leader's business answers (the write was
// refused by the state), as opposed to failures to get it committed.
func rejected(err error) bool {
	return errors.Is(err, fsm.ErrNotFound) || errors.Is(err, fsm.ErrConflict) || errors.Is(err, fsm.ErrInvalid)
}

// forwardReadIndex asks the leader for a read index and counts the outcome.
func (n *Node) forwardReadIndex(ctx context.Context, c Consistency) (uint64, error) {
	api, err := n.leaderAPI()
	if err != nil {
		return 0, err
	}
	idx, err := n.fwd.ReadIndex(ctx, api, c == Linearizable)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	n.metrics.forwardedRead.WithLabelValues(string(c), outcome).Inc()
	return idx, err
}

// ApplyForwarded applies a command a follower forwarded (leader only): the
// leader's end of forward.Handler.
func (n *Node) ApplyForwarded(ctx context.Context, data []byte) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	cmd, err := fsm.Decode(data)
	if err != nil {
		return 0, fmt.Errorf("%w: forwarded command: %v", fsm.ErrInvalid, err)
	}
	return n.applyLocal(ctx, cmd)
}

// leaderAPI returns the API address of the current leader.
func (n *Node) leaderAPI() (string, error) {
	api, _, err := n.leaderTarget()
	return api, err
}

// leaderTarget returns the API address and the name of the current leader.
func (n *Node) leaderTarget() (api, name string, err error) {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return "", "", ErrNoLeader
	}
	if m, ok := n.admittedMember(string(id)); ok && m.Meta.APIAddr != "" {
		return m.Meta.APIAddr, string(id), nil
	}
	if h, err := n.store.Host(string(id)); err == nil && h.APIAddr != "" {
		return h.APIAddr, string(id), nil
	}
	return "", "", fmt.Errorf("%w: leader %s has no known API address yet", ErrNoLeader, id)
}
