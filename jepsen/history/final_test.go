package history

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/corral-dev/corral/jepsen/client"
)

// finalJSON is a final.json as the suite has always written it (the
// owners, hosts and reservations hold the fields the checkers read, not
// all of corral's views): -recheck reads old folders, so it must read
// and write back the same.
const finalJSON = `{
  "servers": [
    {
      "id": "a",
      "name": "jepsen-c0-1",
      "status": "ACTIVE",
      "host": "n1",
      "node": "node-1"
    },
    {
      "id": "b",
      "name": "jepsen-c1-1",
      "status": "DELETED"
    }
  ],
  "views": {
    "n1": [
      {
        "id": "a",
        "name": "jepsen-c0-1",
        "status": "ACTIVE",
        "host": "n1",
        "node": "node-1"
      }
    ]
  },
  "owners": {
    "a": {
      "server_id": "a",
      "host": "n1",
      "epoch": 2,
      "host_up": true,
      "status": "ACTIVE",
      "node_uuid": "node-1"
    }
  },
  "hosts": [
    {
      "name": "n1",
      "status": "up",
      "servers": 1
    }
  ],
  "reservations": [
    {
      "node_uuid": "node-1",
      "server_id": "a",
      "host": "n1",
      "allocation_uuid": "a"
    }
  ],
  "ironic_nodes": [],
  "ironic_allocations": [],
  "running": {
    "n1": true
  },
  "quiesced": true
}`

func TestFinalFileFormat(t *testing.T) {
	var fs FinalState
	if err := json.Unmarshal([]byte(finalJSON), &fs); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(fs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != finalJSON {
		t.Fatalf("final.json changed format:\n%s\nwant\n%s", b, finalJSON)
	}
}

// The final state keeps of corral's answers what the checkers read, and
// nothing more of what the views hold.
func TestFinalRecordsOfAnswers(t *testing.T) {
	var owner client.OwnerResponse
	var hosts client.HostsResponse
	var res client.ReservationsResponse
	for _, a := range []struct {
		body string
		into any
	}{
		{`{"owner": {"server_id": "a", "host": "n1", "epoch": 2, "index": 40, "reason": "placed", "since": "2026-12-01T10:00:00Z",
			"host_up": true, "status": "ACTIVE", "task_state": "rebuilding", "node_uuid": "node-1"}}`, &owner},
		{`{"hosts": [{"name": "n1", "raft_address": "127.0.10.2:7301", "api_address": "http://127.0.10.2:8774",
			"gossip_address": "127.0.10.2:7946", "kind": "ironic", "status": "up", "joined_at": "2026-12-01T10:00:00Z",
			"changed_at": "2026-12-01T10:00:00Z", "servers": 3}],
			"capacity": [{"resource_class": "CUSTOM_BAREMETAL_JEPSEN", "ironic_class": "baremetal-jepsen", "total": 48}]}`, &hosts},
		{`{"reservations": [{"node_uuid": "node-1", "server_id": "a", "host": "n1", "allocation_uuid": "a"}]}`, &res},
	} {
		if err := json.Unmarshal([]byte(a.body), a.into); err != nil {
			t.Fatalf("%s: %v", a.body, err)
		}
	}
	if got, want := OwnerOf(owner.Owner), (Owner{ServerID: "a", Host: "n1", Epoch: 2, HostUp: true, Status: "ACTIVE", Task: "rebuilding", Node: "node-1"}); got != want {
		t.Errorf("owner %+v, want %+v", got, want)
	}
	if got, want := HostsOf(hosts.Hosts), []Host{{Name: "n1", Status: "up", Servers: 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("hosts %+v, want %+v", got, want)
	}
	if got, want := ReservationsOf(res.Reservations), []Reservation{{NodeUUID: "node-1", ServerID: "a", Host: "n1", AllocationUUID: "a"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("reservations %+v, want %+v", got, want)
	}
	// An answer that could not be read stays null in final.json; an empty
	// one is an empty list.
	if HostsOf(nil) != nil || ReservationsOf(nil) != nil {
		t.Error("nil answers became lists")
	}
	if HostsOf([]client.HostView{}) == nil || ReservationsOf([]client.Reservation{}) == nil {
		t.Error("empty answers became null")
	}
}
