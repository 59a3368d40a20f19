package core

import (
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

var reqIDRE = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

const ctxRequestID = "request_id"

// requestIDMiddleware gives every request an OpenStack request id, keeping
// a well-formed one the client sent.
func (s *Server) requestIDMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rid := c.Request().Header.Get("X-OpenStack-Request-Id")
		if !reqIDRE.MatchString(rid) {
			rid = "req-" + uuid.NewString()
		}
		c.Set(ctxRequestID, rid)
		c.Response().Header().Set("X-OpenStack-Request-Id", rid)
		c.Response().Header().Set("X-Compute-Request-Id", rid)
		return next(c)
	}
}

// RequestID is the request's OpenStack request id.
func RequestID(c echo.Context) string {
	s, _ := c.Get(ctxRequestID).(string)
	return s
}

// logMiddleware observes every request's duration and logs it at debug
// level (the peers' endpoints, metrics and health aside).
func (s *Server) logMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status, _ = Classify(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.reqDur.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Observe(d.Seconds())
		if !IsPeerPath(route) && route != "/metrics" && route != "/healthz" && route != "/readyz" {
			s.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", status, "duration", d, "request_id", RequestID(c))
		}
		return err
	}
}

// BindStrict decodes a JSON body, rejecting unknown fields and trailing data.
func BindStrict(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body) // bounded by limitMiddleware
	if err != nil {
		if IsBodyTooLarge(err) {
			return err // limitMiddleware answers 413
		}
		return BadRequest("cannot read the request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return BadRequest("the request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return BadRequest("malformed JSON body: %v", err)
	}
	// Only whitespace may follow the object (dec.More misses a stray '}' or ']').
	if rest := strings.TrimSpace(string(body[dec.InputOffset():])); rest != "" {
		return BadRequest("malformed JSON body: unexpected data after the JSON object")
	}
	return nil
}
