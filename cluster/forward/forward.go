package forward

import (
	"bytes"
	"context"
	"crypto/tls"
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

// Paths are where a peer's API serves the two endpoints of forwarding.
// The API names them (its route table is the one home of HTTP paths) and
// passes them to both ends.
type Paths struct {
	Apply     string // POST: an encoded command to commit
	ReadIndex string // GET: a read index (?verify=true: confirmed by a quorum)
}

// Response is the JSON body of both internal endpoints.
type Response struct {
	Index uint64     `json:"index"`
	Error *WireError `json:"error,omitempty"`
}

// WriteError answers a forwarded request with err in the wire format. The
// server that mounts the Handler uses it for the errors it raises itself
// (authentication), with its own status.
func WriteError(w http.ResponseWriter, status int, err error) {
	we, _ := toWire(err)
	writeJSON(w, status, Response{Error: we})
}

func writeJSON(w http.ResponseWriter, status int, body Response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Leader is what the Handler needs from the peer it runs on.
type Leader interface {
	// ApplyForwarded applies an encoded fsm command and returns its index.
	ApplyForwarded(ctx context.Context, data []byte) (uint64, error)
	// ReadIndex returns an index covering every acknowledged write; with
	// verify, leadership is confirmed by a quorum first.
	ReadIndex(ctx context.Context, verify bool) (uint64, error)
}

// maxCommand bounds a forwarded command's size.
const maxCommand = 8 << 20

// Handler is the leader's end: it serves the two paths.
type Handler struct {
	l     Leader
	paths Paths
}

// NewHandler returns the handler of forwarding for l, at paths.
func NewHandler(l Leader, paths Paths) *Handler { return &Handler{l: l, paths: paths} }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var idx uint64
	var err error
	switch {
	case r.URL.Path == h.paths.Apply && r.Method == http.MethodPost:
		var data []byte
		data, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxCommand))
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			// The smaller of this bound and the server's, whichever was hit.
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("%w: the forwarded command is larger than %d bytes", fsm.ErrInvalid, tooLarge.Limit))
			return
		}
		if err != nil {
			err = fmt.Errorf("%w: read forwarded command: %v", fsm.ErrInvalid, err)
			break
		}
		idx, err = h.l.ApplyForwarded(r.Context(), data)
	case r.URL.Path == h.paths.ReadIndex && r.Method == http.MethodGet:
		verify, _ := strconv.ParseBool(r.URL.Query().Get("verify"))
		idx, err = h.l.ReadIndex(r.Context(), verify)
	default:
		WriteError(w, http.StatusNotFound, fmt.Errorf("%w: no internal endpoint %s %s", fsm.ErrNotFound, r.Method, r.URL.Path))
		return
	}
	if err != nil {
		we, status := toWire(err)
		writeJSON(w, status, Response{Error: we})
		return
	}
	writeJSON(w, http.StatusOK, Response{Index: idx})
}

// Client is the follower's end: it speaks HTTP to the leader's API over
// kept-alive connections, authenticating with the peers' token (and, over
// HTTPS, with this peer's certificate).
type Client struct {
	token  string
	scheme string
	paths  Paths
	hc     *http.Client
}

// NewClient returns a client authenticating with token that forwards to
// the leader's endpoints at paths. With tc it speaks
// HTTPS: tc carries this peer's certificate and the CA that the leader's
// certificate must be signed by (its ServerName is left empty so that it
// is taken from each leader's address).
func NewClient(token string, tc *tls.Config, paths Paths) *Client {
	// Forwarded writes arrive together (a burst of boots, the owners'
	// progress reports): keep a connection for each one in flight, so a
	// burst does not reconnect (and, with TLS, handshake) per write.
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
	scheme := "http"
	if tc != nil {
		tr.TLSClientConfig = tc.Clone()
		scheme = "https"
	}
	return &Client{token: token, scheme: scheme, paths: paths, hc: &http.Client{Transport: tr}}
}

// authenticate sets the peer token on req (none with TLS: the peer
// certificate the transport presents is the credential then).
func (c *Client) authenticate(req *http.Request) {
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
}

// Apply sends an encoded command to the leader whose API listens at
// leaderAPI (host:port) and returns the index it was committed at.
func (c *Client) Apply(ctx context.Context, leaderAPI string, data []byte) (uint64, error) {
	return c.do(ctx, http.MethodPost, leaderAPI, c.paths.Apply, data)
}

// ReadIndex asks the leader at leaderAPI for a read index.
func (c *Client) ReadIndex(ctx context.Context, leaderAPI string, verify bool) (uint64, error) {
	return c.do(ctx, http.MethodGet, leaderAPI, c.paths.ReadIndex+"?verify="+strconv.FormatBool(verify), nil)
}

func (c *Client) do(ctx context.Context, method, leader, path string, body []byte) (uint64, error) {
	if path == "" || path[0] != '/' {
		return 0, fmt.Errorf("forward to leader at %s: the forwarding paths are not set (%+v): the API names them", leader, c.paths)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+leader+path, rd)
	if err != nil {
		return 0, fmt.Errorf("forward to leader at %s: %w", leader, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	c.authenticate(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		if notDelivered(err) {
			return 0, fmt.Errorf("%w: %v", ErrNotDelivered, err)
		}
		return 0, fmt.Errorf("forward to leader at %s: %w", leader, err)
	}
	defer func() {
		// Drain what is left so that the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("read the answer of the leader at %s: %w", leader, err)
	}
	var fr Response
	if err := json.Unmarshal(raw, &fr); err != nil {
		return 0, fmt.Errorf("leader at %s answered %d with an unreadable body: %.200s", leader, resp.StatusCode, raw)
	}
	if fr.Error != nil {
		return 0, fromWire(fr.Error, fmt.Sprintf("leader at %s answered %d", leader, resp.StatusCode))
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("leader at %s answered %d without an error", leader, resp.StatusCode)
	}
	return fr.Index, nil
}

// notDelivered reports whether a transport error happened before the
// request could reach the leader: the connection was never made.
func notDelivered(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Call sends a JSON request to another peer's API at api (host:port) with
// the peers' token and decodes a JSON answer into out. It serves the
// operations an operator applies on every member (the gossip keyring).
func (c *Client) Call(ctx context.Context, api, method, path string, in, out any) error {
	var rd io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+api+path, rd)
	if err != nil {
		return fmt.Errorf("call peer at %s: %w", api, err)
	}
	req.Header.Set("Content-Type", "application/json")
	c.authenticate(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("call peer at %s: %w", api, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read the answer of the peer at %s: %w", api, err)
	}
	if resp.StatusCode >= 300 {
		// The API's native error and the forwarding protocol's both carry
		// error.message.
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := fmt.Sprintf("%.200s", raw)
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return &PeerError{API: api, Status: resp.StatusCode, Message: msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("peer at %s answered an unreadable body: %w", api, err)
	}
	return nil
}

// Raw sends a request with an opaque body to another peer's API and
// returns the response as is; the caller closes its body.
func (c *Client) Raw(ctx context.Context, api, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+api+path, body)
	if err != nil {
		return nil, fmt.Errorf("call peer at %s: %w", api, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	c.authenticate(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("call peer at %s: %w", api, err)
	}
	return resp, nil
}
