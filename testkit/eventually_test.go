package testkit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit"
)

// recorder is a testing.TB that records a failure instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

func TestEventually(t *testing.T) {
	n := 0
	took := testkit.Eventually(t, 5*time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 || took <= 0 {
		t.Fatalf("%d calls in %s", n, took)
	}
	ok := false
	testkit.Eventually(t, time.Second, testkit.Holds("ok", func() bool { ok = !ok; return !ok }), testkit.Every(time.Millisecond))

	r := &recorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		testkit.Eventually(r, 20*time.Millisecond, testkit.Holds("never", func() bool { return false }))
	}()
	if r.failed == "" {
		t.Fatal("a condition that never holds did not fail the test")
	}
}
