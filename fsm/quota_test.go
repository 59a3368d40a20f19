package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// quotaFixture is the server fixture (flavor "gold": 2 vcpus, 4096 MiB)
// with a flavor "small" (1 vcpu, 512 MiB) and Nova's defaults recorded
// as [quota].
func quotaFixture(t *testing.T) *applier {
	a := serverFixture(t)
	a.ok(&CreateFlavor{Meta: at(0), Flavor: Flavor{ID: "small", Name: "small", VCPUs: 1, RAM: 512, Disk: 1, IsPublic: true}})
	a.ok(&SetQuotaDefaults{Meta: at(0), Limits: NovaQuotaDefaults()})
	return a
}

// create boots a server of flavor small for project p and user u on h1.
func (a *applier) create(i int, p, u string) Result {
	a.tb.Helper()
	return a.apply(&CreateServer{Meta: at(10 + i), ID: sid(i), Name: fmt.Sprintf("s%d", i), FlavorID: "small",
		ImageRef: "img", Host: "h1", ProjectID: p, UserID: u})
}

// refused applies c, expects a refusal wrapping want with message msg
// (when not empty), and checks that it changed nothing.
func (a *applier) refused(c Command, want error, msg string) {
	a.tb.Helper()
	before := a.s.Digest()
	r := a.apply(c)
	if !errors.Is(r.Err, want) {
		a.tb.Fatalf("apply %s: %v, want %v", c.Type(), r.Err, want)
	}
	if msg != "" && r.Err.Error() != msg {
		a.tb.Fatalf("apply %s: message\n %q\nwant\n %q", c.Type(), r.Err.Error(), msg)
	}
	if a.s.Digest() != before {
		a.tb.Fatalf("a refused %s changed the state", c.Type())
	}
}

func TestNoQuotaStateRefusesNothing(t *testing.T) {
	a := serverFixture(t)
	a.ok(&CreateFlavor{Meta: at(0), Flavor: Flavor{ID: "small", Name: "small", VCPUs: 1, RAM: 512, Disk: 1, IsPublic: true}})
	for i := range 30 {
		if r := a.create(i, "p1", "u1"); r.Err != nil {
			t.Fatalf("server %d: %v", i, r.Err)
		}
	}
	if got := a.s.ProjectQuotas("p1", "")[QuotaInstances]; got != QuotaUnlimited {
		t.Fatalf("instances limit %d without any quota, want -1", got)
	}
	// A store that never applied a quota command writes no quota record:
	// its snapshot stays readable by peers that know none.
	if bytes.Contains(snapshotBytes(t, a.s), []byte(`"scope"`)) {
		t.Fatal("a snapshot without quotas carries a quota record")
	}
}

