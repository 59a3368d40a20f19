package core

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

var reqIDRE = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// The headers every request reads or every answer carries, in their
// canonical form: a map access with them allocates nothing (Header.Get
// and Set canonicalize the name on each call).
var (
	hdrRequestID        = http.CanonicalHeaderKey("X-OpenStack-Request-Id")
	hdrComputeRequestID = http.CanonicalHeaderKey("X-Compute-Request-Id")
)

// setRequestID gives the request an OpenStack request id, keeping a
// well-formed one the client sent, and sets it on the answer.
func setRequestID(c echo.Context) {
	rid := ""
	if v := c.Request().Header[hdrRequestID]; len(v) > 0 && reqIDRE.MatchString(v[0]) {
		rid = v[0]
	} else {
		rid = newRequestID()
	}
	ids := []string{rid} // one value for both names (each is only ever replaced)
	h := c.Response().Header()
	h[hdrRequestID], h[hdrComputeRequestID] = ids, ids
}

// newRequestID is "req-" and a random (version 4) UUID.
func newRequestID() string {
	u := uuid.New()
	var b [40]byte
	copy(b[:], "req-")
	hex.Encode(b[4:12], u[0:4])
	b[12] = '-'
	hex.Encode(b[13:17], u[4:6])
	b[17] = '-'
	hex.Encode(b[18:22], u[6:8])
	b[22] = '-'
	hex.Encode(b[23:27], u[8:10])
	b[27] = '-'
	hex.Encode(b[28:], u[10:])
	return string(b[:])
}

// RequestID is the request's OpenStack request id (its answer's header
// holds it from the request's start).
func RequestID(c echo.Context) string {
	if v := c.Response().Header()[hdrRequestID]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// routeKey names the duration histogram of one route and outcome.
type routeKey struct {
	method, route string
	status        int
}

// observer is the request duration histogram of k, made once per route
// and outcome (WithLabelValues hashes its labels on every call).
func (s *Server) observer(k routeKey) prometheus.Observer {
	if o, ok := s.observers.Load(k); ok {
		return o.(prometheus.Observer)
	}
	o, _ := s.observers.LoadOrStore(k, s.reqDur.WithLabelValues(k.method, k.route, strconv.Itoa(k.status)))
	return o.(prometheus.Observer)
}

// logRequest observes a request's duration and logs it at debug level
// (the peers' endpoints, metrics and health aside).
func (s *Server) logRequest(c echo.Context, start time.Time, err error) {
	status := c.Response().Status
	if err != nil {
		status, _ = Classify(err)
	}
	route := c.Path()
	if route == "" {
		route = "unmatched"
	}
	d := time.Since(start)
	r := c.Request()
	s.observer(routeKey{r.Method, route, status}).Observe(d.Seconds())
	if IsPeerPath(route) || route == "/metrics" || route == "/healthz" || route == "/readyz" ||
		!s.log.Enabled(r.Context(), slog.LevelDebug) {
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", status), slog.Duration("duration", d), slog.String("request_id", RequestID(c)))
}

// bodies are the buffers request bodies are read into: the decoder
// copies what it keeps (strings, json.RawMessage), so a buffer serves the
// next request once its body is decoded.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody bounds the buffers kept for the next request.
const maxPooledBody = 64 << 10

// BindStrict decodes a JSON body, rejecting a body that is not JSON (by
// its Content-Type: 415), is not UTF-8 text, or carries a lone UTF-16
// surrogate (\ud800 without its pair: no text), unknown fields and
// trailing data. The body is read once, into a pooled buffer, and decoded
// once.
func BindStrict(c echo.Context, v any) error {
	if err := CheckContentType(c.Request()); err != nil {
		return err
	}
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			buf.Reset()
			bodies.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(c.Request().Body); err != nil { // bounded by the core's limit
		if IsBodyTooLarge(err) {
			return err // the core answers 413
		}
		return BadRequest("cannot read the request body: %v", err)
	}
	return decodeStrict(buf.Bytes(), v)
}

// decodeStrict is BindStrict's decoding of a body read whole.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return BadRequest("the request body is empty; send a JSON object")
	}
	if err := CheckText(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return BadRequest("malformed JSON body: %v", err)
	}
	// Only whitespace may follow the object (dec.More misses a stray '}' or ']').
	if rest := bytes.TrimSpace(body[dec.InputOffset():]); len(rest) != 0 {
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
