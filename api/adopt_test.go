package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

func TestAdoptServer(t *testing.T) {
	e := newEnv(t)
	const node, inst = "6fae68da-108b-4a9d-87c4-000000000001", "a1b2c3d4-0000-4000-8000-000000000001"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.peer.Node.Propose(ctx, &fsm.SyncNodes{Upserts: []fsm.Node{{UUID: node, ResourceClass: "baremetal",
		ProvisionState: "active", InstanceUUID: inst, AllocationUUID: inst}}}); err != nil {
		t.Fatal(err)
	}
	body := `{"id": "` + inst + `", "name": "db-1", "image_ref": "http://images/db.qcow2", "node_uuid": "` + node + `",
		"allocation_uuid": "` + inst + `", "project_id": "p1", "user_id": "u1",
		"flavor": {"id": "bm.small", "name": "baremetal.small", "vcpus": 16, "ram": 65536, "disk": 100,
			"extra_specs": {"resources:CUSTOM_BAREMETAL": "1", "resources:VCPU": "0"}}}`

	if r := do(t, e.ts, http.MethodPost, wire.AdoptServerPath, readerToken, body, nil); r.code != http.StatusForbidden {
		t.Fatalf("reader: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, wire.AdoptServerPath, adminToken, `{"id": "`+inst+`", "name": "x", "image_ref": "i"}`, nil); r.code != http.StatusBadRequest {
		t.Fatalf("without node_uuid: %s", r)
	}
	unknown := `{"id": "` + inst + `", "name": "db-1", "image_ref": "i", "node_uuid": "6fae68da-108b-4a9d-87c4-000000000999",
		"flavor": {"id": "f", "name": "f", "vcpus": 1, "ram": 1, "disk": 1}}`
	before := e.digest()
	if r := do(t, e.ts, http.MethodPost, wire.AdoptServerPath, adminToken, unknown, nil); r.code != http.StatusNotFound {
		t.Fatalf("node not mirrored: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a refused adoption changed the state")
	}

	r := do(t, e.ts, http.MethodPost, wire.AdoptServerPath, adminToken, body, nil)
	if r.code != http.StatusCreated {
		t.Fatalf("adopt: %s", r)
	}
	v := r.json(t)
	if get(t, v, "adopted") != true || get(t, v, "server", "host") != e.peer.Name || get(t, v, "server", "node_uuid") != node ||
		get(t, v, "server", "status") != "ACTIVE" {
		t.Fatalf("adopt answered %s", r)
	}
	s, err := e.peer.Node.Store().Server(inst)
	if err != nil || s.Flavor.ExtraSpecs["resources:CUSTOM_BAREMETAL"] != "1" || s.ImageRef != "http://images/db.qcow2" {
		t.Fatalf("server %+v, %v", s, err)
	}
	after := e.digest()
	r = do(t, e.ts, http.MethodPost, wire.AdoptServerPath, adminToken, body, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "adopted") != false {
		t.Fatalf("adopt again: %s", r)
	}
	if e.digest() != after {
		t.Fatal("adopting again changed the state")
	}
}
