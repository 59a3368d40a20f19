package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/corral-dev/corral/cluster/forward"
)

// A request the leader never received (it was killed, an election is
// under way) applied nothing: the client is told to retry (503), not that
// the server failed (500).
func TestNotDeliveredIsServiceUnavailable(t *testing.T) {
	err := fmt.Errorf("default read: %w: dial tcp 127.0.0.3:7480: connect: connection refused", forward.ErrNotDelivered)
	if code, kind := classify(err); code != http.StatusServiceUnavailable || kind != kindNoLeader {
		t.Fatalf("classify(not delivered) = %d %s, want 503 %s", code, kind, kindNoLeader)
	}
}
