// Package pace paces the suite's polling loops: a loop that waits for a
// state asks for it again after Sleep, and gives up when its context
// ends.
package pace

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