func TestQuotaLayers(t *testing.T) {
	a := newApplier(t)
	a.ok(&SetQuotaDefaults{Meta: at(0), Limits: QuotaLimits{QuotaInstances: 10, QuotaCores: 20}})
	a.ok(&UpdateQuotas{Meta: at(1), Class: DefaultQuotaClass, Limits: QuotaLimits{QuotaCores: 40}})
	a.ok(&UpdateQuotas{Meta: at(1), Class: "gold", Limits: QuotaLimits{QuotaRAM: 1}})
	a.ok(&UpdateQuotas{Meta: at(2), ProjectID: "p1", Limits: QuotaLimits{QuotaInstances: 5}})
	a.ok(&UpdateQuotas{Meta: at(3), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaInstances: 2}})
	cases := []struct {
		name string
		got  QuotaLimits
		want map[string]int64
	}{
		{"defaults", a.s.DefaultQuotas(), map[string]int64{QuotaInstances: 10, QuotaCores: 40, QuotaRAM: -1}},
		{"class gold", a.s.ClassQuotas("gold"), map[string]int64{QuotaInstances: 10, QuotaCores: 20, QuotaRAM: 1}},
		{"project p1", a.s.ProjectQuotas("p1", ""), map[string]int64{QuotaInstances: 5, QuotaCores: 40, QuotaRAM: -1}},
		{"user u1", a.s.ProjectQuotas("p1", "u1"), map[string]int64{QuotaInstances: 2, QuotaCores: 40}},
		{"user u2", a.s.ProjectQuotas("p1", "u2"), map[string]int64{QuotaInstances: 5}},
		{"project p2", a.s.ProjectQuotas("p2", ""), map[string]int64{QuotaInstances: 10, QuotaKeyPairs: -1}},
	}
	for _, c := range cases {
		if len(c.got) != len(QuotaResources) {
			t.Errorf("%s: %d resources, want every one", c.name, len(c.got))
		}
		for r, v := range c.want {
			if c.got[r] != v {
				t.Errorf("%s: %s = %d, want %d", c.name, r, c.got[r], v)
			}
		}
	}
	// Deleting a project's quotas reverts it and its users to the defaults.
	a.ok(&UpdateQuotas{Meta: at(4), ProjectID: "p2", UserID: "u1", Limits: QuotaLimits{QuotaCores: 3}})
	a.ok(&DeleteQuotas{Meta: at(5), ProjectID: "p1", UserID: "u1"})
	if got := a.s.ProjectQuotas("p1", "u1")[QuotaInstances]; got != 5 {
		t.Fatalf("after the user's delete, u1 has instances %d, want the project's 5", got)
	}
	a.ok(&UpdateQuotas{Meta: at(6), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaInstances: 2}})
	a.ok(&DeleteQuotas{Meta: at(7), ProjectID: "p1"})
	if !reflect.DeepEqual(a.s.ProjectQuotas("p1", "u1"), a.s.DefaultQuotas()) {
		t.Fatal("after the project's delete, its user is not back at the defaults")
	}
	if got := a.s.ProjectQuotas("p2", "u1")[QuotaCores]; got != 3 {
		t.Fatalf("deleting p1 touched p2's user: cores %d", got)
	}
	a.ok(&DeleteQuotas{Meta: at(8), ProjectID: "never-set"})
	// [quota] is replaced as a whole.
	a.ok(&SetQuotaDefaults{Meta: at(9), Limits: QuotaLimits{QuotaCores: 7}})
	if d := a.s.QuotaDefaults(); !maps.Equal(d, QuotaLimits{QuotaCores: 7}) {
		t.Fatalf("defaults %v", d)
	}
	if got := a.s.ClassQuotas("gold")[QuotaInstances]; got != QuotaUnlimited {
		t.Fatalf("instances %d after [quota] dropped it, want unlimited", got)
	}
}

func TestQuotaCommandsRefuseBadInput(t *testing.T) {
	a := quotaFixture(t)
	long := strings.Repeat("x", 256)
	for _, c := range []Command{
		&SetQuotaDefaults{Meta: at(1), Limits: QuotaLimits{"networks": 10}},
		&SetQuotaDefaults{Meta: at(1), Limits: QuotaLimits{QuotaRAM: -2}},
		&UpdateQuotas{Meta: at(1), ProjectID: "p1", Limits: QuotaLimits{QuotaRAM: MaxQuotaLimit + 1}},
		&UpdateQuotas{Meta: at(1), Limits: QuotaLimits{QuotaRAM: 1}},
		&UpdateQuotas{Meta: at(1), Class: "default", ProjectID: "p1", Limits: QuotaLimits{QuotaRAM: 1}},
		&UpdateQuotas{Meta: at(1), Class: long, Limits: QuotaLimits{QuotaRAM: 1}},
		&UpdateQuotas{Meta: at(1), ProjectID: "p\x00u", Limits: QuotaLimits{QuotaRAM: 1}},
		&UpdateQuotas{Meta: at(1), UserID: "u1", Limits: QuotaLimits{QuotaRAM: 1}},
		&DeleteQuotas{Meta: at(1)},
		&DeleteQuotas{Meta: at(1), ProjectID: "p1", UserID: long},
	} {
		a.refused(c, ErrInvalid, "")
	}
}

