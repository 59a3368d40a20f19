package core

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

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

// BindStrict decodes a JSON body, rejecting a body that is not JSON (by
// its Content-Type: 415), is not UTF-8 text, or carries a lone UTF-16
// surrogate (\ud800 without its pair: no text), unknown fields and
// trailing data.
func BindStrict(c echo.Context, v any) error {
	if err := CheckContentType(c.Request()); err != nil {
		return err
	}
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
	if err := CheckText(body); err != nil {
		return err
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

// jsonMediaTypes are the bodies the API reads, as Nova takes them; a
// request without a Content-Type, with an empty one or text/plain (what
// some HTTP libraries send by default) is read as JSON too.
var jsonMediaTypes = map[string]bool{"": true, "text/plain": true, "application/json": true,
	"application/vnd.openstack.compute+json": true}

// CheckContentType refuses a request whose Content-Type names a body
// that is not JSON (415, as Nova answers "Unsupported Content-Type").
func CheckContentType(r *http.Request) error {
	ct, ok := r.Header["Content-Type"]
	if !ok || len(ct) == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct[0])
	if strings.TrimSpace(ct[0]) == "" {
		mt, err = "", nil
	}
	if err != nil || len(ct) > 1 || !jsonMediaTypes[strings.ToLower(mt)] {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "Unsupported Content-Type")
	}
	return nil
}

// CheckText refuses a JSON body that is not UTF-8, or whose strings hold
// an escaped UTF-16 surrogate without its pair: encoding/json would read
// either as U+FFFD and store a character the client never sent.
func CheckText(body []byte) error {
	if !utf8.Valid(body) {
		return BadRequest("Malformed request body: the body is not UTF-8 text")
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' || i+1 >= len(body) {
			continue
		}
		if body[i+1] != 'u' {
			i++ // an escaped character: \\, \", \n, ...
			continue
		}
		r, ok := escapedRune(body, i)
		switch {
		case !ok:
			i++ // not an escape encoding/json takes: it refuses the body
		case utf16.IsSurrogate(r):
			if low, ok := escapedRune(body, i+6); r < 0xdc00 && ok && low >= 0xdc00 && low <= 0xdfff {
				i += 11 // a pair: one character
				continue
			}
			return BadRequest("Malformed request body: a string holds a lone UTF-16 surrogate (\\u%04x), which is no character", r)
		default:
			i += 5
		}
	}
	return nil
}

// escapedRune reads the \uXXXX escape at body[i:].
func escapedRune(body []byte, i int) (rune, bool) {
	if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 32)
	return rune(n), err == nil
}
