package fsm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm/placement"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) Meta { return Meta{At: t0.Add(time.Duration(sec) * time.Second)} }

func mustEncode(tb testing.TB, c Command) []byte {
	tb.Helper()
	data, err := Encode(c)
	if err != nil {
		tb.Fatalf("Encode(%T): %v", c, err)
	}
	return data
}

// applier applies commands to a store at consecutive indexes.
type applier struct {
	tb    testing.TB
	s     *Store
	index uint64
}

func newApplier(tb testing.TB) *applier { return &applier{tb: tb, s: New()} }

func (a *applier) apply(c Command) Result {
	a.tb.Helper()
	a.index++
	return a.s.Apply(a.index, mustEncode(a.tb, c))
}

func (a *applier) ok(c Command) any {
	a.tb.Helper()
	r := a.apply(c)
	if r.Err != nil {
		a.tb.Fatalf("apply %s: %v", c.Type(), r.Err)
	}
	return r.Value
}

func testFlavor(id, name string) Flavor {
	return Flavor{ID: id, Name: name, VCPUs: 2, RAM: 4096, Disk: 40, IsPublic: true}
}

// sampleCommands returns one populated command of every known type.
func sampleCommands() []Command {
	m := Meta{At: t0, RequestID: "req-1"}
	return []Command{
		&RegisterHost{Meta: m, Name: "node-1", RaftAddr: "10.0.0.1:7000", APIAddr: "10.0.0.1:8774", GossipAddr: "10.0.0.1:7946", Kind: KindHypervisor},
		&SetHostStatus{Meta: m, Name: "node-1", Status: HostDown},
		&CreateFlavor{Meta: m, Flavor: Flavor{
			ID: "f1", Name: "baremetal.gold", VCPUs: 32, RAM: 131072, Disk: 480, Ephemeral: 10, Swap: 512,
			RxTxFactor: 1.5, IsPublic: true, Description: "gold nodes",
			ExtraSpecs: map[string]string{"resources:CUSTOM_GOLD": "1", "capabilities:boot_mode": "uefi"},
		}},
		&DeleteFlavor{Meta: m, ID: "f1"},
		&SetFlavorExtraSpecs{Meta: m, ID: "f1", Specs: map[string]string{"trait:HW_GPU": "required"}},
		&DeleteFlavorExtraSpec{Meta: m, ID: "f1", Key: "trait:HW_GPU"},
		&Noop{Meta: m},
		&CreateServer{Meta: m, ID: "s1", Name: "web-1", FlavorID: "f1", ImageRef: "img-1",
			Networks: []Network{{UUID: "net-1"}}, Metadata: map[string]string{"role": "db"}, Host: "node-1",
			KeyName: "laptop", UserData: "I2Nsb3VkLWNvbmZpZw=="},
		&CreateServer{Meta: m, ID: "s2", Name: "web-2", FlavorID: "f1", ImageRef: "img-1", Host: "node-1",
			SecurityGroups: []SecurityGroupRef{{ID: "sg-1", Name: "web"}, {ID: "sg-2"}}},
		&SetServerTask{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, Status: StatusError, TaskState: TaskSpawning,
			Fault: &Fault{Code: 500, Message: "no node", Created: t0}},
		&ReserveNode{Meta: m, ServerID: "s1", Host: "node-1", Epoch: 1, NodeUUID: "n1", AllocationUUID: "s1"},
		&ReleaseNode{Meta: m, ServerID: "s1", Host: "node-1", Epoch: 1, NodeUUID: "n1"},
		&DeleteServer{Meta: m, ID: "s1"},
		&SyncNodes{Meta: m, Upserts: []Node{{UUID: "n1", Name: "gold-1", ResourceClass: "baremetal-gold",
			ProvisionState: "available", PowerState: "power off", Properties: map[string]string{"cpus": "32"},
			Capabilities: map[string]string{"boot_mode": "uefi"}, Traits: []string{"CUSTOM_GPU"}, LastSeen: t0}},
			Missing: []string{"n9"}},
		&SetHostDrain{Meta: m, Name: "node-1", Drained: true, Reason: "firmware"},
		&ReportInventory{Meta: m, Host: "hv-1", Inventory: map[string]placement.Inventory{
			"VCPU": {Total: 16, MinUnit: 1, MaxUnit: 16, StepSize: 1, AllocationRatio: 4}}, Traits: []string{"HW_CPU_X86_AVX2"}},
		&MigrateFlavors{Meta: m, ResourceClass: "CUSTOM_GOLD", ServerIDs: []string{"s1"}},
		&AdoptServer{Meta: m, ID: "10000000-0000-4000-9000-000000000001", Name: "db-1", Flavor: Flavor{ID: "f1", Name: "baremetal"},
			ImageRef: "img-1", NodeUUID: "n1", AllocationUUID: "10000000-0000-4000-9000-000000000001", Host: "node-1"},
		&ReassignServers{Meta: m, From: "node-1", Reason: ReasonHostDown,
			Moves: []Move{{ServerID: "s1", FromHost: "node-1", FromEpoch: 1, ToHost: "node-2"}}},
		&PurgeServers{Meta: m, Before: t0, IDs: []string{"s1", "s2"}},
		&UpdateFlavor{Meta: m, ID: "f1", Description: "gold nodes, 2 GPUs"},
		&SetFlavorAccess{Meta: m, ID: "f1", Project: "p1", Add: true},
		&CreateKeyPair{Meta: m, KeyPair: KeyPair{UserID: "u1", Name: "laptop", Type: KeyTypeSSH,
			PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 u1@laptop", Fingerprint: "aa:bb"}},
		&DeleteKeyPair{Meta: m, UserID: "u1", Name: "laptop"},
		&RequestServerAction{Meta: m, ID: "s1", Kind: ActionRebuild, ImageRef: "img-2", Admin: true},
		&FinishServerAction{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, Kind: ActionRebuild,
			Fault: &Fault{Code: 500, Message: "deploy failed", Created: t0}},
		&FinishServerAction{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, Kind: ActionStop, RequestedAt: t0},
		&UpdateServer{Meta: m, ID: "s1", Name: ptr("web-2"), Locked: ptr(true), LockedReason: "audit"},
		&StartServerAction{Meta: m, ID: "s1", Host: "node-1", Epoch: 2, Kind: ActionRebuild, RequestedAt: t0,
			Step: "rebuild", Witness: "2026-11-29T14:36:26.402131+00:00"},
		&RequestServerActionWithID{RequestServerAction{Meta: Meta{At: t0, RequestID: "req-1"}, ID: "s1", Kind: ActionRebootHard}},
		&CreateServers{Meta: m, Servers: []CreateServer{
			{Meta: Meta{RequestID: "req-2"}, ID: "s2", Name: "web-2", FlavorID: "f1", ImageRef: "img-1", Host: "node-1",
				Claim: map[string]map[string]int64{"n2": {"CUSTOM_GOLD": 1}}},
			{ID: "s3", Name: "web-3", FlavorID: "f1", ImageRef: "img-1", NoValidHost: "No valid host was found."}}},
		&ReserveNodeAndTask{ReserveNode: ReserveNode{Meta: m, ServerID: "s1", Host: "node-1", Epoch: 1, NodeUUID: "n1",
			AllocationUUID: "a1"}, TaskState: TaskSpawning},
		&SetQuotaDefaults{Meta: m, Limits: QuotaLimits{QuotaInstances: 10, QuotaCores: -1}},
		&UpdateQuotas{Meta: m, ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaRAM: 2048}, Force: true},
		&DeleteQuotas{Meta: m, ProjectID: "p1", UserID: "u1"},
		&SetPortIntent{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, Step: PortStepCreate, NetworkID: "net-1"},
		&RecordServerPort{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, Port: ServerPort{ID: "p1", NetworkID: "net-1",
			NetworkName: "provider", MAC: "fa:16:3e:00:00:01", FixedIPs: []PortIP{{Address: "192.0.2.5", Version: 4}}, User: true,
			SecurityGroups: []SecurityGroupRef{{ID: "sg-1", Name: "web"}}, GroupsKnown: true}},
		&ForgetServerPort{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, PortID: "p1"},
		&RequestInterfaceAction{Meta: m, ID: "s1", Kind: ActionAttachInterface, NetworkID: "n1", FixedIP: "192.0.2.9", Admin: true},
		&FinishInterfaceAction{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, Kind: ActionAttachInterface, RequestedAt: m.At, PortID: "p2",
			Fault: "Failed"},
		&StopAfterRebuild{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, RequestedAt: t0},
		&RecordExternalEvents{Meta: m, Events: []ExternalEvent{{Server: "s1", Name: ExternalVIFPlugged, Status: ExternalCompleted, Tag: "p1"},
			{Server: "s2", Name: ExternalNetworkChanged, Status: ExternalFailed}}},
		&RequestSecurityGroupAction{Meta: m, ID: "s1", Kind: ActionAddSecurityGroup, Group: SecurityGroupRef{ID: "sg-1", Name: "web"}},
		&FinishSecurityGroupAction{Meta: m, ID: "s1", Host: "node-1", Epoch: 1, Kind: ActionAddSecurityGroup, RequestedAt: m.At,
			Ports: []PortSecurityGroups{{PortID: "p1", Groups: []SecurityGroupRef{{ID: "sg-1", Name: "web"}}}}, Code: 409, Fault: "Conflict"},
		&EnableFeature{Meta: m, Name: FeatureServerGroups},
		&CreateServerGroup{Meta: m, Group: ServerGroup{ID: "g1", Name: "web", Policy: "anti-affinity", ProjectID: "p1",
			UserID: "u1", MaxServerPerHost: 2}},
		&DeleteServerGroup{Meta: m, ID: "g1"},
		&ResetServerState{Meta: m, ID: "s1", Status: StatusError},
		&CreateServerSets{Meta: m, Sets: []ServerSet{{ReservationID: "r-0a1b2c3d", MinCount: 1,
			Server: CreateServer{Meta: Meta{RequestID: "req-3"}, Name: "web", FlavorID: "f1", ImageRef: "img-1",
				Metadata: map[string]string{"role": "web"}, KeyName: "laptop", ProjectID: "p1", UserID: "u1"},
			Fields: ServerFields{Description: ptr("front"), AccessIPv4: "192.0.2.7", AccessIPv6: "2001:db8::7", Tags: []string{"a", "b"}},
			Members: []SetMember{{ID: "s4", Host: "node-1", Claim: map[string]map[string]int64{"n4": {"CUSTOM_GOLD": 1}}},
				{ID: "s5", NoValidHost: "No valid host was found."}}}}},
		&UpdateServerFields{Meta: m, ID: "s1", Name: ptr("web-3"), Description: &StringChange{Null: true},
			AccessIPv4: ptr("192.0.2.8"), AccessIPv6: ptr("")},
		&RebuildServer{Meta: m, ID: "s1", ImageRef: "img-3", Admin: true, Name: ptr("web-4"), SetMetadata: true,
			Metadata: map[string]string{"k": "v"}, Description: &StringChange{Value: "rebuilt"}, AccessIPv4: ptr("192.0.2.9"),
			KeyName: &StringChange{Value: "laptop"}, UserID: "u1", UserData: &StringChange{Null: true}, PreserveEphemeral: true},
		&SetServerMetadata{Meta: m, ID: "s1", Op: MetadataMerge, Metadata: map[string]string{"k": "v2"}, Admin: true},
		&SetServerTags{Meta: m, ID: "s1", Op: TagAdd, Tag: "blue"},
	}
}

// genLog returns n encoded entries mixing every command type, valid and
// invalid, plus ignorable unknown entries, generated from seed.
func genLog(tb testing.TB, seed uint64, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	hostName := func() string { return fmt.Sprintf("host-%d", r.IntN(8)) }
	flavorID := func() string { return fmt.Sprintf("f%d", r.IntN(40)) }
	specKey := func() string {
		return pick("hw:cpu_policy", "resources:CUSTOM_GOLD", "trait:HW_GPU", "capabilities:boot_mode", "bad/key", "")
	}
	out := make([][]byte, 0, n)
	for i := range n {
		m := at(i)
		m.RequestID = fmt.Sprintf("req-%d", i)
		var c Command
		switch r.IntN(13) {
		case 0:
			c = &RegisterHost{Meta: m, Name: pick(hostName(), hostName(), "-bad", ""),
				RaftAddr: fmt.Sprintf("10.0.0.%d:7000", r.IntN(3)), Kind: pick("", KindIronic, KindHypervisor, "vm")}
		case 1:
			c = &SetHostStatus{Meta: m, Name: hostName(), Status: HostStatus(pick("up", "down", "left", "gone"))}
		case 2, 3, 4:
			f := testFlavor(flavorID(), fmt.Sprintf("flavor-%d", r.IntN(40)))
			f.VCPUs = r.IntN(9) - 1 // sometimes invalid
			f.RxTxFactor = float64(r.IntN(3))
			if r.IntN(3) == 0 {
				f.ExtraSpecs = map[string]string{specKey(): pick("1", "required", "uefi")}
			}
			c = &CreateFlavor{Meta: m, Flavor: f}
		case 5:
			c = &DeleteFlavor{Meta: m, ID: flavorID()}
		case 6, 7:
			specs := map[string]string{}
			for range r.IntN(3) + 1 {
				specs[specKey()] = pick("1", "dedicated", "required")
			}
			c = &SetFlavorExtraSpecs{Meta: m, ID: flavorID(), Specs: specs}
		case 8:
			c = &DeleteFlavorExtraSpec{Meta: m, ID: flavorID(), Key: specKey()}
		case 9, 10, 11, 12:
			c = genServerCommand(r, m, hostName, flavorID)
		default:
			if r.IntN(2) == 0 {
				out = append(out, []byte{byte(IgnoreUnknownFlag | 0x7e), '{', '}'})
				continue
			}
			c = &Noop{Meta: m}
		}
		out = append(out, mustEncode(tb, c))
	}
	return out
}

// genServerCommand returns a random server, reservation or node command,
// valid or not.
func genServerCommand(r *rand.Rand, m Meta, hostName, flavorID func() string) Command {
	srv := fmt.Sprintf("s%d", r.IntN(30))
	node := fmt.Sprintf("n%d", r.IntN(12))
	epoch := uint64(r.IntN(3))
	switch r.IntN(9) {
	case 6:
		return &SetHostDrain{Meta: m, Name: hostName(), Drained: r.IntN(2) == 0}
	case 7:
		return &ReassignServers{Meta: m, Reason: ReasonHostDown, Moves: []Move{{ServerID: srv, FromHost: hostName(), FromEpoch: epoch, ToHost: hostName()}}}
	case 0:
		c := &CreateServer{Meta: m, ID: srv, Name: "vm-" + srv, FlavorID: flavorID(), ImageRef: "img", Host: hostName()}
		if r.IntN(2) == 0 {
			// A leader's decision: a claim of one node (sometimes two, or a
			// host provider), so Apply's claim paths, valid or rejected,
			// are covered too.
			c.ID = fmt.Sprintf("10000000-0000-4000-9000-%012d", r.IntN(30))
			c.Claim = map[string]map[string]int64{}
			for range r.IntN(2) + 1 {
				c.Claim[fmt.Sprintf("00000000-0000-4000-8000-%012d", r.IntN(6))] = map[string]int64{"CUSTOM_BAREMETAL_GOLD": 1}
			}
			if r.IntN(4) == 0 {
				c.Claim[HostProviderUUID(c.Host)] = map[string]int64{"VCPU": 1}
			}
		}
		if r.IntN(3) == 0 {
			// Decided in a batch with another, which may take the same id
			// or node.
			c2 := *c
			c2.Meta = Meta{RequestID: m.RequestID + "-2"}
			c2.ID = fmt.Sprintf("10000000-0000-4000-9000-%012d", r.IntN(30))
			return &CreateServers{Meta: m, Servers: []CreateServer{*c, c2}}
		}
		return c
	case 1:
		if r.IntN(2) == 0 {
			return &ReserveNodeAndTask{ReserveNode: ReserveNode{Meta: m, ServerID: srv, Host: hostName(), Epoch: epoch, NodeUUID: node},
				TaskState: []string{TaskSpawning, "", TaskDeleting}[r.IntN(3)]}
		}
		return &ReserveNode{Meta: m, ServerID: srv, Host: hostName(), Epoch: epoch, NodeUUID: node}
	case 2:
		return &ReleaseNode{Meta: m, ServerID: srv, Host: hostName(), Epoch: epoch, NodeUUID: node}
	case 3:
		st := []ServerStatus{"", StatusActive, StatusError, StatusDeleted}[r.IntN(4)]
		return &SetServerTask{Meta: m, ID: srv, Host: hostName(), Epoch: epoch, Status: st}
	case 4:
		return &DeleteServer{Meta: m, ID: srv}
	case 8:
		return &SyncNodes{Meta: m, Upserts: []Node{{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", r.IntN(6)),
			ResourceClass: "baremetal-gold", ProvisionState: "available", PowerState: "power off"}}}
	default:
		return &SyncNodes{Meta: m, Upserts: []Node{{UUID: node, ProvisionState: "available", PowerState: "power off"}},
			Missing: []string{fmt.Sprintf("n%d", r.IntN(12))}}
	}
}
