package admin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// fill sets every field of the struct v points to, recursively, to a
// value that is not zero, so that a converter that forgets a field shows.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString("s")
	case reflect.Int, reflect.Int64, reflect.Uint64:
		if v.CanInt() {
			v.SetInt(7)
		} else {
			v.SetUint(7)
		}
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}

func filled[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem())
	return v
}

func sameJSON(t *testing.T, what string, want, got any) {
	t.Helper()
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w, g) {
		t.Errorf("%s: the wire type's JSON differs from the state's\nstate: %s\nwire:  %s", what, w, g)
	}
}

// TestWireMirrorsState: every admin API answer the wire package declares
// again is the JSON the state's own type gave, field for field, both
// filled and zero (omitempty).
func TestWireMirrorsState(t *testing.T) {
	for _, full := range []bool{true, false} {
		host, node := fsm.Host{}, fsm.Node{}
		member, raft, ks, snap := cluster.Member{}, cluster.RaftStatus{}, cluster.KeyringStatus{}, cluster.SnapshotHeader{}
		res, mv, fl := fsm.Reservation{}, fsm.Move{}, wire.AdoptedFlavor{}
		if full {
			host, node = filled[fsm.Host](), filled[fsm.Node]()
			member, raft, ks, snap = filled[cluster.Member](), filled[cluster.RaftStatus](), filled[cluster.KeyringStatus](), filled[cluster.SnapshotHeader]()
			res, mv, fl = filled[fsm.Reservation](), filled[fsm.Move](), filled[wire.AdoptedFlavor]()
		}
		sameJSON(t, "host", struct {
			fsm.Host
			Servers int `json:"servers"`
		}{host, 3}, hostView(host, 3))
		by := ""
		if full {
			by = "server-1"
		}
		sameJSON(t, "node", struct {
			fsm.Node
			ReservedBy string `json:"reserved_by,omitempty"`
		}{node, by}, nodeView(node, by))
		sameJSON(t, "member", member, memberOf(member))
		sameJSON(t, "raft status", raft, raftStatus(raft))
		sameJSON(t, "keyring", ks, keyringStatus(ks))
		sameJSON(t, "snapshot header", snap, snapshotHeader(snap))
		sameJSON(t, "reservation", res, reservation(res))
		sameJSON(t, "move", mv, move(mv))
		sameJSON(t, "adopted flavor", fl, adoptedFlavor(fl))
	}
}
