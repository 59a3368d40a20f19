package core

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/wire"
)

// A request the leader never received (it was killed, an election is
// under way) applied nothing: the client is told to retry (503), not that
// the server failed (500).
func TestNotDeliveredIsServiceUnavailable(t *testing.T) {
	err := fmt.Errorf("default read: %w: dial tcp 127.0.0.3:7480: connect: connection refused", forward.ErrNotDelivered)
	if code, kind := Classify(err); code != http.StatusServiceUnavailable || kind != wire.KindNoLeader {
		t.Fatalf("Classify(not delivered) = %d %s, want 503 %s", code, kind, wire.KindNoLeader)
	}
}
