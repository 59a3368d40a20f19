package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// Paths served by the API for peer-to-peer forwarding.
const (
	ForwardApplyPath     = "/v1/internal/apply"
	ForwardReadIndexPath = "/v1/internal/read-index"
)

// Forwarder carries a follower's writes and read-index requests to the
// leader. The default speaks HTTP to the leader's API port; tests may
// inject an in-memory one.
type Forwarder interface {
	Apply(ctx context.Context, leaderAPI string, data []byte) (uint64, error)
	ReadIndex(ctx context.Context, leaderAPI string, verify bool) (uint64, error)
}

// ErrNotDelivered marks a forwarding failure where the request never reached
// the leader, so retrying cannot apply a write twice. Forwarders wrap it.
var ErrNotDelivered = errors.New("request not delivered to the leader")

// ForwardResponse is the JSON body of the internal endpoints.
type ForwardResponse struct {
	Index uint64        `json:"index"`
	Error *ForwardError `json:"error,omitempty"`
}

// ForwardError carries an error across peers with its kind preserved.
type ForwardError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Error kinds used between peers.
const (
	KindNotFound  = "not_found"
	KindConflict  = "conflict"
	KindFenced    = "fenced"
	KindInvalid   = "invalid"
	KindNotLeader = "not_leader"
	KindNoLeader  = "no_leader"
	KindInternal  = "internal"
)

// ErrorKind classifies err for the wire.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, fsm.ErrNotFound):
		return KindNotFound
	case errors.Is(err, fsm.ErrFenced):
		return KindFenced
	case errors.Is(err, fsm.ErrConflict):
		return KindConflict
	case errors.Is(err, fsm.ErrInvalid):
		return KindInvalid
	case errors.Is(err, ErrNotLeader):
		return KindNotLeader
	case errors.Is(err, ErrNoLeader):
		return KindNoLeader
	}
	return KindInternal
}

// fromWire rebuilds an error with the sentinel of its kind.
func fromWire(fe *ForwardError) error {
	var base error
	switch fe.Kind {
	case KindNotFound:
		base = fsm.ErrNotFound
	case KindConflict:
		base = fsm.ErrConflict
	case KindFenced:
		base = fsm.ErrFenced
	case KindInvalid:
		base = fsm.ErrInvalid
	case KindNotLeader:
		return ErrNotLeader
	case KindNoLeader:
		return ErrNoLeader
	default:
		return fmt.Errorf("leader: %s", fe.Message)
	}
	return &wireError{base: base, msg: fe.Message}
}

// wireError keeps the leader's message verbatim and the sentinel for errors.Is.
type wireError struct {
	base error
	msg  string
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.base }

func isBusiness(err error) bool {
	return errors.Is(err, fsm.ErrNotFound) || errors.Is(err, fsm.ErrConflict) || errors.Is(err, fsm.ErrInvalid)
}

// HTTPForwarder forwards over the peers' HTTP API.
type HTTPForwarder struct {
	token  string
	client *http.Client
}

// NewHTTPForwarder returns a forwarder authenticating with token.
func NewHTTPForwarder(token string) *HTTPForwarder {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
	}
	return &HTTPForwarder{token: token, client: &http.Client{Transport: tr}}
}

// Apply implements Forwarder.
func (f *HTTPForwarder) Apply(ctx context.Context, leaderAPI string, data []byte) (uint64, error) {
	return f.do(ctx, http.MethodPost, "http://"+leaderAPI+ForwardApplyPath, data)
}

// ReadIndex implements Forwarder.
func (f *HTTPForwarder) ReadIndex(ctx context.Context, leaderAPI string, verify bool) (uint64, error) {
	return f.do(ctx, http.MethodGet, "http://"+leaderAPI+ForwardReadIndexPath+"?verify="+strconv.FormatBool(verify), nil)
}

func (f *HTTPForwarder) do(ctx context.Context, method, url string, body []byte) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Auth-Token", f.token)
	resp, err := f.client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return 0, fmt.Errorf("%w: %v", ErrNotDelivered, err)
		}
		return 0, fmt.Errorf("forward to leader at %s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("read leader response: %w", err)
	}
	var fr ForwardResponse
	if err := json.Unmarshal(raw, &fr); err != nil {
		return 0, fmt.Errorf("leader at %s answered %d with an unreadable body: %.200s", url, resp.StatusCode, raw)
	}
	if fr.Error != nil {
		return 0, fromWire(fr.Error)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("leader at %s answered %d", url, resp.StatusCode)
	}
	return fr.Index, nil
}