// Without force, a new limit must hold what is used, and a user's must
// fit what the project leaves to its users: Nova's messages.
func TestUpdateQuotasChecksSettable(t *testing.T) {
	a := quotaFixture(t)
	for i := range 3 {
		if r := a.create(i, "p1", "u1"); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	a.refused(&UpdateQuotas{Meta: at(20), ProjectID: "p1", Limits: QuotaLimits{QuotaInstances: 2, QuotaRAM: 100}},
		ErrInvalid, "Quota limit 2 for instances must be greater than or equal to already used and reserved 3.")
	a.ok(&UpdateQuotas{Meta: at(21), ProjectID: "p1", Limits: QuotaLimits{QuotaInstances: 2}, Force: true})
	if got := a.s.ProjectQuotas("p1", "")[QuotaInstances]; got != 2 {
		t.Fatalf("forced limit %d", got)
	}
	a.ok(&UpdateQuotas{Meta: at(22), ProjectID: "p1", Limits: QuotaLimits{QuotaInstances: 10, QuotaKeyPairs: 0}})
	// Users' limits share the project's: 10 instances, 4 given to u2.
	a.ok(&UpdateQuotas{Meta: at(23), ProjectID: "p1", UserID: "u2", Limits: QuotaLimits{QuotaInstances: 4}})
	a.refused(&UpdateQuotas{Meta: at(24), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaInstances: 7}},
		ErrInvalid, "Quota limit 7 for instances must be less than or equal to 6.")
	a.refused(&UpdateQuotas{Meta: at(24), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaInstances: 2}},
		ErrInvalid, "Quota limit 2 for instances must be greater than or equal to already used and reserved 3.")
	a.refused(&UpdateQuotas{Meta: at(24), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaInstances: -1}},
		ErrInvalid, "Quota limit -1 for instances must be less than or equal to 6.")
	a.ok(&UpdateQuotas{Meta: at(25), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaInstances: 6}})
	// The project may not go below what its users' limits add up to.
	a.refused(&UpdateQuotas{Meta: at(26), ProjectID: "p1", Limits: QuotaLimits{QuotaInstances: 9}},
		ErrInvalid, "Quota limit 9 for instances must be greater than or equal to already used and reserved 10.")
	// A quota class takes any limit: nothing is checked against usage.
	a.ok(&UpdateQuotas{Meta: at(27), Class: DefaultQuotaClass, Limits: QuotaLimits{QuotaInstances: 0}})
}

