package realneutron_test

import (
	"testing"

	"github.com/corral-dev/corral/testkit/realneutron"
)

// stopper is a testing.TB that records how a test was stopped.
type stopper struct {
	testing.TB
	how string
}

type stopped struct{}

func (s *stopper) Helper()               {}
func (s *stopper) Name() string          { return "TestX" }
func (s *stopper) Fatal(...any)          { s.how = "fatal"; panic(stopped{}) }
func (s *stopper) Fatalf(string, ...any) { s.how = "fatal"; panic(stopped{}) }
func (s *stopper) Skip(...any)           { s.how = "skip"; panic(stopped{}) }

func load(t *testing.T) string {
	s := &stopper{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (stopped{}) {
				panic(r)
			}
		}()
		realneutron.Load(s, "this")
		s.how = "loaded"
	}()
	return s.how
}

// Without NEUTRON_ENV a test of the real Neutron skips, but fails in CI,
// which starts Neutron for it.
func TestLoadWithoutNeutronEnv(t *testing.T) {
	t.Setenv("NEUTRON_ENV", "")
	t.Setenv("CI", "")
	if how := load(t); how != "skip" {
		t.Errorf("outside CI: %s, want skip", how)
	}
	t.Setenv("CI", "true")
	if how := load(t); how != "fatal" {
		t.Errorf("in CI: %s, want fatal", how)
	}
}
