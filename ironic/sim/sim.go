// Package sim is an in-process simulator of the OpenStack Ironic REST API (the subset corral uses:
// versions, nodes, node states, traits, VIFs, ports and allocations), as served by Ironic 21.4
// with fake-hardware, noauth and the noop network interface. It reproduces Ironic's status codes,
// JSON shapes, error bodies, microversion negotiation and asynchronous state transitions, so that
// code written against it works unchanged against a real Ironic.
//
// A Server is an http.Handler; mount it on an httptest.Server or any listener.
package sim

import (
	"context"
	"log/slog"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configure a simulator. The zero value is a fast simulator of Ironic 21.4 (API 1.82).
type Options struct {
	// MaxVersion is the highest microversion served, "1.x" (default "1.82"). Set e.g. "1.46" to
	// simulate an Ironic without the allocations API.
	MaxVersion string

	// Background transition delays. Every transition is asynchronous, even with a zero delay.
	DeployDelay     time.Duration // deploying -> active
	UndeployDelay   time.Duration // deleting -> available
	CleanDelay      time.Duration // cleaning -> available (provide)
	ManageDelay     time.Duration // verifying -> manageable (manage)
	PowerDelay      time.Duration // target_power_state -> power_state
	AllocationDelay time.Duration // allocating -> active/error

	// Latency is added to every request before it is handled.
	Latency time.Duration

	// LockWait is how long a request waits for a node locked by a background task before it
	// fails with 409 NodeLocked (default 2s, like Ironic's 3 lock attempts 1s apart).
	LockWait time.Duration

	// FaultRate is the probability (0..1) that a request under /v1 fails with FaultStatus
	// (default 503) before it is handled. FaultSeed seeds the random source (0 = 1).
	FaultRate   float64
	FaultStatus int
	FaultSeed   int64

	// NullsLast sorts null values after every value in ascending listings (before them in
	// descending ones), as Ironic on PostgreSQL does; the default is SQLite's and MySQL's
	// order, nulls first in ascending listings.
	NullsLast bool

	// RequireImageSource makes deploy fail validation (400) when instance_info.image_source is
	// missing, like a real deploy interface. Ironic's fake deploy interface deploys without it,
	// which is the default.
	RequireImageSource bool

	// DeployPowersOn ends a deploy or rebuild with the node powered on, as Ironic's agent
	// and direct deploy interfaces boot the instance. The default is the fake deploy
	// interface's: the power stays as it was.
	DeployPowersOn bool

	// SideEffectLimit is how many accepted side effects SideEffects keeps, the oldest dropped
	// first (0: DefaultSideEffectLimit; negative: none are kept).
	SideEffectLimit int

	// NetworkInterfaces are the network interfaces a node may be enrolled with (Ironic's
	// [DEFAULT] enabled_network_interfaces): default noop only; add flat or neutron to have
	// nodes whose VIFs take their ports (traits.go's routeVIFs).
	NetworkInterfaces []string

	// ConductorName is reported in node.conductor and node.reservation (default "ironic-sim").
	ConductorName string

	// Logger receives one debug line per request (default: discard).
	Logger *slog.Logger
}

// Server is the simulator. It is safe for concurrent use.
type Server struct {
	opts     Options
	maxMinor int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	nextID  int64
	nodes   nodeStore
	ports   portStore
	allocs  allocStore
	faults  []*fault
	rng     *rand.Rand
	counts  map[string]int // "METHOD path" -> requests
	writers map[string]int // User-Agent -> mutating requests

	holding bool     // deploys stay in deploying past DeployDelay (HoldDeploys)
	held    []func() // the ends of the deploys held, run by ReleaseDeploys

	effects        []SideEffect // accepted side effects, oldest first (sideeffects.go)
	effectSeq      int64
	effectsDropped int64
}

type fault struct {
	method, prefix string
	status, left   int
}

// New returns a simulator. Call Close to stop its background goroutines.
func New(opts Options) *Server {
	if opts.MaxVersion == "" {
		opts.MaxVersion = "1.82"
	}
	maxMinor, ok := parseMinor(opts.MaxVersion)
	if !ok || maxMinor < minMinor || maxMinor > latestMinor {
		panic("sim: invalid MaxVersion " + opts.MaxVersion)
	}
	if opts.LockWait == 0 {
		opts.LockWait = 2 * time.Second
	}
	if opts.FaultStatus == 0 {
		opts.FaultStatus = http.StatusServiceUnavailable
	}
	if opts.FaultSeed == 0 {
		opts.FaultSeed = 1
	}
	if opts.ConductorName == "" {
		opts.ConductorName = "ironic-sim"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		opts:     opts,
		maxMinor: maxMinor,
		ctx:      ctx,
		cancel:   cancel,
		nodes:    newNodeStore(),
		ports:    newPortStore(),
		allocs:   newAllocStore(),
		rng:      rand.New(rand.NewSource(opts.FaultSeed)),
		counts:   map[string]int{},
		writers:  map[string]int{},
	}
}

// Close stops the background goroutines; pending transitions are abandoned. Requests still
// served after Close see the state as it was.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// HoldDeploys keeps every deploy in deploying, its node locked, past DeployDelay until
// ReleaseDeploys: like a deploy that takes as long as the test needs, so that a test can have
// several deploys in flight at once however slowly they start.
func (s *Server) HoldDeploys() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding = true
}

