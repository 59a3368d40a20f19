package forward

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

type nobody struct{ calls int }

func (n *nobody) ApplyForwarded(context.Context, []byte) (uint64, error) { n.calls++; return 1, nil }
func (n *nobody) ReadIndex(context.Context, bool) (uint64, error)        { n.calls++; return 1, nil }

// An operation this leader does not know (a newer follower's) is answered
// "not found", which the follower does not retry, and reaches nothing.
func TestRPCUnknownOperationIsNotFound(t *testing.T) {
	l := &nobody{}
	s := NewServer(l, ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	resp := s.handle(&rpcRequest{Op: "compact_log"})
	if resp.Error == nil || resp.Error.Kind != kindNotFound {
		t.Fatalf("answer %+v, want kind %s", resp, kindNotFound)
	}
	if err := fromWire(resp.Error, "leader"); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("the follower reads %v", err)
	}
	if l.calls != 0 {
		t.Fatal("an unknown operation reached the leader")
	}
}
