package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/fsm"
)

// snapshotMagic opens every snapshot file.
const snapshotMagic = "corral-snapshot v1\n"

// MaxSnapshotBytes bounds the state a snapshot file may carry.
const MaxSnapshotBytes = 1 << 30

// SnapshotHeader describes a snapshot file: the raft index and term it
// covers, and the size and SHA-256 of the state that follows it.
type SnapshotHeader struct {
	Index   uint64    `json:"index"`
	Term    uint64    `json:"term"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	TakenAt time.Time `json:"taken_at"`
	TakenBy string    `json:"taken_by"`
	// Digest is the state's digest (fsm.Store.Digest), equal on every
	// peer that holds the same state.
	Digest string `json:"digest"`
}

// WriteSnapshotFile writes the magic line, the header (with the state's
// size and checksum filled in) and the state.
func WriteSnapshotFile(w io.Writer, h *SnapshotHeader, state []byte) error {
	h.Size = int64(len(state))
	sum := sha256.Sum256(state)
	h.SHA256 = hex.EncodeToString(sum[:])
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, snapshotMagic); err != nil {
		return err
	}
	if _, err := w.Write(append(hdr, '\n')); err != nil {
		return err
	}
	_, err = w.Write(state)
	return err
}

// ReadSnapshotFile reads and checks a snapshot file: its magic line, its
// header, the size and checksum of the state, and that the state is a
// state machine snapshot this version can read. It returns the header,
// the state, and the store restored from it.
func ReadSnapshotFile(r io.Reader) (SnapshotHeader, []byte, *fsm.Store, error) {
	var h SnapshotHeader
	br := bufio.NewReader(io.LimitReader(r, MaxSnapshotBytes+64<<10))
	magic, err := br.ReadString('\n')
	if err != nil || magic != snapshotMagic {
		return h, nil, nil, fmt.Errorf("%w: it does not start with %q (not a corral snapshot, or from an incompatible version)", ErrBadSnapshot, snapshotMagic[:len(snapshotMagic)-1])
	}
	line, err := br.ReadBytes('\n')
	if err != nil {
		return h, nil, nil, fmt.Errorf("%w: truncated header: %v", ErrBadSnapshot, err)
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, nil, nil, fmt.Errorf("%w: unreadable header: %v", ErrBadSnapshot, err)
	}
	if h.Size < 0 || h.Size > MaxSnapshotBytes {
		return h, nil, nil, fmt.Errorf("%w: header announces %d bytes of state", ErrBadSnapshot, h.Size)
	}
	state := make([]byte, h.Size)
	if n, err := io.ReadFull(br, state); err != nil {
		return h, nil, nil, fmt.Errorf("%w: truncated: %d of %d bytes of state", ErrBadSnapshot, n, h.Size)
	}
	if extra, _ := br.Read(make([]byte, 1)); extra > 0 {
		return h, nil, nil, fmt.Errorf("%w: data after the %d bytes of state", ErrBadSnapshot, h.Size)
	}
	sum := sha256.Sum256(state)
	if got := hex.EncodeToString(sum[:]); got != h.SHA256 {
		return h, nil, nil, fmt.Errorf("%w: checksum mismatch: the state hashes to %s, the header says %s", ErrBadSnapshot, got, h.SHA256)
	}
	st := fsm.New()
	if err := st.Restore(bytes.NewReader(state)); err != nil {
		return h, nil, nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return h, state, st, nil
}

// SaveSnapshot writes a consistent snapshot file of the replicated state
// to w (leader only): a barrier first, so that it covers every write
// acknowledged before the call.
func (n *Node) SaveSnapshot(ctx context.Context, w io.Writer) (SnapshotHeader, error) {
	if !n.IsLeader() {
		return SnapshotHeader{}, ErrNotLeader
	}
	timeout := n.cfg.Raft.ApplyTimeout
	if err := n.awaitApply(n.raft.Barrier(timeout)); err != nil {
		return SnapshotHeader{}, fmt.Errorf("barrier before the snapshot: %w", err)
	}
	var meta *raft.SnapshotMeta
	var rc io.ReadCloser
	f := n.raft.Snapshot()
	err := f.Error()
	switch {
	case err == nil:
		meta, rc, err = f.Open()
	case errors.Is(err, raft.ErrNothingNewToSnapshot):
		var list []*raft.SnapshotMeta
		if list, err = n.parts.snaps.List(); err == nil && len(list) > 0 {
			meta, rc, err = n.parts.snaps.Open(list[0].ID)
		}
	}
	if err != nil {
		return SnapshotHeader{}, fmt.Errorf("take a raft snapshot: %w", err)
	}
	defer rc.Close()
	state, err := io.ReadAll(io.LimitReader(rc, MaxSnapshotBytes+1))
	if err != nil {
		return SnapshotHeader{}, fmt.Errorf("read the raft snapshot: %w", err)
	}
	if len(state) > MaxSnapshotBytes {
		return SnapshotHeader{}, fmt.Errorf("the state is larger than %d bytes", MaxSnapshotBytes)
	}
	scratch := fsm.New()
	if err := scratch.Restore(bytes.NewReader(state)); err != nil {
		return SnapshotHeader{}, fmt.Errorf("the raft snapshot does not read back: %w", err)
	}
	h := SnapshotHeader{Index: meta.Index, Term: meta.Term, TakenAt: time.Now().UTC(), TakenBy: n.cfg.Name, Digest: scratch.Digest()}
	if err := WriteSnapshotFile(w, &h, state); err != nil {
		return SnapshotHeader{}, fmt.Errorf("send the snapshot: %w", err)
	}
	n.log.Info("snapshot saved", "index", meta.Index, "term", meta.Term, "bytes", len(state))
	return h, nil
}

// RestoreSnapshot replaces the replicated state with a snapshot file read
// from r (leader only). The file is checked in full first; a bad one
// changes nothing. Raft keeps the current configuration and sends the
// state to every follower; it returns once a majority holds it (a no-op
// committed after the restored index). Every peer's store then stands at
// the restored index (raftFSM.Restore), so reads answer at once.
func (n *Node) RestoreSnapshot(ctx context.Context, r io.Reader) (SnapshotHeader, error) {
	if !n.IsLeader() {
		return SnapshotHeader{}, ErrNotLeader
	}
	h, state, _, err := ReadSnapshotFile(r)
	if err != nil {
		return h, err
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: h.Index, Term: h.Term, Size: h.Size}
	if err := n.raft.Restore(meta, bytes.NewReader(state), 2*time.Minute); err != nil {
		return h, fmt.Errorf("restore the snapshot into raft: %w", err)
	}
	n.log.Warn("snapshot restored: the replicated state was replaced", "index", h.Index, "taken_at", h.TakenAt, "taken_by", h.TakenBy)
	return h, nil
}

// ProxySnapshot sends a snapshot request on to the leader's API and
// returns its answer (the caller closes the body): a follower's end of
// the operator's snapshot endpoint, through the leader's peers' endpoint
// (Config.PeerPaths: the user was authorized here).
func (n *Node) ProxySnapshot(ctx context.Context, method string, body io.Reader) (*http.Response, error) {
	api, err := n.leaderAPI()
	if err != nil {
		return nil, err
	}
	if n.cfg.PeerPaths.Snapshot == "" {
		return nil, errors.New("this peer has no path to pass the snapshot request on to the leader")
	}
	return n.peers.Raw(ctx, api, method, n.cfg.PeerPaths.Snapshot, body)
}
