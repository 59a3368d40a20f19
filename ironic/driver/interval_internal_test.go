package driver

import (
	"testing"
	"time"
)

// The watcher's rounds: a tenth of the deploy time, then at the moment
// the next wait is due to end, then a fortieth while one is past due.
func TestWatcherIntervalFollowsDueTimes(t *testing.T) {
	d := &Driver{cfg: Config{MinPoll: 250 * time.Millisecond, MaxPoll: 30 * time.Second, DeployTimeout: time.Hour}}
	w := newWatcher(d)
	d.w = w
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, busy := w.interval(now); busy {
		t.Fatal("busy with nothing to wait for")
	}
	add := func(id string, since time.Time) {
		w.entries[id] = &entry{node: id, since: since, deadline: since.Add(time.Hour)}
	}
	// Before any deploy ended here: a tenth of the oldest wait.
	add("a", now.Add(-20*time.Second))
	if iv, _ := w.interval(now); iv != 2*time.Second {
		t.Fatalf("no average yet: %s, want 2s", iv)
	}
	// Deploys take 30 s: the next round comes when "a" is due (10 s).
	w.expected = 30 * time.Second
	if iv, _ := w.interval(now); iv != 3*time.Second {
		t.Fatalf("a due in 10s: %s, want 3s (a tenth)", iv)
	}
	delete(w.entries, "a")
	add("b", now.Add(-29*time.Second))
	if iv, _ := w.interval(now); iv != time.Second {
		t.Fatalf("b due in 1s: %s, want 1s", iv)
	}
	add("c", now.Add(-31*time.Second))
	if iv, _ := w.interval(now); iv != 750*time.Millisecond {
		t.Fatalf("c past due: %s, want 750ms (a fortieth)", iv)
	}
	// Never below MinPoll, never past a deadline.
	w.expected = 2 * time.Second
	if iv, _ := w.interval(now); iv != 250*time.Millisecond {
		t.Fatalf("short deploys: %s, want MinPoll", iv)
	}
	w.entries["c"].deadline = now.Add(100 * time.Millisecond)
	if iv, _ := w.interval(now); iv != 100*time.Millisecond {
		t.Fatalf("deadline in 100ms: %s", iv)
	}
}
