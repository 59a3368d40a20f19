package testkit_test

import (
	"testing"

	"github.com/corral-dev/corral/testkit"
)

// stopper is a testing.TB that records how a test was stopped.
type stopper struct {
	testing.TB
	how string
}

type stopped struct{}

func (s *stopper) Helper()      {}
func (s *stopper) Name() string { return "TestX" }
func (s *stopper) Fatal(args ...any) {
	s.how = "fatal"
	panic(stopped{})
}
func (s *stopper) Skip(args ...any) {
	s.how = "skip"
	panic(stopped{})
}

func stopBy(t *testing.T) string {
	s := &stopper{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (stopped{}) {
				panic(r)
			}
		}()
		testkit.Missing(s, "the thing is not tested")
	}()
	return s.how
}

// A test whose service is missing skips, but fails in CI.
func TestMissing(t *testing.T) {
	t.Setenv("CI", "")
	if how := stopBy(t); how != "skip" {
		t.Errorf("outside CI: %q, want skip", how)
	}
	t.Setenv("CI", "true")
	if how := stopBy(t); how != "fatal" {
		t.Errorf("in CI: %q, want fatal", how)
	}
}
