package core

import (
	"context"
	"net/http"
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
	Propose(ctx context.Context, cmd fsm.Command) (uint64, error)
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

// Propose commits cmd with the request id attached and a bounded time.
func (s *State) Propose(c echo.Context, cmd fsm.Command) error {
	cmd.Header().RequestID = RequestID(c)
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.Timeout())
	defer cancel()
	_, err := s.Cluster.Propose(ctx, cmd)
	return err
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
