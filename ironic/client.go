package ironic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxVersion is the highest Ironic API microversion corral speaks.
const DefaultMaxVersion = "1.82"

// Microversions at which features used by corral appeared.
const (
	mvFields      = 8  // ?fields= on node GET and list
	mvVIFs        = 28 // /v1/nodes/{id}/vifs
	mvAllocations = 52 // /v1/allocations
)

const (
	defaultRequestTimeout = 30 * time.Second
	defaultLockedRetries  = 10
	defaultPollInterval   = 100 * time.Millisecond
	defaultPageSize       = 1000 // Ironic's max_limit; limit=0 is rejected

	lockedBackoffStart = 200 * time.Millisecond
	lockedBackoffMax   = 2 * time.Second

	transientRetries      = 3
	transientBackoffStart = 100 * time.Millisecond
)

// Options configure a Client.
type Options struct {
	URL            string        // Ironic root URL, e.g. http://127.0.0.1:6385 (a trailing /v1 is accepted); with Auth password, "" means Keystone's catalog
	Auth           Auth          // how to authenticate (default none)
	MaxVersion     string        // highest microversion to use; default DefaultMaxVersion
	RequestTimeout time.Duration // per HTTP request; default 30s
	LockedRetries  int           // retries on 409 NodeLocked; default 10, negative = none
	PollInterval   time.Duration // provision state and allocation polling; default 100ms
	Logger         *slog.Logger  // default slog.Default()
	// Registerer, when set, receives corral_ironic_request_duration_seconds{call,outcome} and
	// corral_ironic_errors_total{call,code}. Clients sharing a Registerer share the collectors.
	Registerer prometheus.Registerer
	// HTTPClient, when set, is the HTTP client used (its Timeout should be zero: RequestTimeout
	// applies per request).
	HTTPClient *http.Client
	// UserAgent, when set, is sent before "corral" in User-Agent (e.g.
	// "corral-host/compute-1"), so Ironic's logs show which host acted.
	UserAgent string

	pageSize int // list page size; default defaultPageSize
}

// Client talks to one Ironic through gophercloud. It is safe for concurrent use.
type Client struct {
	opts    Options
	root    string // root URL without trailing slash
	sc      *gophercloud.ServiceClient
	version string
	minor   int
	log     *slog.Logger
	met     *metrics
}

// New authenticates as opts.Auth says (with Keystone: the service user's token, and Ironic's
// endpoint from the catalog unless URL is set), connects to Ironic and negotiates the microversion: it reads the server's maximum from
// GET {URL}/ (sent without a version header) and pins min(server maximum, opts.MaxVersion),
// which is then sent on every request.
func New(ctx context.Context, opts Options) (*Client, error) {
	if err := opts.Auth.Validate(opts.URL != ""); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthentication, err)
	}
	if opts.Auth.Type != AuthPassword {
		if _, err := rootURL(opts.URL); err != nil {
			return nil, err
		}
	}
	if opts.MaxVersion == "" {
		opts.MaxVersion = DefaultMaxVersion
	}
	ours, ok := parseMinor(opts.MaxVersion)
	if !ok {
		return nil, fmt.Errorf("ironic: invalid MaxVersion %q (want 1.N)", opts.MaxVersion)
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = defaultRequestTimeout
	}
	if opts.LockedRetries == 0 {
		opts.LockedRetries = defaultLockedRetries
	} else if opts.LockedRetries < 0 {
		opts.LockedRetries = 0
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = defaultPollInterval
	}
	if opts.pageSize <= 0 {
		opts.pageSize = defaultPageSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	sc, root, err := serviceClient(ctx, opts)
	if err != nil {
		return nil, err
	}
	sc.UserAgent.Prepend("corral")
	if opts.UserAgent != "" {
		sc.UserAgent.Prepend(opts.UserAgent)
	}
	c := &Client{opts: opts, root: root, sc: sc, log: opts.Logger.With("component", "ironic")}
	if c.met, err = newMetrics(opts.Registerer); err != nil {
		return nil, err
	}

	serverMin, serverMax, err := c.serverVersions(ctx)
	if err != nil {
		return nil, err
	}
	if serverMin > ours {
		return nil, newError("New", ErrUnsupported,
			"Ironic at %s supports microversions [1.%d, 1.%d], corral needs at most 1.%d", root, serverMin, serverMax, ours)
	}
	c.minor = min(serverMax, ours)
	c.version = "1." + strconv.Itoa(c.minor)
	sc.Microversion = c.version
	c.log.Info("ironic microversion negotiated", "url", root, "server_max", "1."+strconv.Itoa(serverMax),
		"version", c.version)
	return c, nil
}

