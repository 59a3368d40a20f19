package core

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
)

// Cluster is what the API needs from the peer it runs on.
type Cluster interface {
	Name() string
	Store() *fsm.Store
	// ProposeCommitted commits cmd and returns once the leader applied it;
	// AwaitApplied waits until this peer has applied the entry at idx.
	ProposeCommitted(ctx context.Context, cmd fsm.Command) (uint64, error)
	AwaitApplied(ctx context.Context, idx uint64) error
	// The leader's end of forwarding, served under PeerPathPrefix.
	forward.Leader
	ReadBarrier(ctx context.Context, c cluster.Consistency) error
	Members() []cluster.Member
	RaftStatus() cluster.RaftStatus
	Ready() []cluster.Check
}

// DefaultWriteTimeout bounds a write's proposal.
const DefaultWriteTimeout = 10 * time.Second

// State is the replicated state as every surface's handlers reach it:
// reads at the request's consistency, writes proposed under its request id.
type State struct {
	Cluster Cluster
	// WriteTimeout bounds a write's proposal (default DefaultWriteTimeout).
	WriteTimeout time.Duration
}

// Store is this peer's replica.
func (s *State) Store() *fsm.Store { return s.Cluster.Store() }

// ReadBarrier honours ?consistency= for reads of replicated state.
func (s *State) ReadBarrier(c echo.Context) error {
	lvl, err := cluster.ParseConsistency(c.QueryParam("consistency"))
	if err != nil {
		return err
	}
	return s.Cluster.ReadBarrier(c.Request().Context(), lvl)
}

// Timeout bounds a write: WriteTimeout, or DefaultWriteTimeout when unset.
func (s *State) Timeout() time.Duration {
	if s.WriteTimeout > 0 {
		return s.WriteTimeout
	}
	return DefaultWriteTimeout
}

// ReadYourWritesHeader is the request header with which a client asks a
// write to be answered only once the peer that took it has applied it
// ("true"), so that a stale read of that peer sees it too. Without it a
// write is answered once the leader has applied it: reads at default and
// linearizable consistency see it on every peer, stale reads on the
// leader too.
const ReadYourWritesHeader = "X-Corral-Read-Your-Writes"

// readYourWrites reports whether the request asks for read-your-writes on
// this peer (ReadYourWritesHeader); a value that is not a boolean is a 400.
func readYourWrites(c echo.Context) (bool, error) {
	v := c.Request().Header.Values(ReadYourWritesHeader)
	if len(v) == 0 {
		return false, nil
	}
	switch s := strings.TrimSpace(v[0]); {
	case len(v) > 1:
	case strings.EqualFold(s, "true"):
		return true, nil
	case strings.EqualFold(s, "false"):
		return false, nil
	}
	return false, BadRequest("%s must be true or false (got %q)", ReadYourWritesHeader, strings.Join(v, ", "))
}

// Propose commits cmd with the request id attached and a bounded time. It
// returns once the leader has applied it; the peer that took the request
// also waits to apply it itself only when the client asks for it
// (ReadYourWritesHeader). A handler whose answer reads this peer's
// replica after the write uses ProposeAndRead.
func (s *State) Propose(c echo.Context, cmd fsm.Command) error {
	ryw, err := readYourWrites(c)
	if err != nil {
		return err
	}
	return s.propose(c, cmd, ryw)
}

// ProposeAndRead is Propose for a handler that answers with what this
// peer's replica holds after the write: it always waits until this peer
// has applied it.
func (s *State) ProposeAndRead(c echo.Context, cmd fsm.Command) error {
	if _, err := readYourWrites(c); err != nil {
		return err
	}
	return s.propose(c, cmd, true)
}

func (s *State) propose(c echo.Context, cmd fsm.Command, await bool) error {
	cmd.Header().RequestID = RequestID(c)
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.Timeout())
	defer cancel()
	idx, err := s.Cluster.ProposeCommitted(ctx, cmd)
	if err != nil || !await {
		return err
	}
	return s.Cluster.AwaitApplied(ctx, idx)
}

// ServerNotFound is Nova's 404 for a server, which the admin API answers
// too.
func ServerNotFound(id string) error {
	return echo.NewHTTPError(http.StatusNotFound, "Instance "+id+" could not be found.")
}

// LiveServer returns a server that is not deleted (deleted ones are 404,
// as in Nova).
func (s *State) LiveServer(id string) (fsm.Server, error) {
	v, err := s.Store().Server(id)
	if err != nil || !v.Live() {
		return v, ServerNotFound(id)
	}
	return v, nil
}

// BaseURL is the scheme and host the request was sent to, for links.
func BaseURL(c echo.Context) string {
	return c.Scheme() + "://" + c.Request().Host
}