func TestServerQuotaEnforcedAtCreate(t *testing.T) {
	a := quotaFixture(t)
	for i := range 10 {
		if r := a.create(i, "p1", "u1"); r.Err != nil {
			t.Fatalf("server %d of 10: %v", i, r.Err)
		}
	}
	a.refused(&CreateServer{Meta: at(30), ID: sid(10), Name: "s10", FlavorID: "gold", ImageRef: "img", Host: "h1",
		ProjectID: "p1", UserID: "u2"},
		ErrQuotaExceeded, "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances")
	// Another project has its own.
	if r := a.create(11, "p2", "u1"); r.Err != nil {
		t.Fatal(r.Err)
	}
	// A deleted server no longer counts; one in ERROR still does.
	a.ok(&DeleteServer{Meta: at(31), ID: sid(0)})
	a.ok(&SetServerTask{Meta: at(32), ID: sid(0), Host: "h1", Epoch: 1, Status: StatusDeleted})
	a.ok(&SetServerTask{Meta: at(32), ID: sid(1), Host: "h1", Epoch: 1, Status: StatusError})
	if r := a.create(12, "p1", "u1"); r.Err != nil {
		t.Fatalf("a deleted server still counts: %v", r.Err)
	}
	a.refused(&CreateServer{Meta: at(33), ID: sid(13), Name: "s13", FlavorID: "gold", ImageRef: "img",
		ProjectID: "p1", UserID: "u1", NoValidHost: "No valid host was found."},
		ErrQuotaExceeded, "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances")
	// Cores and ram, from the flavor (2 vcpus, 4096 MiB), several at once.
	a.ok(&UpdateQuotas{Meta: at(34), ProjectID: "p3", Limits: QuotaLimits{QuotaCores: 3, QuotaRAM: 4096}})
	a.ok(&CreateServer{Meta: at(34), ID: sid(14), Name: "s14", FlavorID: "gold", ImageRef: "img", Host: "h1",
		ProjectID: "p3", UserID: "u1"})
	a.refused(&CreateServer{Meta: at(35), ID: sid(15), Name: "s15", FlavorID: "gold", ImageRef: "img", Host: "h1",
		ProjectID: "p3", UserID: "u1"},
		ErrQuotaExceeded, "Quota exceeded for cores, ram: Requested 2, 4096, but already used 2, 4096 of 3, 4096 cores, ram")
	// A user with a limit of its own is held to it too.
	a.ok(&UpdateQuotas{Meta: at(36), ProjectID: "p2", UserID: "u9", Limits: QuotaLimits{QuotaInstances: 0}})
	a.refused(&CreateServer{Meta: at(37), ID: sid(16), Name: "s16", FlavorID: "gold", ImageRef: "img", Host: "h1",
		ProjectID: "p2", UserID: "u9"},
		ErrQuotaExceeded, "Quota exceeded for instances: Requested 1, but already used 0 of 0 instances")
	if r := a.create(17, "p2", "u8"); r.Err != nil {
		t.Fatalf("another user of p2: %v", r.Err)
	}
	// Servers without a project are DefaultProject's.
	a.ok(&UpdateQuotas{Meta: at(38), ProjectID: DefaultProject, Limits: QuotaLimits{QuotaInstances: 0}, Force: true})
	a.refused(&CreateServer{Meta: at(39), ID: sid(18), Name: "s18", FlavorID: "gold", ImageRef: "img", Host: "h1"},
		ErrQuotaExceeded, "")
	// A batch is counted server by server, each seeing those before it.
	a.ok(&UpdateQuotas{Meta: at(40), ProjectID: "p4", Limits: QuotaLimits{QuotaInstances: 1}})
	v := a.ok(&CreateServers{Meta: at(41), Servers: []CreateServer{
		{ID: sid(20), Name: "b0", FlavorID: "gold", ImageRef: "img", Host: "h1", ProjectID: "p4"},
		{ID: sid(21), Name: "b1", FlavorID: "gold", ImageRef: "img", Host: "h1", ProjectID: "p4"}}}).(BatchResult)
	if v[0].Err != nil || !errors.Is(v[1].Err, ErrQuotaExceeded) {
		t.Fatalf("batch over quota: %v, %v", v[0].Err, v[1].Err)
	}
}

