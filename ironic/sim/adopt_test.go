package sim

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/corral-dev/corral/ironic"
)

// A node enrolled with a chosen uuid, managed and adopted is active with
// its instance, and a backfilled allocation takes the instance's uuid.
func TestAdoptAndBackfill(t *testing.T) {
	s := New(Options{})
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	ctx := context.Background()
	c, err := ironic.New(ctx, ironic.Options{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	const node, inst = "6fae68da-108b-4a9d-87c4-88831ee1241b", "1b2c3d4e-0000-4000-8000-000000000001"
	if _, err := c.CreateNode(ctx, ironic.NodeSpec{UUID: node, Driver: "fake-hardware", ResourceClass: "baremetal"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetProvisionState(ctx, node, ironic.VerbManage); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitProvisionState(ctx, node, "manageable"); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateNode(ctx, node, []ironic.PatchOp{{Op: "add", Path: "/instance_uuid", Value: inst},
		{Op: "add", Path: "/instance_info/image_source", Value: "http://images/x.img"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetProvisionState(ctx, node, ironic.VerbAdopt); err != nil {
		t.Fatal(err)
	}
	n, err := c.WaitProvisionState(ctx, node, "active")
	if err != nil || n.InstanceUUID != inst {
		t.Fatalf("after adopt: %+v, %v", n, err)
	}
	a, err := c.BackfillAllocation(ctx, node, inst)
	if err != nil || a.UUID != inst || a.State != ironic.AllocationActive {
		t.Fatalf("backfill: %+v, %v", a, err)
	}
	again, err := c.BackfillAllocation(ctx, node, inst)
	if err != nil || again.UUID != inst {
		t.Fatalf("second backfill: %+v, %v", again, err)
	}
}