// rootURL validates and normalizes the configured URL.
func rootURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("ironic: invalid URL %q: want http(s)://host:port", raw)
	}
	s := strings.TrimRight(u.String(), "/")
	s = strings.TrimSuffix(s, "/v1")
	return s, nil
}

func parseMinor(v string) (int, bool) {
	major, minor, ok := strings.Cut(strings.TrimSpace(v), ".")
	if !ok || major != "1" {
		return 0, false
	}
	n, err := strconv.Atoi(minor)
	return n, err == nil && n >= 0
}

// serverVersions reads GET {root}/ without a version header.
func (c *Client) serverVersions(ctx context.Context) (minV, maxV int, err error) {
	type versionDoc struct {
		ID         string `json:"id"`
		Version    string `json:"version"`
		MinVersion string `json:"min_version"`
	}
	var doc struct {
		DefaultVersion *versionDoc  `json:"default_version"`
		Versions       []versionDoc `json:"versions"`
	}
	rootClient := &gophercloud.ServiceClient{ProviderClient: c.sc.ProviderClient, Endpoint: c.root + "/"}
	var hdr http.Header
	err = c.do(ctx, "New", true, func(ctx context.Context) error {
		resp, err := rootClient.Get(ctx, c.root+"/", &doc, nil)
		if resp != nil {
			hdr = resp.Header
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("ironic: cannot reach Ironic at %s (is it running? GET / failed): %w", c.root, err)
	}
	v := doc.DefaultVersion
	if v == nil || v.Version == "" {
		for i := range doc.Versions {
			if doc.Versions[i].ID == "v1" {
				v = &doc.Versions[i]
			}
		}
	}
	maxS, minS := "", ""
	if v != nil {
		maxS, minS = v.Version, v.MinVersion
	}
	if maxS == "" && hdr != nil {
		maxS, minS = hdr.Get("X-OpenStack-Ironic-API-Maximum-Version"), hdr.Get("X-OpenStack-Ironic-API-Minimum-Version")
	}
	if maxS == "" {
		maxS = "1.1" // an Ironic without microversions
	}
	maxV, ok := parseMinor(maxS)
	if !ok {
		return 0, 0, newError("New", nil, "Ironic at %s reports an unparsable version %q", c.root, maxS)
	}
	minV = 1
	if m, ok := parseMinor(minS); ok {
		minV = m
	}
	return minV, maxV, nil
}

// Version returns the negotiated microversion, e.g. "1.82".
func (c *Client) Version() string { return c.version }

// SupportsAllocations reports whether the negotiated microversion has the allocations API (1.52).
func (c *Client) SupportsAllocations() bool { return c.minor >= mvAllocations }

// do runs one request (fn) with RequestTimeout, retrying 409 NodeLocked with exponential
// backoff and, when idempotent, transport errors and 502/503/504. Errors are *Error.
// The two budgets are counted apart, each on its own curve (a conductor holding a node's
// lock for seconds must not use up the retries of a flaky network, nor the reverse), which
// this loop says more plainly than a retry library's one policy per call.
func (c *Client) do(ctx context.Context, call string, idempotent bool, fn func(context.Context) error) error {
	locked, flaky := 0, 0
	for {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
		err := fn(rctx)
		cancel()
		if err == nil {
			c.met.observe(call, "ok", "", time.Since(start))
			return nil
		}
		e := classifyError(call, err)
		c.met.observe(call, "error", errorCode(e), time.Since(start))
		if ctx.Err() != nil {
			return e
		}
		var delay time.Duration
		switch {
		case e.Kind == ErrNodeLocked && locked < c.opts.LockedRetries:
			delay = min(lockedBackoffStart<<min(locked, 8), lockedBackoffMax)
			locked++
		case idempotent && isTransient(e) && flaky < transientRetries:
			delay = transientBackoffStart << flaky
			flaky++
		default:
			return e
		}
		c.log.Debug("ironic request retried", "call", call, "status", e.Status, "error", e.Fault, "delay", delay,
			"cause", e.Err)
		if err := sleepCtx(ctx, delay); err != nil {
			return e
		}
	}
}

func errorCode(e *Error) string {
	switch {
	case e.Status != 0:
		return strconv.Itoa(e.Status)
	case errors.Is(e.Err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(e.Err, context.Canceled):
		return "canceled"
	case e.Kind == ErrUnavailable:
		return "network"
	}
	return "decode"
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// get GETs url into out (idempotent: retried on transient errors).
func (c *Client) get(ctx context.Context, call, url string, out any) error {
	return c.do(ctx, call, true, func(ctx context.Context) error {
		_, err := c.sc.Get(ctx, url, out, nil)
		return err
	})
}
