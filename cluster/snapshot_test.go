package cluster_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

func TestSnapshotSaveRestore(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	for i := range 10 {
		if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("s%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Followers(leader)[0].Node.SaveSnapshot(ctxT(t, 5*time.Second), &bytes.Buffer{}); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("save on a follower: %v", err)
	}
	var file bytes.Buffer
	hdr, err := leader.Node.SaveSnapshot(ctxT(t, 10*time.Second), &file)
	if err != nil {
		t.Fatal(err)
	}
	want := leader.Node.Store().Digest()
	if hdr.Digest != want || hdr.Index == 0 || hdr.TakenBy != leader.Name {
		t.Fatalf("header %+v, state digest %s", hdr, want)
	}
	back, _, st, err := cluster.ReadSnapshotFile(bytes.NewReader(file.Bytes()))
	if err != nil || back.SHA256 != hdr.SHA256 || st.Digest() != want {
		t.Fatalf("read back: %+v %v (restored digest %s, want %s)", back, err, st.Digest(), want)
	}

	// Bad files are refused and change nothing.
	if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor("after")); err != nil {
		t.Fatal(err)
	}
	changed := leader.Node.Store().Digest()
	raw := file.Bytes()
	flipped := bytes.Clone(raw)
	flipped[len(flipped)-3] ^= 0xff
	for name, bad := range map[string][]byte{
		"truncated":      raw[:len(raw)-10],
		"checksum":       flipped,
		"not a snapshot": []byte("SQLite format 3\x00..."),
		"trailing data":  append(bytes.Clone(raw), 'x'),
	} {
		_, err := leader.Node.RestoreSnapshot(ctxT(t, 10*time.Second), bytes.NewReader(bad))
		if !errors.Is(err, cluster.ErrBadSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
		if leader.Node.Store().Digest() != changed {
			t.Fatalf("%s: a refused restore changed the state", name)
		}
	}
	if _, err := leader.Node.RestoreSnapshot(ctxT(t, 10*time.Second), bytes.NewReader([]byte(strings.Repeat("x", 10)))); err == nil {
		t.Fatal("garbage restored")
	}

	// A good file brings every peer back to the saved state.
	if _, err := leader.Node.RestoreSnapshot(ctxT(t, 30*time.Second), bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	for _, p := range h.Running() {
		testkit.Eventually(t, 15*time.Second, func() error {
			if d := p.Node.Store().Digest(); d != want {
				return fmt.Errorf("%s digest %s, want %s", p.Name, d, want)
			}
			return nil
		})
	}
	// And the cluster takes writes after it.
	if _, err := h.Leader(10*time.Second).Node.Propose(ctxT(t, 5*time.Second), flavor("after-restore")); err != nil {
		t.Fatal(err)
	}
}
