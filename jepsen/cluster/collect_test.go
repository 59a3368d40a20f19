package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// The final state holds every server, live and deleted, from an API whose
// deleted=true lists the deleted ones only (Nova's filter, corral's since
// it follows it): a server deleted between the two reads is kept deleted.
func TestEveryServerListsLiveAndDeleted(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != client.ServersDetailPath || r.URL.Query().Get("consistency") != history.Linearizable {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		servers := []client.Server{{ID: "a", Status: "ACTIVE"}, {ID: "c", Status: "ACTIVE"}}
		if r.URL.Query().Get("deleted") == "true" {
			servers = []client.Server{{ID: "b", Status: "DELETED"}, {ID: "c", Status: "DELETED"}}
		}
		_ = json.NewEncoder(w).Encode(client.ServersResponse{Servers: servers})
	}))
	defer ts.Close()
	pr := &Probe{API: client.NewCorral("token", nil)}
	got, err := pr.everyServer(context.Background(), ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID+" "+s.Status)
	}
	if want := []string{"a ACTIVE", "b DELETED", "c DELETED"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("got %q, want %q", ids, want)
	}
}
