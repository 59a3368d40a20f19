package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/wire"
)

// Operator is what the operator endpoints need from the peer they run on.
type Operator interface {
	// KeyringLocal applies one keyring operation to this peer only.
	KeyringLocal(op, key string) (cluster.KeyringStatus, error)
	// PeerAPIs is the API address of every live member, by name.
	PeerAPIs() map[string]string
	// CallPeer sends a JSON request to another member's API.
	CallPeer(ctx context.Context, api, method, path string, in, out any) error
	// RemovePeer removes a dead server from raft (asking the leader).
	RemovePeer(ctx context.Context, name string) error
	// IsLeader reports whether this peer leads; the snapshot calls below
	// run on the leader, a follower proxies them with ProxySnapshot.
	IsLeader() bool
	SaveSnapshot(ctx context.Context, w io.Writer) (cluster.SnapshotHeader, error)
	RestoreSnapshot(ctx context.Context, r io.Reader) (cluster.SnapshotHeader, error)
	ProxySnapshot(ctx context.Context, method string, body io.Reader) (*http.Response, error)
}

// Snapshot saves (GET) or restores (POST) the replicated state, on the
// leader; a follower passes the request on to it.
func (h *Handlers) Snapshot(c echo.Context) error {
	op := h.operator
	if op == nil {
		return echo.NewHTTPError(http.StatusNotImplemented, "this peer has no operator endpoints")
	}
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, cluster.MaxSnapshotBytes+64<<10)
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	if !op.IsLeader() {
		var in io.Reader
		if r.Method == http.MethodPost {
			in = body
		}
		resp, err := op.ProxySnapshot(ctx, r.Method, in)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 400 {
			return relayedError(resp)
		}
		for _, name := range []string{"Content-Type", "X-Corral-Snapshot-Index", "X-Corral-Snapshot-Sha256"} {
			if v := resp.Header.Get(name); v != "" {
				c.Response().Header().Set(name, v)
			}
		}
		c.Response().WriteHeader(resp.StatusCode)
		_, err = io.Copy(c.Response(), resp.Body)
		return err
	}
	if r.Method == http.MethodPost {
		hdr, err := op.RestoreSnapshot(ctx, body)
		switch {
		case core.IsBodyTooLarge(err):
			return err
		case errors.Is(err, cluster.ErrBadSnapshot):
			return core.BadRequest("%v", err)
		case err != nil:
			return err
		}
		return c.JSON(http.StatusOK, snapshotHeader(hdr))
	}
	var buf bytes.Buffer
	hdr, err := op.SaveSnapshot(ctx, &buf)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Type", "application/octet-stream")
	c.Response().Header().Set("X-Corral-Snapshot-Index", strconv.FormatUint(hdr.Index, 10))
	c.Response().Header().Set("X-Corral-Snapshot-Sha256", hdr.SHA256)
	return c.Blob(http.StatusOK, "application/octet-stream", buf.Bytes())
}

// relayedError is the leader's refusal of a relayed snapshot, as this
// peer's own: the leader answered in the peers' error format, which is
// not the one the operator reads.
func relayedError(resp *http.Response) error {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := fmt.Sprintf("the leader answered %d: %.200s", resp.StatusCode, raw)
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if resp.StatusCode >= 500 {
		return &forward.PeerError{Status: resp.StatusCode, Message: msg}
	}
	return echo.NewHTTPError(resp.StatusCode, msg)
}

// RemovePeer is POST wire.RemovePeerPath (and, relayed from a follower,
// core.PeerRemovePeerPath on the leader).
func (h *Handlers) RemovePeer(c echo.Context) error {
	op := h.operator
	if op == nil {
		return echo.NewHTTPError(http.StatusNotImplemented, "this peer has no operator endpoints")
	}
	var req wire.RemovePeerRequest
	if err := core.BindStrict(c, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return core.BadRequest("name is empty: give the raft server (peer name) to remove")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), h.st.Timeout())
	defer cancel()
	err := op.RemovePeer(ctx, req.Name)
	switch {
	case errors.Is(err, cluster.ErrPeerAlive):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case errors.Is(err, cluster.ErrUnknownPeer):
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	case err != nil:
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// keyringOps maps each method to its keyring operation.
var keyringOps = map[string]string{
	http.MethodGet:    cluster.KeyringList,
	http.MethodPost:   cluster.KeyringInstall,
	http.MethodPut:    cluster.KeyringUse,
	http.MethodDelete: cluster.KeyringRemove,
}

// Keyring is GET (list), POST (install), PUT (use) and DELETE (remove) on
// wire.KeyringPath: the operation on every live member at once, each
// answering for itself (207 when some failed); with ?local=true on this
// peer alone.
func (h *Handlers) Keyring(c echo.Context) error {
	op := h.operator
	if op == nil {
		return echo.NewHTTPError(http.StatusNotImplemented, "this peer has no operator endpoints")
	}
	verb := keyringOps[c.Request().Method]
	var req wire.KeyringRequest
	if verb != cluster.KeyringList {
		if err := core.BindStrict(c, &req); err != nil {
			return err
		}
		if _, err := cluster.ParseGossipKey(req.Key); err != nil {
			return core.BadRequest("%v", err)
		}
	}
	if local, _ := strconv.ParseBool(c.QueryParam("local")); local {
		st, err := op.KeyringLocal(verb, req.Key)
		if err != nil {
			// Encryption off, or the keyring refused the change (a key not
			// installed made primary, the primary removed).
			return echo.NewHTTPError(http.StatusConflict, err.Error())
		}
		return c.JSON(http.StatusOK, wire.KeyringResponse{Peers: []wire.KeyringStatus{keyringStatus(st)}})
	}
	// Apply on every live member at once; each answers for itself.
	ctx, cancel := context.WithTimeout(c.Request().Context(), 15*time.Second)
	defer cancel()
	resp := wire.KeyringResponse{Errors: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, addr := range op.PeerAPIs() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var one wire.KeyringResponse
			var err error
			if addr == "" || name == h.st.Cluster.Name() {
				var st cluster.KeyringStatus
				st, err = op.KeyringLocal(verb, req.Key)
				one.Peers = []wire.KeyringStatus{keyringStatus(st)}
			} else {
				var body any
				if verb != cluster.KeyringList {
					body = req
				}
				err = op.CallPeer(ctx, addr, c.Request().Method, core.PeerKeyringPath, body, &one)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				resp.Errors[name] = err.Error()
				return
			}
			resp.Peers = append(resp.Peers, one.Peers...)
		}()
	}
	wg.Wait()
	sort.Slice(resp.Peers, func(i, j int) bool { return resp.Peers[i].Peer < resp.Peers[j].Peer })
	status := http.StatusOK
	if len(resp.Errors) > 0 {
		// Some members did not apply it: the caller must look and retry.
		status = http.StatusMultiStatus
	}
	return c.JSON(status, resp)
}

// KeyringLocal applies a keyring operation another peer relayed to this
// peer alone (core.PeerKeyringPath).
func (h *Handlers) KeyringLocal(c echo.Context) error {
	q := c.Request().URL.Query()
	q.Set("local", "true")
	c.Request().URL.RawQuery = q.Encode()
	return h.Keyring(c)
}
