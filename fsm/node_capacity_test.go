package fsm

import (
	"reflect"
	"testing"
)

// The capacity per class counts every node once: used when reserved by a
// server or holding an instance or an allocation in Ironic, free when it
// can take an instance, unavailable otherwise (maintenance, missing, not
// available), as a count over a copy of every node did.
func TestNodeCapacity(t *testing.T) {
	a := bareMetalFixture(t) // ten available gold nodes
	s := a.boot(sid(1), "bm")
	a.ok(&ReserveNode{Meta: at(11), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode})
	nodes := a.s.Nodes()
	var free []Node
	for _, n := range nodes {
		if n.UUID != s.ClaimedNode {
			free = append(free, n)
		}
	}
	free[0].InstanceUUID = "0b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"
	free[1].AllocationUUID = "1b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"
	free[2].Maintenance = true
	free[3].ProvisionState = "manageable"
	silver := Node{UUID: "00000000-0000-4000-8000-000000000099", ResourceClass: "baremetal-silver", ProvisionState: "available", PowerState: "power on"}
	a.ok(&SyncNodes{Meta: at(12), Upserts: []Node{free[0], free[1], free[2], free[3], silver}, Missing: []string{free[4].UUID}})

	want := []NodeClass{{IronicClass: "baremetal-gold", Total: 10, Used: 3, Free: 4, Unavailable: 3},
		{IronicClass: "baremetal-silver", Total: 1, Free: 1}}
	if got := a.s.NodeCapacity(); !reflect.DeepEqual(got, want) {
		t.Fatalf("capacity %+v, want %+v", got, want)
	}
	// The same count over a copy of every node.
	by := map[string]*NodeClass{}
	for _, n := range a.s.Nodes() {
		c := by[n.ResourceClass]
		if c == nil {
			c = &NodeClass{IronicClass: n.ResourceClass}
			by[n.ResourceClass] = c
		}
		c.Total++
		switch {
		case a.s.ReservedBy(n.UUID) != "" || n.InstanceUUID != "" || n.AllocationUUID != "":
			c.Used++
		case n.Available():
			c.Free++
		default:
			c.Unavailable++
		}
	}
	if !reflect.DeepEqual(*by["baremetal-gold"], want[0]) || !reflect.DeepEqual(*by["baremetal-silver"], want[1]) {
		t.Fatalf("the count over copies disagrees: %+v %+v", *by["baremetal-gold"], *by["baremetal-silver"])
	}
}
