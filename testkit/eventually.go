package testkit

import (
	"errors"
	"testing"
	"time"
)

// Option changes how Eventually polls.
type Option func(*poll)

type poll struct{ first, max time.Duration }

// Every polls at a fixed interval d instead of the default pacing (5 ms,
// doubling up to 100 ms): for a test that measures how long a state took
// to come and wants that resolution.
func Every(d time.Duration) Option { return func(p *poll) { p.first, p.max = d, d } }

// Eventually calls f until it returns nil, and returns how long that took.
// At timeout it fails t with f's last error. The pause between calls only
// paces the poll: the test waits for a state, never for a fixed time.
func Eventually(t testing.TB, timeout time.Duration, f func() error, opts ...Option) time.Duration {
	t.Helper()
	p := poll{first: 5 * time.Millisecond, max: 100 * time.Millisecond}
	for _, o := range opts {
		o(&p)
	}
	start := time.Now()
	deadline := start.Add(timeout)
	wait := p.first
	for {
		err := f()
		if err == nil {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(wait) // pacing the poll
		wait = min(2*wait, p.max)
	}
}

// Holds is Eventually's f for a condition: it fails with "not yet: what"
// until cond holds.
func Holds(what string, cond func() bool) func() error {
	return func() error {
		if !cond() {
			return errors.New("not yet: " + what)
		}
		return nil
	}
}