// checkServerQuota answers how many of a multiple create fit, all or
// nothing by min_count, with Nova's message.
func TestCheckServerQuotaMinMax(t *testing.T) {
	a := quotaFixture(t)
	for i := range 7 {
		if r := a.create(i, "p1", "u1"); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	gold := testFlavor("gold", "bm-gold")
	for _, c := range []struct {
		min, max, want int
		msg            string
	}{
		{1, 3, 3, ""},
		{1, 5, 3, ""},
		{3, 5, 3, ""},
		{4, 5, 0, "Quota exceeded for instances: Requested 4-5, but already used 7 of 10 instances"},
		{4, 4, 0, "Quota exceeded for instances: Requested 4, but already used 7 of 10 instances"},
	} {
		a.s.mu.RLock()
		n, err := a.s.st.checkServerQuota("p1", "u1", c.min, c.max, gold)
		a.s.mu.RUnlock()
		if n != c.want || (err == nil) != (c.msg == "") || err != nil && err.Error() != c.msg {
			t.Errorf("(%d, %d): %d, %v; want %d, %q", c.min, c.max, n, err, c.want, c.msg)
		}
	}
	// Cores bind before instances: 20 cores, 7 used, 5 per server.
	five := gold
	five.VCPUs = 5
	a.s.mu.RLock()
	n, err := a.s.st.checkServerQuota("p1", "u1", 1, 9, five)
	a.s.mu.RUnlock()
	if n != 2 || err != nil {
		t.Fatalf("(1, 9) of 5 vcpus: %d, %v", n, err)
	}
	big := gold
	big.VCPUs = 14
	a.s.mu.RLock()
	_, err = a.s.st.checkServerQuota("p1", "u1", 1, 2, big)
	a.s.mu.RUnlock()
	if want := "Quota exceeded for cores: Requested 28, but already used 7 of 20 cores"; err == nil || err.Error() != want {
		t.Fatalf("too big a flavor: %v", err)
	}
}

func TestMetadataAndKeyPairQuotas(t *testing.T) {
	a := quotaFixture(t)
	meta := map[string]string{}
	for i := range 129 {
		meta[fmt.Sprint(i)] = "v"
	}
	a.refused(&CreateServer{Meta: at(1), ID: sid(1), Name: "m", FlavorID: "gold", ImageRef: "img", Host: "h1",
		ProjectID: "p1", Metadata: meta}, ErrQuotaExceeded, "Maximum number of metadata items exceeds 128")
	delete(meta, "0")
	if r := a.apply(&CreateServer{Meta: at(2), ID: sid(2), Name: "m", FlavorID: "gold", ImageRef: "img", Host: "h1",
		ProjectID: "p1", Metadata: meta}); r.Err != nil {
		t.Fatalf("128 metadata items: %v", r.Err)
	}
	a.ok(&UpdateQuotas{Meta: at(3), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaMetadataItems: 3}})
	a.s.mu.RLock()
	err := a.s.st.checkMetadataQuota("p1", "u1", 4)
	a.s.mu.RUnlock()
	if err == nil || err.Error() != "Maximum number of metadata items exceeds 3" {
		t.Fatalf("user's metadata limit: %v", err)
	}

	key := func(i int, user string) *CreateKeyPair {
		return &CreateKeyPair{Meta: at(10 + i), ProjectID: "p1", KeyPair: KeyPair{UserID: user, Name: fmt.Sprint("k", i),
			Type: KeyTypeSSH, PublicKey: "ssh-ed25519 AAAA", Fingerprint: "aa"}}
	}
	a.ok(&UpdateQuotas{Meta: at(4), ProjectID: "p1", Limits: QuotaLimits{QuotaKeyPairs: 2}})
	a.ok(key(0, "u1"))
	a.ok(key(1, "u1"))
	a.refused(key(2, "u1"), ErrQuotaExceeded, "Quota exceeded, too many key pairs.")
	a.ok(key(2, "u2")) // key pairs count per user
	a.ok(&DeleteKeyPair{Meta: at(20), UserID: "u1", Name: "k0"})
	a.ok(key(3, "u1"))
	// The limit is the one of the creating caller's project.
	c := key(4, "u1")
	c.ProjectID = "p2"
	a.ok(c)
}

// checkQuotaUsage compares the maintained usage with a recount.
func checkQuotaUsage(t *testing.T, st *state) {
	t.Helper()
	want := recountQuotaUsage(st)
	if !maps.Equal(st.usage.projects, want.projects) || !maps.Equal(st.usage.users, want.users) ||
		!maps.Equal(st.usage.keyPairs, want.keyPairs) {
		t.Fatalf("quota usage %+v, recount %+v", st.usage, want)
	}
}

