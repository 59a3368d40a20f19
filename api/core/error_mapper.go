package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// CodedError is an error that carries its own status and error code
// (Placement's errors, api/placement).
type CodedError interface {
	error
	HTTPStatus() int
	ErrorCode() string
}

// Classify is the one place that maps an error to an HTTP status and a kind.
func Classify(err error) (int, string) {
	var he *echo.HTTPError
	var ce CodedError
	var pe *forward.PeerError
	switch {
	case errors.As(err, &ce):
		return ce.HTTPStatus(), ce.ErrorCode()
	case errors.As(err, &he):
		return he.Code, strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))
	case errors.Is(err, ErrBadRequest), errors.Is(err, fsm.ErrInvalid), errors.Is(err, cluster.ErrBadConsistency):
		return http.StatusBadRequest, wire.KindInvalid
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, wire.KindUnauthorized
	case errors.Is(err, ErrForbidden), errors.Is(err, fsm.ErrQuotaExceeded):
		return http.StatusForbidden, wire.KindForbidden
	case errors.Is(err, ErrAuthUnavailable):
		return http.StatusServiceUnavailable, wire.KindAuthUnavailable
	case errors.Is(err, fsm.ErrNotFound):
		return http.StatusNotFound, wire.KindNotFound
	case errors.Is(err, fsm.ErrConflict):
		return http.StatusConflict, wire.KindConflict
	case errors.Is(err, cluster.ErrNotLeader):
		return http.StatusServiceUnavailable, wire.KindNotLeader
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotReady), errors.Is(err, cluster.ErrShutdown),
		errors.Is(err, forward.ErrNotDelivered):
		// Not delivered: the leader never saw the request (it died or an
		// election is under way), so nothing was applied; retry.
		return http.StatusServiceUnavailable, wire.KindNoLeader
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, wire.KindTimeout
	case errors.As(err, &pe) && pe.Status >= 400 && pe.Status < 500:
		// Another peer refused a call relayed for this request: its answer.
		return pe.Status, strings.ToLower(strings.ReplaceAll(http.StatusText(pe.Status), " ", "_"))
	case errors.As(err, &pe) && pe.Status == http.StatusServiceUnavailable:
		return http.StatusServiceUnavailable, wire.KindNoLeader
	case errors.As(err, &pe):
		// The peer failed: this peer is the gateway to it.
		return http.StatusBadGateway, wire.KindInternal
	}
	return http.StatusInternalServerError, wire.KindInternal
}

// novaErrorKey is the top-level key Nova uses for each status (its
// Fault's names, nova/api/openstack/wsgi.py); every other status is a
// computeFault, as in Nova (406 among them).
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
	case http.StatusMethodNotAllowed:
		return "badMethod"
	case http.StatusConflict:
		return "conflictingRequest"
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return "overLimit"
	case http.StatusUnsupportedMediaType:
		return "badMediaType"
	case http.StatusNotImplemented:
		return "notImplemented"
	case http.StatusServiceUnavailable:
		return "serviceUnavailable"
	}
	return "computeFault"
}

// NovaErrorKeys are every top-level key of Nova's error bodies.
var NovaErrorKeys = []string{"badRequest", "unauthorized", "forbidden", "itemNotFound", "badMethod",
	"conflictingRequest", "overLimit", "badMediaType", "notImplemented", "serviceUnavailable", "computeFault"}

// sentinelPrefixes are the sentinels whose text leads the message of the
// errors that wrap them ("bad request: ..."); Nova's messages say only
// what follows.
var sentinelPrefixes = []error{ErrBadRequest, ErrForbidden, fsm.ErrInvalid, fsm.ErrNotFound, fsm.ErrConflict}

// novaMessage is err's message as Nova words its errors: without the
// sentinels' words in front; the router's own 404 and 405 as Nova's.
func novaMessage(err error, msg, method string) string {
	switch {
	case errors.Is(err, echo.ErrNotFound):
		return "The resource could not be found."
	case errors.Is(err, echo.ErrMethodNotAllowed):
		return "The method " + method + " is not allowed for this resource."
	}
	for trimmed := true; trimmed; {
		trimmed = false
		for _, s := range sentinelPrefixes {
			if rest, ok := strings.CutPrefix(msg, s.Error()+": "); ok && errors.Is(err, s) {
				msg, trimmed = rest, true
			}
		}
	}
	return msg
}

// failureLevel is the level a 5xx answer is logged at: a 501 is the
// answer to what corral does not do (a hypervisor's uptime, as Nova's
// Ironic driver), not a failure; 503 and 504 are the passing ones (an
// election, Keystone not answering) the client retries; every other is
// an error.
func failureLevel(code int) slog.Level {
	switch code {
	case http.StatusNotImplemented:
		return slog.LevelDebug
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// errorHandler renders every error: Nova's shape under the compute API,
// Placement's under Placement, the forwarding protocol's to peers, the
// native shape elsewhere. Internal errors are logged with the request id.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, kind := Classify(err)
	msg := err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg = fmt.Sprint(he.Message)
		if he.Internal != nil {
			msg += ": " + he.Internal.Error()
		}
	}
	rid := RequestID(c)
	if code >= 500 {
		s.log.Log(c.Request().Context(), failureLevel(code), "request failed", "method", c.Request().Method,
			"path", c.Request().URL.Path, "status", code, "err", err, "request_id", rid)
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
	case strings.HasPrefix(path, wire.PlacementPrefix):
		pcode := "placement.undefined_code"
		var ce CodedError
		switch {
		case errors.As(err, &ce) && ce.ErrorCode() != "":
			pcode = ce.ErrorCode()
		case code == http.StatusForbidden && !errors.Is(err, ErrForbidden):
			pcode = "placement.corral_owned"
		}
		body = map[string]any{"errors": []map[string]any{{"status": code, "code": pcode,
			"title": http.StatusText(code), "detail": msg, "request_id": rid}}}
	case strings.HasPrefix(path, wire.ComputePrefix):
		ne := wire.NovaError{Code: code, Message: novaMessage(err, msg, c.Request().Method)}
		if code == http.StatusRequestEntityTooLarge || code == http.StatusTooManyRequests {
			ne.RetryAfter = c.Response().Header().Get("Retry-After")
		}
		body = map[string]wire.NovaError{novaErrorKey(code): ne}
	case IsPeerPath(path):
		// Peers read the forwarding protocol's own error format.
		forward.WriteError(c.Response(), code, err)
		return
	default:
		body = wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Kind: kind, Message: msg, RequestID: rid}}
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(code)
		return
	}
	_ = c.JSON(code, body)
}
