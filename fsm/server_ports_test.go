package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// The owner's port intents and ports: fenced at its epoch, recorded in
// order, replaced by id, forgotten, carried by snapshots, replayed alike.
func TestServerPorts(t *testing.T) {
	a := bareMetalFixture(t)
	s := a.boot(sid(1), "bm")
	if s.Host == "" {
		t.Fatal("the server has no owner")
	}
	p1 := ServerPort{ID: "p1", NetworkID: "net-a", NetworkName: "provider", MAC: "fa:16:3e:00:00:01",
		FixedIPs: []PortIP{{Address: "192.0.2.5", Version: 4}, {Address: "2001:db8::5", Version: 6}}}
	p2 := ServerPort{ID: "p2", NetworkID: "net-b", User: true}
	cmds := []Command{
		&SetPortIntent{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: PortStepCreate, NetworkID: "net-a"},
		&RecordServerPort{Meta: at(12), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: p1},
		&SetPortIntent{Meta: at(13), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: PortStepBind, PortID: "p2"},
		&RecordServerPort{Meta: at(14), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: p2},
		&SetPortIntent{Meta: at(15), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: PortStepAttach, PortID: "p1"},
	}
	for i, c := range cmds {
		a.ok(c)
		if i == 0 {
			if in := a.s.ServerNet(s.ID).Intent; in == nil || in.Step != PortStepCreate {
				t.Fatalf("intent %+v, want the create pending", in)
			}
		}
		if _, rec := c.(*RecordServerPort); rec && a.s.ServerNet(s.ID).Intent != nil {
			t.Fatalf("intent %+v still pending after %+v", a.s.ServerNet(s.ID).Intent, c)
		}
	}
	n := a.s.ServerNet(s.ID)
	if !reflect.DeepEqual(n.Ports, []ServerPort{p1, p2}) {
		t.Fatalf("ports %+v", n.Ports)
	}
	if in := n.Intent; in == nil || in.Step != PortStepAttach || in.PortID != "p1" || in.Host != s.Host ||
		in.Epoch != s.Epoch || !in.At.Equal(t0.Add(15e9)) {
		t.Fatalf("intent %+v", n.Intent)
	}
	// A record of the same port replaces it in place.
	p1b := p1
	p1b.MAC = "52:54:00:aa:00:01"
	a.ok(&RecordServerPort{Meta: at(16), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: p1b})
	if n := a.s.ServerNet(s.ID); !reflect.DeepEqual(n.Ports, []ServerPort{p1b, p2}) {
		t.Fatalf("ports after the update %+v", n.Ports)
	}
	// The copy handed out is the caller's.
	n = a.s.ServerNet(s.ID)
	n.Ports[0].FixedIPs[0].Address = "10.9.9.9"
	if a.s.ServerNet(s.ID).Ports[0].FixedIPs[0].Address != "192.0.2.5" {
		t.Fatal("ServerNet shares its slices with the state")
	}

	// A snapshot carries them; a replica that replays the log agrees.
	r := New()
	if err := r.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() || !reflect.DeepEqual(r.ServerNet(s.ID), a.s.ServerNet(s.ID)) {
		t.Fatal("the restored ports differ")
	}
	if !bytes.Equal(snapshotBytes(t, r), snapshotBytes(t, a.s)) {
		t.Fatal("the snapshot of the restored store differs")
	}

	a.ok(&ForgetServerPort{Meta: at(17), ID: s.ID, Host: s.Host, Epoch: s.Epoch, PortID: "p1"})
	a.ok(&ForgetServerPort{Meta: at(18), ID: s.ID, Host: s.Host, Epoch: s.Epoch, PortID: "p1"}) // again: no error
	if n := a.s.ServerNet(s.ID); !reflect.DeepEqual(n.Ports, []ServerPort{p2}) {
		t.Fatalf("ports after forgetting p1 %+v", n.Ports)
	}
	// Purged with the server.
	a.ok(&DeleteServer{Meta: at(19), ID: s.ID})
	a.ok(&SetServerTask{Meta: at(20), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: StatusDeleted})
	a.ok(&PurgeServers{Meta: at(30), Before: t0.Add(30e9), IDs: []string{s.ID}})
	if n := a.s.ServerNet(s.ID); len(n.Ports) != 0 || n.Intent != nil {
		t.Fatalf("ports outlive the purge: %+v", n)
	}
}

// A host that no longer owns the server at its epoch is refused every
// port command, and bad input is refused; none changes anything.
func TestServerPortsFencedAndChecked(t *testing.T) {
	a := bareMetalFixture(t)
	s := a.boot(sid(1), "bm")
	before := a.s.Digest()
	for _, c := range []struct {
		cmd  Command
		want error
	}{
		{&SetPortIntent{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch + 1, Step: PortStepCreate, NetworkID: "n"}, ErrFenced},
		{&SetPortIntent{Meta: at(11), ID: s.ID, Host: "other", Epoch: s.Epoch, Step: PortStepCreate, NetworkID: "n"}, ErrFenced},
		{&RecordServerPort{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch + 1, Port: ServerPort{ID: "p", NetworkID: "n"}}, ErrFenced},
		{&ForgetServerPort{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch + 1, PortID: "p"}, ErrFenced},
		{&SetPortIntent{Meta: at(11), ID: sid(9), Host: s.Host, Epoch: s.Epoch, Step: PortStepCreate, NetworkID: "n"}, ErrNotFound},
		{&SetPortIntent{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: "explode", PortID: "p"}, ErrInvalid},
		{&SetPortIntent{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: PortStepCreate}, ErrInvalid},
		{&SetPortIntent{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: PortStepAttach}, ErrInvalid},
		{&RecordServerPort{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{NetworkID: "n"}}, ErrInvalid},
		{&RecordServerPort{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p"}}, ErrInvalid},
		{&RecordServerPort{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p", NetworkID: "n",
			FixedIPs: []PortIP{{Address: "192.0.2.1", Version: 6}}}}, ErrInvalid},
		{&RecordServerPort{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p", NetworkID: "n",
			FixedIPs: []PortIP{{Address: "not-an-ip", Version: 4}}}}, ErrInvalid},
	} {
		if r := a.apply(c.cmd); !errors.Is(r.Err, c.want) {
			t.Errorf("%s %+v: %v, want %v", c.cmd.Type(), c.cmd, r.Err, c.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a refused port command changed the state")
	}
	for i := range MaxServerPorts {
		a.ok(&RecordServerPort{Meta: at(12), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: sid(100 + i), NetworkID: "n"}})
	}
	if r := a.apply(&RecordServerPort{Meta: at(12), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "one-more", NetworkID: "n"}}); !errors.Is(r.Err, ErrConflict) {
		t.Errorf("port %d: %v, want a conflict", MaxServerPorts+1, r.Err)
	}
}
