package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
)

// Forwarder carries a follower's writes and read-index requests to the
// leader whose API listens at leaderAPI, when the leader does not serve
// forwarding's RPC (a peer of an older version). forward.Client (HTTP) is
// the one used in production; tests may inject an in-memory one, which
// then carries every forward (Config.Forwarder).
type Forwarder interface {
	Apply(ctx context.Context, leaderAPI string, data []byte) (uint64, error)
	ReadIndex(ctx context.Context, leaderAPI string, verify bool) (uint64, error)
}

// settingForwardRPC is advertised in gossip by every peer that serves
// forwarding's binary RPC on its raft port, with the version it serves
// (forward.RPCVersion). A follower forwards over the RPC to a leader that
// advertises the version it speaks, over HTTP to any other (a peer of an
// older version).
const settingForwardRPC = "forward_rpc"

// route is where this peer forwards to the leader now: its raft port,
// over the RPC, or its API, over HTTP.
type route struct {
	rpc    bool
	addr   string
	leader string // its name
}

// leaderRoute returns the route to the current leader.
func (n *Node) leaderRoute() (route, error) {
	addr, id := n.raft.LeaderWithID()
	if id == "" {
		return route{}, ErrNoLeader
	}
	m, ok := n.admittedMember(string(id))
	if n.rpc != nil && ok && addr != "" && m.Meta.Settings[settingForwardRPC] == forward.RPCVersion {
		return route{rpc: true, addr: string(addr), leader: string(id)}, nil
	}
	api, err := n.apiOf(string(id), m, ok)
	return route{addr: api, leader: string(id)}, err
}

// forwardApply sends cmd to the leader and counts the outcome.
func (n *Node) forwardApply(ctx context.Context, cmd fsm.Command) (uint64, error) {
	to, err := n.leaderRoute()
	if err != nil {
		return 0, err
	}
	data, err := fsm.EncodeAs(cmd, n.forwardEncoding(to.leader))
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", cmd.Type(), err)
	}
	var idx uint64
	if to.rpc {
		idx, err = n.rpc.Apply(ctx, to.addr, data)
		n.metrics.forwardRPC.WithLabelValues("apply", rpcOutcome(err)).Inc()
	} else {
		idx, err = n.fwd.Apply(ctx, to.addr, data)
	}
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

// rpcOutcome labels a call of forwarding's RPC for its metrics.
func rpcOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case rejected(err):
		return "rejected"
	case errors.Is(err, forward.ErrNotDelivered):
		return "not_delivered"
	case errors.Is(err, ErrNoLeader), errors.Is(err, ErrNotLeader):
		return "not_leader"
	}
	return "error"
}

// forwardReadIndex asks the leader for a read index and counts the outcome.
func (n *Node) forwardReadIndex(ctx context.Context, c Consistency) (uint64, error) {
	to, err := n.leaderRoute()
	if err != nil {
		return 0, err
	}
	var idx uint64
	if to.rpc {
		idx, err = n.rpc.ReadIndex(ctx, to.addr, c == Linearizable)
		n.metrics.forwardRPC.WithLabelValues("read_index", rpcOutcome(err)).Inc()
	} else {
		idx, err = n.fwd.ReadIndex(ctx, to.addr, c == Linearizable)
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	n.metrics.forwardedRead.WithLabelValues(string(c), outcome).Inc()
	return idx, err
}

// ApplyForwarded applies a command a follower forwarded (leader only): the
// leader's end of forward.Handler and forward.Server.
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

// startForwardRPC serves forwarding's RPC on the raft port and opens a
// client of it, when this peer speaks it (Config.forwardRPC).
func (n *Node) startForwardRPC() {
	st := n.parts.stream
	if st == nil || !n.cfg.forwardRPC() {
		return
	}
	log := n.log.With("component", "forward")
	n.rpcServer = forward.NewServer(n, forward.ServerOptions{Logger: log, Served: func(op string, err error) {
		n.metrics.forwardRPCServed.WithLabelValues(op, rpcOutcome(err)).Inc()
	}})
	st.serveRPC(n.rpcServer.ServeConn)
	n.rpc = forward.NewRPCClient(st.dialRPC, forward.RPCClientOptions{Logger: log, Session: func(event string) {
		n.metrics.forwardRPCSessions.WithLabelValues(event).Inc()
	}})
}

// stopForwardRPC closes the RPC's sessions, both ways.
func (n *Node) stopForwardRPC() {
	if n.rpc != nil {
		n.rpc.Close()
	}
	if n.rpcServer != nil {
		n.rpcServer.Close()
	}
}

// leaderAPI returns the API address of the current leader.
func (n *Node) leaderAPI() (string, error) {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return "", ErrNoLeader
	}
	m, ok := n.admittedMember(string(id))
	return n.apiOf(string(id), m, ok)
}

// apiOf returns the API address of peer id, from its gossip (m, when ok)
// or its host.
func (n *Node) apiOf(id string, m memberState, ok bool) (string, error) {
	if ok && m.Meta.APIAddr != "" {
		return m.Meta.APIAddr, nil
	}
	if h, err := n.store.Host(id); err == nil && h.APIAddr != "" {
		return h.APIAddr, nil
	}
	return "", fmt.Errorf("%w: leader %s has no known API address yet", ErrNoLeader, id)
}
