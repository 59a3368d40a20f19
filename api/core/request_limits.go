package core

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/corral-dev/corral/wire"
)

// DefaultMaxBodyBytes is the default largest request body.
const DefaultMaxBodyBytes = 1 << 20

// Limits bound what one client may send (zero values: the defaults).
type Limits struct {
	// MaxBodyBytes is the largest request body; a larger one answers 413.
	MaxBodyBytes int64
	// WriteRate is how many writes (POST, PUT, PATCH, DELETE) per second one
	// client (remote IP address) may send, with WriteBurst at once (default
	// twice the rate); more answer 429 with Retry-After. Zero: no limit.
	WriteRate  float64
	WriteBurst int
}

func (l *Limits) setDefaults() {
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.WriteBurst == 0 {
		l.WriteBurst = max(1, int(math.Ceil(2*l.WriteRate)))
	}
}

// bodyTooLarge returns the 413 error for a body over limit bytes.
func bodyTooLarge(limit int64) error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("the request body is larger than %d bytes", limit))
}

// IsBodyTooLarge reports whether err came from reading past the limit.
func IsBodyTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// initLimits applies the defaults and makes the clients' buckets.
func (s *Server) initLimits() {
	s.cfg.Limits.setDefaults()
	if s.cfg.Limits.WriteRate > 0 {
		s.limiters = &clientLimiters{rate: rate.Limit(s.cfg.Limits.WriteRate), burst: s.cfg.Limits.WriteBurst, m: map[string]*clientLimiter{}}
	}
}

// clientLimiters keeps a token bucket per client address.
type clientLimiters struct {
	rate  rate.Limit
	burst int

	mu    sync.Mutex
	m     map[string]*clientLimiter
	swept time.Time
}

type clientLimiter struct {
	l    *rate.Limiter
	last time.Time
}

// idleLimiter is how long a client's bucket is kept after its last write.
const idleLimiter = 10 * time.Minute

func (c *clientLimiters) reserve(client string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.swept) > time.Minute {
		for k, v := range c.m {
			if now.Sub(v.last) > idleLimiter {
				delete(c.m, k)
			}
		}
		c.swept = now
	}
	cl, ok := c.m[client]
	if !ok {
		cl = &clientLimiter{l: rate.NewLimiter(c.rate, c.burst)}
		c.m[client] = cl
	}
	cl.last = now
	r := cl.l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// limit refuses bodies over the limit (413) and writes over a client's
// rate (429 with Retry-After). The peers' endpoints have the same body
// limit; they are exempt from the rate (their requests carry every
// client's writes). Snapshots are bounded by their own handler: bounded
// is false for them.
func (s *Server) limit(c echo.Context) (bounded bool, err error) {
	lim, buckets := s.cfg.Limits, s.limiters
	r := c.Request()
	if r.URL.Path == wire.SnapshotPath || r.URL.Path == PeerSnapshotPath {
		return false, nil // bounded by the snapshot handler
	}
	if r.ContentLength > lim.MaxBodyBytes {
		return true, bodyTooLarge(lim.MaxBodyBytes)
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(c.Response(), r.Body, lim.MaxBodyBytes)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if buckets == nil || IsPeerPath(r.URL.Path) {
			break
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if wait := buckets.reserve(host, time.Now()); wait > 0 {
			s.rateLimited.Inc()
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			return true, echo.NewHTTPError(http.StatusTooManyRequests,
				fmt.Sprintf("too many writes from %s: at most %g per second (burst %d); retry after %s", host, lim.WriteRate, lim.WriteBurst, wait.Round(time.Millisecond)))
		}
	}
	return true, nil
}
