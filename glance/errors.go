package glance

import "errors"

// Errors of the image service; test with errors.Is.
var (
	ErrNotFound     = errors.New("image not found")
	ErrUnauthorized = errors.New("the image service refused the token")
	ErrUnavailable  = errors.New("the image service is unavailable")
	// ErrInvalid is Glance's 400 (a change it refuses), ErrConflict its
	// 409.
	ErrInvalid  = errors.New("the image service refused the request")
	ErrConflict = errors.New("the image service answered a conflict")
)