// The usage index follows creates, deletes, purges, adoptions and
// restores of servers of several projects and users.
func TestQuotaUsageIndex(t *testing.T) {
	a := hostCountFixture(t)
	a.ok(&SetQuotaDefaults{Meta: at(0), Limits: QuotaLimits{QuotaInstances: 6, QuotaKeyPairs: 3}})
	r := rand.New(rand.NewPCG(5, 6))
	refused := 0
	for i := range 600 {
		p, u := fmt.Sprint("p", r.IntN(3)), fmt.Sprint("u", r.IntN(3))
		var c Command
		switch r.IntN(6) {
		case 0, 1:
			c = &CreateServer{Meta: at(100 + i), ID: sid(r.IntN(60)), Name: "s", FlavorID: "bm", ImageRef: "img",
				Host: []string{"h1", "h2", ""}[r.IntN(3)], ProjectID: p, UserID: u}
		case 2:
			ss := a.s.Servers()
			if len(ss) == 0 {
				continue
			}
			s := ss[r.IntN(len(ss))]
			c = &SetServerTask{Meta: at(100 + i), ID: s.ID, Host: s.Host, Epoch: s.Epoch,
				Status: []ServerStatus{StatusDeleted, StatusError, StatusActive}[r.IntN(3)]}
		case 3:
			var ids []string
			for _, s := range a.s.Servers() {
				if s.Status == StatusDeleted {
					ids = append(ids, s.ID)
				}
			}
			c = &PurgeServers{Meta: at(100 + i), Before: at(100 + i).At, IDs: ids}
		case 4:
			c = &CreateKeyPair{Meta: at(100 + i), ProjectID: p, KeyPair: KeyPair{UserID: u, Name: fmt.Sprint("k", r.IntN(5)),
				Type: KeyTypeSSH, PublicKey: "ssh-ed25519 AAAA", Fingerprint: "aa"}}
		default:
			c = &DeleteKeyPair{Meta: at(100 + i), UserID: u, Name: fmt.Sprint("k", r.IntN(5))}
		}
		if res := a.apply(c); errors.Is(res.Err, ErrQuotaExceeded) {
			refused++
		}
		a.s.mu.RLock()
		checkQuotaUsage(t, a.s.st)
		checkServerIndex(t, a.s.st)
		for _, p := range []string{"p0", "p1", "p2"} {
			if n := a.s.st.usage.projects[p].instances; n > 6 {
				t.Fatalf("project %s holds %d servers, over its limit of 6", p, n)
			}
		}
		a.s.mu.RUnlock()
	}
	if refused == 0 {
		t.Fatal("no create was refused: the sequence tested no limit")
	}
	restored := New()
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, a.s))); err != nil {
		t.Fatal(err)
	}
	restored.mu.RLock()
	checkQuotaUsage(t, restored.st)
	checkServerIndex(t, restored.st)
	same := reflect.DeepEqual(restored.st.usage, a.s.st.usage)
	restored.mu.RUnlock()
	if !same || restored.Digest() != a.s.Digest() {
		t.Fatal("the restored usage or state differs")
	}
	if !reflect.DeepEqual(restored.QuotaUsage("p1", ""), a.s.QuotaUsage("p1", "")) {
		t.Fatal("restored usage of p1 differs")
	}
}

func TestQuotaSnapshotRecords(t *testing.T) {
	a := quotaFixture(t)
	a.ok(&UpdateQuotas{Meta: at(1), Class: DefaultQuotaClass, Limits: QuotaLimits{QuotaCores: 40}})
	a.ok(&UpdateQuotas{Meta: at(1), ProjectID: "p1", Limits: QuotaLimits{QuotaInstances: 5}})
	a.ok(&UpdateQuotas{Meta: at(1), ProjectID: "p1", UserID: "u1", Limits: QuotaLimits{QuotaInstances: 2}})
	snap := snapshotBytes(t, a.s)
	r := New()
	if err := r.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() || !bytes.Equal(snapshotBytes(t, r), snap) {
		t.Fatal("quotas do not survive a snapshot byte for byte")
	}
	if got := r.ProjectQuotas("p1", "u1")[QuotaInstances]; got != 2 {
		t.Fatalf("restored user limit %d", got)
	}
	// Bad records are refused.
	for _, body := range []string{
		`{"scope":"project","project":"p1","limits":{"instances":-5}}`,
		`{"scope":"project","project":"","limits":{"instances":5}}`,
		`{"scope":"galaxy","limits":{"instances":5}}`,
		`{"scope":"class","class":"default","limits":{}}`,
		`{"scope":"user","project":"p1","limits":{"instances":5}}`,
	} {
		st := newState()
		if err := loadQuotaRecord(st, []byte(body)); err == nil {
			t.Errorf("record %s accepted", body)
		}
	}
	st := newState()
	body := []byte(`{"scope":"class","class":"default","limits":{"instances":5}}`)
	if err := loadQuotaRecord(st, body); err != nil {
		t.Fatal(err)
	}
	if err := loadQuotaRecord(st, body); err == nil {
		t.Error("a class appearing twice was accepted")
	}
}
