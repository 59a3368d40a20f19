package compute

import (
	"context"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

type nopVirt struct{}

func (nopVirt) Kind() string                                      { return fsm.KindIronic }
func (nopVirt) Build(context.Context, *Handle, fsm.Server) error  { return nil }
func (nopVirt) Delete(context.Context, *Handle, fsm.Server) error { return nil }

// NewHandleForTest returns a Handle of a manager for c with the default
// configuration, which it does not run.
func NewHandleForTest(t testing.TB, c Cluster) *Handle {
	t.Helper()
	m, err := New(Config{}, c, nopVirt{})
	if err != nil {
		t.Fatal(err)
	}
	return &Handle{m: m}
}
