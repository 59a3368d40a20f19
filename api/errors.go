package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
)

// Errors detected by the API layer itself.
var (
	ErrBadRequest   = errors.New("bad request")
	ErrUnauthorized = errors.New("authentication required: send a token in X-Auth-Token or Authorization: Bearer (set CORRAL_TOKEN for the CLI)")
	ErrForbidden    = errors.New("forbidden")
	// ErrAuthUnavailable: the token could not be validated because Keystone
	// did not answer; the client may retry (503, not 401: its credentials
	// may be fine).
	ErrAuthUnavailable = errors.New("the identity service (Keystone) cannot validate the token now; retry later")
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// ErrorBody is the JSON error of the native /v1 API.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes one error.
type ErrorDetail struct {
	Code      int    `json:"code"`
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	RequestID string `json:"request_id,omitempty"`
}

// Kinds of the native error body (ErrorDetail.Kind), besides the
// snake-cased status texts of other HTTP errors.
const (
	kindInvalid   = "invalid"
	kindNotFound  = "not_found"
	kindConflict  = "conflict"
	kindNotLeader = "not_leader"
	kindNoLeader  = "no_leader"
	kindTimeout   = "timeout"
	kindInternal  = "internal"
)

// classify is the one place that maps an error to an HTTP status and a kind.
func classify(err error) (int, string) {
	var he *echo.HTTPError
	var pe *placementError
	switch {
	case errors.As(err, &pe):
		return pe.status, pe.code
	case errors.As(err, &he):
		return he.Code, strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))
	case errors.Is(err, ErrBadRequest), errors.Is(err, fsm.ErrInvalid), errors.Is(err, cluster.ErrBadConsistency):
		return http.StatusBadRequest, kindInvalid
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, ErrAuthUnavailable):
		return http.StatusServiceUnavailable, "auth_unavailable"
	case errors.Is(err, fsm.ErrNotFound):
		return http.StatusNotFound, kindNotFound
	case errors.Is(err, fsm.ErrConflict):
		return http.StatusConflict, kindConflict
	case errors.Is(err, cluster.ErrNotLeader):
		return http.StatusServiceUnavailable, kindNotLeader
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotReady), errors.Is(err, cluster.ErrShutdown),
		errors.Is(err, forward.ErrNotDelivered):
		// Not delivered: the leader never saw the request (it died or an
		// election is under way), so nothing was applied; retry.
		return http.StatusServiceUnavailable, kindNoLeader
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, kindTimeout
	}
	return http.StatusInternalServerError, kindInternal
}

// novaErrorKey is the top-level key Nova uses for each status.
func novaErrorKey(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "badRequest"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "itemNotFound"
	case http.StatusConflict:
		return "conflictingRequest"
	case http.StatusNotAcceptable:
		return "notAcceptable"
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return "serviceUnavailable"
	case http.StatusMethodNotAllowed:
		return "methodNotAllowed"
	}
	return "computeFault"
}

// errorHandler renders every error: Nova's shape under /compute, the
// native shape elsewhere. Internal errors are logged with the request id.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, kind := classify(err)
	msg := err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg = fmt.Sprint(he.Message)
		if he.Internal != nil {
			msg += ": " + he.Internal.Error()
		}
	}
	rid := requestID(c)
	if code >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path,
			"status", code, "err", err, "request_id", rid)
	}
	if code == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "1")
	}
	if code == http.StatusUnauthorized && s.cfg.Keystone != nil {
		c.Response().Header().Set("WWW-Authenticate", s.cfg.Keystone.WWWAuthenticate())
	}
	var body any
	path := c.Request().URL.Path
	switch {
	case strings.HasPrefix(path, placementPrefix):
		pcode := "placement.undefined_code"
		var pe *placementError
		switch {
		case errors.As(err, &pe) && pe.code != "":
			pcode = pe.code
		case code == http.StatusForbidden && !errors.Is(err, ErrForbidden):
			pcode = "placement.corral_owned"
		}
		body = map[string]any{"errors": []map[string]any{{"status": code, "code": pcode,
			"title": http.StatusText(code), "detail": msg, "request_id": rid}}}
	case strings.HasPrefix(path, novaPrefix):
		body = map[string]any{novaErrorKey(code): map[string]any{"code": code, "message": msg}}
	case strings.HasPrefix(path, PeerPathPrefix):
		// Peers read the forwarding protocol's own error format.
		forward.WriteError(c.Response(), code, err)
		return
	default:
		body = ErrorBody{Error: ErrorDetail{Code: code, Kind: kind, Message: msg, RequestID: rid}}
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(code)
		return
	}
	_ = c.JSON(code, body)
}
