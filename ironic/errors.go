package ironic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
)

// Sentinel errors. Every error returned by Client wraps at most one of them; test with errors.Is.
var (
	// ErrNotFound: the node, allocation or VIF does not exist (HTTP 404).
	ErrNotFound = errors.New("not found in Ironic")
	// ErrConflict: HTTP 409 other than a node lock (instance_uuid already set, allocation name
	// or UUID exists, delete of an allocation on an active node, ...), or a node in a state that
	// does not allow the request.
	ErrConflict = errors.New("conflict in Ironic")
	// ErrNodeLocked: the node stayed locked by a conductor through every retry.
	ErrNodeLocked = errors.New("Ironic node is locked")
	// ErrDeployFailed: the node landed in "deploy failed", "error" or "clean failed"; the
	// message carries Ironic's last_error.
	ErrDeployFailed = errors.New("deployment failed")
	// ErrUnsupported: the negotiated microversion lacks the feature (e.g. allocations below 1.52).
	ErrUnsupported = errors.New("not supported by this Ironic")
	// ErrInvalid: Ironic rejected the request as invalid (HTTP 400), e.g. a provision action
	// that the node's state does not allow or a malformed trait.
	ErrInvalid = errors.New("rejected by Ironic as invalid")
	// ErrUnavailable: Ironic could not be reached, timed out or answered 502/503/504.
	// Transient: the same request may succeed later.
	ErrUnavailable = errors.New("Ironic unavailable")
)

// ErrAuthentication: the client could not authenticate to Ironic or find it in Keystone's catalog
// (wrong credentials, unreachable Keystone, no baremetal endpoint). The operator must fix the
// [ironic] options the message names.
var ErrAuthentication = errors.New("cannot authenticate to Ironic")

// Error is an error of one Ironic call. It unwraps to its sentinel (Kind) and to the cause
// (a gophercloud.ErrUnexpectedResponseCode or a transport error).
type Error struct {
	Call   string // client method, e.g. "CreateAllocation"
	Method string // HTTP method of the failed request ("" when no request was sent)
	URL    string // the full request URL; Error() leaves out its query
	Status int    // HTTP status; 0 when no response was received
	Fault  string // Ironic's faultstring (or the raw body)
	Kind   error  // one of the sentinels above, or nil
	Err    error  // the cause
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("ironic ")
	b.WriteString(e.Call)
	if e.Method != "" {
		u, _, _ := strings.Cut(e.URL, "?")
		fmt.Fprintf(&b, " (%s %s)", e.Method, u)
	}
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d: ", e.Status)
	}
	switch {
	case e.Fault != "":
		b.WriteString(e.Fault)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	if e.Kind != nil {
		fmt.Fprintf(&b, " [%v]", e.Kind)
	}
	return b.String()
}

// Unwrap exposes both the sentinel and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// StatusOf returns the HTTP status carried by err (0 if none).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	var g gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &g) {
		return g.Actual
	}
	return 0
}

// FaultOf returns Ironic's faultstring carried by err ("" if none).
func FaultOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Fault
	}
	return ""
}

// faultString extracts the message of an Ironic error body. The body is
// {"error_message": "<JSON>"} where the inner JSON has a faultstring (errors raised by the API
// controllers) or a description (errors raised before them, e.g. version checks). Anything
// else falls back to the raw body.
func faultString(body []byte) string {
	raw := strings.TrimSpace(string(body))
	var outer struct {
		ErrorMessage json.RawMessage `json:"error_message"`
	}
	if err := json.Unmarshal(body, &outer); err != nil || len(outer.ErrorMessage) == 0 {
		return raw
	}
	var inner string
	if err := json.Unmarshal(outer.ErrorMessage, &inner); err != nil {
		// error_message may already be an object.
		inner = string(outer.ErrorMessage)
	}
	var fault struct {
		Faultstring *string `json:"faultstring"`
		Description *string `json:"description"`
		Title       *string `json:"title"`
	}
	if err := json.Unmarshal([]byte(inner), &fault); err != nil {
		return inner
	}
	switch {
	case fault.Faultstring != nil:
		return *fault.Faultstring
	case fault.Description != nil && *fault.Description != "":
		return *fault.Description
	case fault.Title != nil:
		return *fault.Title
	}
	return inner
}

// isLockedFault reports whether a 409 faultstring is Ironic's NodeLocked.
func isLockedFault(fault string) bool {
	return strings.Contains(fault, "is locked by host")
}

// classifyError turns the error of one request into an *Error with its sentinel.
func classifyError(call string, err error) *Error {
	e := &Error{Call: call, Err: err}
	var g gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &g) {
		e.Method, e.URL, e.Status = g.Method, g.URL, g.Actual
		e.Fault = faultString(g.Body)
		e.Kind = kindOf(g.Actual, e.Fault)
		return e
	}
	switch {
	case errors.Is(err, context.Canceled):
		// The caller gave up: no sentinel, the context error is in the chain.
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = ErrUnavailable
	default:
		var je *json.SyntaxError
		var te *json.UnmarshalTypeError
		if !errors.As(err, &je) && !errors.As(err, &te) {
			e.Kind = ErrUnavailable
		}
	}
	return e
}

func kindOf(status int, fault string) error {
	switch {
	case status == http.StatusNotFound && strings.Contains(fault, "does not allow"):
		return ErrUnsupported
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusConflict && isLockedFault(fault):
		return ErrNodeLocked
	case status == http.StatusConflict:
		return ErrConflict
	case status == http.StatusNotAcceptable || status == http.StatusMethodNotAllowed:
		return ErrUnsupported
	case status == http.StatusBadRequest:
		return ErrInvalid
	case status == http.StatusBadGateway || status == http.StatusServiceUnavailable ||
		status == http.StatusGatewayTimeout:
		return ErrUnavailable
	}
	return nil
}

// isTransient reports whether an idempotent request that failed with err may be retried.
func isTransient(e *Error) bool {
	if errors.Is(e.Err, context.Canceled) {
		return false
	}
	return e.Kind == ErrUnavailable
}

// newError builds an error that did not come from an HTTP exchange.
func newError(call string, kind error, format string, args ...any) *Error {
	return &Error{Call: call, Kind: kind, Fault: fmt.Sprintf(format, args...)}
}
