package glance

import "errors"

// Errors of an image lookup; test with errors.Is.
var (
	ErrNotFound     = errors.New("image not found")
	ErrUnauthorized = errors.New("the image service refused the token")
	ErrUnavailable  = errors.New("the image service is unavailable")
)
