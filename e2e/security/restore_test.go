package security

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
)

// readAtOnce bounds a read of a peer that holds the state it is asked
// for: far below the 5 s a read waits for an index that is never applied.
const readAtOnce = 2 * time.Second

// TestRestoreAnswersReadsAtOnce: right after `corral snapshot restore`
// into a running cluster, and with no write after it, default and
// linearizable reads on every agent answer at once with the restored
// state.
func TestRestoreAnswersReadsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := e2e.Binary(t)
	c := e2e.Start(t, 3, e2e.Options{})
	c.AwaitReady(45 * time.Second)
	leader := c.Leader(15 * time.Second)
	var kept []string
	for i := range 5 {
		name := fmt.Sprintf("kept%d", i)
		if err := createFlavor(leader, name); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, name)
	}
	file := t.TempDir() + "/corral.snap"
	if _, err := corral(t, bin, leader, c.Token, "snapshot", "save", file); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := createFlavor(leader, fmt.Sprintf("lost%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := corral(t, bin, c.Agents[1], c.Token, "snapshot", "restore", file); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, a := range c.Agents {
		for _, level := range []string{"default", "linearizable"} {
			start := time.Now()
			names, err := flavorNamesAt(a, level)
			if err != nil {
				t.Fatalf("%s read on %s after the restore, %s: %v", level, a.Name, time.Since(start).Round(time.Millisecond), err)
			}
			if !slices.Equal(sorted(names), kept) {
				t.Fatalf("%s read on %s after the restore: flavors %v, want the restored %v", level, a.Name, sorted(names), kept)
			}
		}
	}
}

// flavorNamesAt lists the names of the flavors agent a holds, read at the
// given consistency, within readAtOnce.
func flavorNamesAt(a *e2e.Agent, level string) ([]string, error) {
	var out struct {
		Flavors []flavor `json:"flavors"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), readAtOnce)
	defer cancel()
	if err := a.Client().Do(ctx, http.MethodGet, "/compute/v2.1/flavors?consistency="+level, nil, &out); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(out.Flavors))
	for _, f := range out.Flavors {
		names = append(names, f.Name)
	}
	return names, nil
}