// ReleaseDeploys ends the deploys HoldDeploys held (each goes active) and lets the next ones end
// after DeployDelay again.
func (s *Server) ReleaseDeploys() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding = false
	for _, end := range s.held {
		end()
	}
	s.held = nil
}

// FailNext makes the next n requests whose method matches (empty = any) and whose path starts
// with pathPrefix fail with status and an Ironic error body, before they are handled.
func (s *Server) FailNext(method, pathPrefix string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{method: method, prefix: pathPrefix, status: status, left: n})
}

// WritesFrom counts the mutating requests (any method but GET and HEAD)
// whose User-Agent contains userAgentPart: which client acted on Ironic.
func (s *Server) WritesFrom(userAgentPart string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for ua, c := range s.writers {
		if strings.Contains(ua, userAgentPart) {
			n += c
		}
	}
	return n
}

// Requests counts the requests received (faulted ones included) whose method matches (empty =
// any) and whose path starts with pathPrefix.
func (s *Server) Requests(method, pathPrefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.counts {
		m, p, _ := strings.Cut(k, " ")
		if (method == "" || m == method) && strings.HasPrefix(p, pathPrefix) {
			n += c
		}
	}
	return n
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.opts.Logger.Debug("ironic sim request", "method", r.Method, "path", r.URL.Path)
	if strings.TrimSuffix(r.URL.Path, "/") == SideEffectsPath {
		s.serveSideEffects(w, r) // the simulator's own: no latency, faults or counts
		return
	}
	if s.opts.Latency > 0 {
		t := time.NewTimer(s.opts.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if status, failed := s.injectFault(r); failed {
		c := &call{s: s, w: w, r: r, minor: s.maxMinor}
		c.setVersionHeaders(true)
		c.fail(status, "Injected fault.")
		return
	}
	s.route(w, r)
}

func (s *Server) injectFault(r *http.Request) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[r.Method+" "+r.URL.Path]++
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writers[r.UserAgent()]++
	}
	for i, f := range s.faults {
		if (f.method == "" || f.method == r.Method) && strings.HasPrefix(r.URL.Path, f.prefix) {
			f.left--
			if f.left <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			return f.status, true
		}
	}
	if s.opts.FaultRate > 0 && strings.HasPrefix(r.URL.Path, "/v1/") && s.rng.Float64() < s.opts.FaultRate {
		return s.opts.FaultStatus, true
	}
	return 0, false
}

// after runs fn with s.mu held once d has passed, unless the server is closed first. The caller
// holds s.mu.
func (s *Server) after(d time.Duration, fn func()) {
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-s.ctx.Done():
				return
			}
		} else if s.ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ctx.Err() != nil {
			return
		}
		fn()
	}()
}

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

func now() time.Time { return time.Now().UTC() }

// isoTime formats like Python's datetime.isoformat() on an aware UTC timestamp.
func isoTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
}
