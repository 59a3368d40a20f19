package placement

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them; test with errors.Is, and use ErrorCode and HTTPStatus to answer in
// Placement's terms.
var (
	// ErrNotFound: the provider, inventory or consumer does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request is malformed or breaks a validation rule (400).
	ErrInvalid = errors.New("invalid request")
	// ErrConcurrentUpdate: the provider or consumer generation the caller
	// passed is not the current one (409, placement.concurrent_update).
	ErrConcurrentUpdate = errors.New("concurrent update")
	// ErrInventoryInUse: the change would remove or shrink inventory below
	// what allocations use (409, placement.inventory.inuse).
	ErrInventoryInUse = errors.New("inventory in use")
	// ErrNotEnough: an allocation does not fit the provider's inventory
	// (409): not enough capacity, min_unit/max_unit/step_size violated, or
	// no inventory of that class at all.
	ErrNotEnough = errors.New("not enough resources")
	// ErrDuplicate: a provider with that UUID or name already exists (409).
	ErrDuplicate = errors.New("already exists")
	// ErrInUse: the provider still has allocations or children (409).
	ErrInUse = errors.New("in use")
)

// Placement error codes, as returned in the "code" field of an error body.
const (
	CodeUndefined        = "placement.undefined_code"
	CodeConcurrentUpdate = "placement.concurrent_update"
	CodeInventoryInUse   = "placement.inventory.inuse"
	CodeDuplicateName    = "placement.duplicate_name"
	CodeProviderInUse    = "placement.resource_provider.inuse"
	CodeCannotDelParent  = "placement.resource_provider.cannot_delete_parent"
	CodeProviderNotFound = "placement.resource_provider.not_found"
)

// Error is the concrete type of every error this package returns.
type Error struct {
	Kind error  // one of the sentinel errors
	Code string // Placement error code
	Msg  string // operator-facing explanation
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel, so errors.Is(err, ErrNotFound) works.
func (e *Error) Unwrap() error { return e.Kind }

// ErrorCode returns the Placement error code for err:
// placement.undefined_code when err carries no specific code.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return CodeUndefined
}

// HTTPStatus returns the status Placement answers with for err: 404, 400,
// 409, or 500 for an error not from this package (200 for nil).
func HTTPStatus(err error) int {
	switch {
	case err == nil:
		return 200
	case errors.Is(err, ErrNotFound):
		return 404
	case errors.Is(err, ErrInvalid):
		return 400
	case errors.Is(err, ErrConcurrentUpdate), errors.Is(err, ErrInventoryInUse),
		errors.Is(err, ErrNotEnough), errors.Is(err, ErrDuplicate), errors.Is(err, ErrInUse):
		return 409
	}
	return 500
}

func newErr(kind error, code, format string, args ...any) error {
	if code == "" {
		switch kind {
		case ErrConcurrentUpdate:
			code = CodeConcurrentUpdate
		case ErrInventoryInUse:
			code = CodeInventoryInUse
		default:
			code = CodeUndefined
		}
	}
	return &Error{Kind: kind, Code: code, Msg: fmt.Sprintf(format, args...)}
}

func invalidf(format string, args ...any) error {
	return newErr(ErrInvalid, "", format, args...)
}

func providerNotFound(uuid string) error {
	return newErr(ErrNotFound, CodeProviderNotFound, "no resource provider with uuid %s", uuid)
}

func generationConflict(p *provider, want uint64) error {
	return newErr(ErrConcurrentUpdate, "",
		"resource provider %s (%s) generation is %d, the request expected %d: "+
			"another change was made since it was read; read it again and retry",
		p.uuid, p.name, p.gen, want)
}
