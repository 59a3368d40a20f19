package wire

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

// Kinds of the native error (ErrorDetail.Kind), besides the snake-cased
// status texts of other HTTP errors ("too_many_requests", ...).
const (
	KindInvalid         = "invalid"
	KindUnauthorized    = "unauthorized"
	KindForbidden       = "forbidden"
	KindAuthUnavailable = "auth_unavailable"
	KindNotFound        = "not_found"
	KindConflict        = "conflict"
	KindNotLeader       = "not_leader"
	KindNoLeader        = "no_leader"
	KindTimeout         = "timeout"
	KindInternal        = "internal"
)

// NovaError is the one member of the compute API's error body, under a key
// that names the status (itemNotFound, badRequest, ...).
type NovaError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// RetryAfter is the Retry-After of a 413 or 429 (overLimit), when set.
	RetryAfter string `json:"retryAfter,omitempty"`
}
