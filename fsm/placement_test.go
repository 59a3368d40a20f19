package fsm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm/placement"
)

func sid(i int) string { return fmt.Sprintf("10000000-0000-4000-9000-%012d", i) }

func (a *applier) boot(id, flavor string) Server {
	a.tb.Helper()
	c := &CreateServer{Meta: at(10), ID: id, Name: "s-" + id[len(id)-4:], FlavorID: flavor, ImageRef: "img"}
	a.s.Prepare(c)
	return a.ok(c).(Server)
}

func mixedFixture(t *testing.T, legacy bool) *applier {
	a := bareMetalFixture(t)
	a.ok(&SyncNodes{Meta: at(1), LegacyInventory: &legacy})
	a.ok(&RegisterHost{Meta: at(1), Name: "hv2", Kind: KindHypervisor})
	for _, h := range []string{"hv", "hv2"} {
		a.ok(&ReportInventory{Meta: at(1), Host: h, Inventory: map[string]placement.Inventory{
			"VCPU":      {Total: 8, MinUnit: 1, MaxUnit: 8, StepSize: 1, AllocationRatio: 4},
			"MEMORY_MB": {Total: 65536, MinUnit: 1, MaxUnit: 65536, StepSize: 1, AllocationRatio: 1.5},
			"DISK_GB":   {Total: 100, MinUnit: 1, MaxUnit: 100, StepSize: 1, AllocationRatio: 1},
		}})
	}
	a.ok(&CreateFlavor{Meta: at(1), Flavor: Flavor{ID: "vm-tiny", Name: "vm-tiny", VCPUs: 1, RAM: 1024, Disk: 1, RxTxFactor: 1}})
	return a
}

func TestVMsAndBareMetalNeverCross(t *testing.T) {
	a := mixedFixture(t, false)
	for i := 0; i < 12; i++ {
		vm := a.boot(sid(i), "vm-tiny")
		if vm.Host != "hv" && vm.Host != "hv2" || vm.ClaimedNode != "" {
			t.Fatalf("VM scheduled to %s (node %q)", vm.Host, vm.ClaimedNode)
		}
		if i < 10 {
			bm := a.boot(sid(100+i), "bm")
			if bm.Host != "h1" && bm.Host != "h2" || bm.ClaimedNode == "" {
				t.Fatalf("bare metal scheduled to %s without a node", bm.Host)
			}
		}
	}
	// Ten nodes: the eleventh bare-metal server finds no valid host.
	s := a.boot(sid(200), "bm")
	if s.Status != StatusError || !strings.Contains(s.Fault.Message, "No valid host") {
		t.Fatalf("11th bare-metal server: %+v", s)
	}
	// VCPU capacity 8*4 per hypervisor: 64 tiny VMs fit, the 65th does not.
	for i := 12; i < 64; i++ {
		if vm := a.boot(sid(300+i), "vm-tiny"); vm.Status == StatusError {
			t.Fatalf("VM %d did not fit: %s", i, vm.Fault.Message)
		}
	}
	if vm := a.boot(sid(999), "vm-tiny"); vm.Status != StatusError {
		t.Fatalf("VM beyond capacity scheduled to %s", vm.Host)
	}
}

// The seed's hazard: with standard inventory reported by nodes, a flavor
// without the zeroing consumes it, and once that instance is gone a VM can
// land on the bare-metal node.
func TestLegacyInventoryHazardAndMigration(t *testing.T) {
	a := bareMetalFixture(t)
	on := true
	a.ok(&SyncNodes{Meta: at(1), LegacyInventory: &on})
	old := testFlavor("old", "bm-old")
	old.VCPUs, old.RAM, old.Disk = 64, 131072, 371
	old.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1"}
	a.ok(&CreateFlavor{Meta: at(1), Flavor: old})
	a.ok(&CreateFlavor{Meta: at(1), Flavor: Flavor{ID: "vm-tiny", Name: "vm-tiny", VCPUs: 1, RAM: 1024, Disk: 1, RxTxFactor: 1}})

	legacySrv := a.boot(sid(1), "old")
	if legacySrv.Claim[legacySrv.ClaimedNode]["VCPU"] != 64 {
		t.Fatalf("a flavor without the zeroing did not consume standard inventory: %v", legacySrv.Claim)
	}
	vm := a.boot(sid(2), "vm-tiny")
	if vm.Status == StatusError || vm.ClaimedNode == "" {
		t.Fatalf("hazard not reproduced: with standard inventory on nodes a VM should land on a node, got %+v", vm)
	}

	// Turning the option off while standard allocations exist: the node
	// holding them reports a conflict instead of failing the sync.
	off := false
	a.ok(&SyncNodes{Meta: at(2), LegacyInventory: &off})
	conflicts := 0
	for _, n := range a.s.Nodes() {
		if n.InventoryConflict != "" {
			conflicts++
			if n.UUID != legacySrv.ClaimedNode && n.UUID != vm.ClaimedNode {
				t.Fatalf("conflict on node %s that holds nothing", n.UUID)
			}
		}
	}
	if conflicts == 0 {
		t.Fatal("removing in-use standard inventory did not conflict")
	}
	// Migrate the bare-metal server; delete the VM that should never have
	// been there; then the standard inventory goes.
	a.ok(&MigrateFlavors{Meta: at(3), ResourceClass: "CUSTOM_BAREMETAL_GOLD", ServerIDs: []string{legacySrv.ID}})
	a.ok(&MigrateFlavors{Meta: at(3), ResourceClass: "CUSTOM_BAREMETAL_GOLD", ServerIDs: []string{legacySrv.ID}}) // idempotent
	got, _ := a.s.Server(legacySrv.ID)
	if !got.Migrated("CUSTOM_BAREMETAL_GOLD") || len(got.Claim[got.ClaimedNode]) != 1 {
		t.Fatalf("after migration: flavor %v claim %v", got.Flavor.ExtraSpecs, got.Claim)
	}
	a.ok(&SetServerTask{Meta: at(4), ID: vm.ID, Host: vm.Host, Epoch: vm.Epoch, Status: StatusError})
	a.ok(&SyncNodes{Meta: at(5)})
	for _, n := range a.s.Nodes() {
		if n.InventoryConflict != "" {
			t.Fatalf("node %s still conflicts: %s", n.UUID, n.InventoryConflict)
		}
	}
	if vm2 := a.boot(sid(3), "vm-tiny"); vm2.Status != StatusError {
		t.Fatalf("a VM landed on %s after the migration", vm2.ClaimedNode)
	}
}

func TestClaimReleasedOnDelete(t *testing.T) {
	a := bareMetalFixture(t)
	s := a.boot(sid(1), "bm")
	if _, ok := a.s.st.placement.Allocations(s.ID); !ok {
		t.Fatal("no placement allocation after scheduling")
	}
	a.ok(&DeleteServer{Meta: at(2), ID: s.ID})
	a.ok(&SetServerTask{Meta: at(3), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: StatusDeleted})
	if _, ok := a.s.st.placement.Allocations(s.ID); ok {
		t.Fatal("allocation left after delete")
	}
	// Placement state survives a snapshot.
	b := New()
	if err := b.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if b.Digest() != a.s.Digest() {
		t.Fatal("digest differs after restore")
	}
}
