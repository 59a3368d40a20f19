package core

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
	}
	return http.StatusInternalServerError, wire.KindInternal
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
		body = map[string]wire.NovaError{novaErrorKey(code): {Code: code, Message: msg}}
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
