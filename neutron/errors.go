package neutron

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Errors of a Neutron call; test with errors.Is.
var (
	// ErrNotFound: the network, subnet or port does not exist (or is not visible to corral).
	ErrNotFound = errors.New("neutron: not found")
	// ErrConflict: Neutron refused the change because of another object: a port in use by
	// another device, a MAC address or fixed IP already taken on the network (409).
	ErrConflict = errors.New("neutron: conflict")
	// ErrInvalid: Neutron refused the request as malformed (400), e.g. a fixed IP outside
	// the subnet.
	ErrInvalid = errors.New("neutron: invalid request")
	// ErrUnauthorized: Keystone refused corral's [neutron] credentials, or Neutron refused its
	// token after one re-authentication (401), or its rights (403).
	ErrUnauthorized = errors.New("neutron: credentials refused")
	// ErrUnavailable: Neutron or Keystone could not be reached or answered an error of its
	// own (5xx, timeout, no network endpoint in the catalog).
	ErrUnavailable = errors.New("neutron: unavailable")
	// ErrChanged: a change made conditional on the revision the caller read
	// (If-Match: revision_number) was refused because the object changed
	// since (412); nothing was changed.
	ErrChanged = errors.New("neutron: changed since read")
)

// APIError is one error answer of Neutron: its HTTP status and its
// NeutronError document ({"NeutronError": {"type", "message", "detail"}}).
type APIError struct {
	Method, URL string
	Status      int
	Type        string // e.g. MacAddressInUse, PortNotFound, IpAddressAlreadyAllocated
	Message     string
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "no error message"
	}
	if e.Type != "" {
		return fmt.Sprintf("%s %s answered %d %s: %s", e.Method, e.URL, e.Status, e.Type, msg)
	}
	return fmt.Sprintf("%s %s answered %d: %s", e.Method, e.URL, e.Status, msg)
}

// ErrorType is Neutron's error type of err ("" when err holds no answer of Neutron).
func ErrorType(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Type
	}
	return ""
}

// apiError reads Neutron's error document from body.
func apiError(method, url string, status int, body []byte) *APIError {
	ae := &APIError{Method: method, URL: url, Status: status}
	var doc struct {
		NeutronError struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"NeutronError"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.NeutronError.Message != "" {
		ae.Type, ae.Message = doc.NeutronError.Type, doc.NeutronError.Message
	} else if len(body) > 0 {
		ae.Message = string(body[:min(len(body), 300)])
	}
	return ae
}

// Message is Neutron's own message in err (err's text when err holds no
// answer of Neutron).
func Message(err error) string {
	var ae *APIError
	if errors.As(err, &ae) && ae.Message != "" {
		return ae.Message
	}
	return err.Error()
}
