package workload

import (
	"context"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
)

// Aim strikes at an action accepted after it was asked, once the strike
// delay has passed; an action accepted before is stale.
func TestActionsAimWaitsForAFreshAction(t *testing.T) {
	a := &Actions{Seed: 1, StrikeMin: 30 * time.Millisecond, StrikeMax: 40 * time.Millisecond}
	a.accepted = make(chan aimed, 4)
	a.rng = rand.New(rand.NewSource(1))
	a.accepted <- aimed{Server: "old", Host: "n1", At: time.Now()}
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.accepted <- aimed{Server: "s2", Host: "n3", Kind: history.ActRebuild, RequestID: "req-x", At: time.Now()}
	}()
	start := time.Now()
	host, why := a.Aim(context.Background(), 5*time.Second)
	if host != "n3" || !strings.Contains(why, "s2") || !strings.Contains(why, "req-x") {
		t.Fatalf("aimed at %q (%s)", host, why)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("struck %s after asking: before the strike delay", d)
	}
	if host, _ := a.Aim(context.Background(), 30*time.Millisecond); host != "" {
		t.Fatalf("aimed at %q with no action accepted", host)
	}
}
