package sim

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// Kinds of side effects.
const (
	EffectProvision = "provision" // PUT /v1/nodes/{node}/states/provision
	EffectPower     = "power"     // PUT /v1/nodes/{node}/states/power
	EffectVIF       = "vif"       // POST /v1/nodes/{node}/vifs, DELETE /v1/nodes/{node}/vifs/{vif}
)

// SideEffectsPath serves the side-effect log over HTTP (GET, optional ?node=<uuid> and
// ?since=<seq>). It lies outside Ironic's /v1 namespace: it is the simulator's own.
const SideEffectsPath = "/_sim/side-effects"

// DefaultSideEffectLimit is how many side effects the log keeps by default.
const DefaultSideEffectLimit = 100000

// SideEffect is one request the simulator accepted (2xx) that acts on a node: a provision
// state change (deploy, rebuild, undeploy, ...), a power state change, or a VIF attached or
// detached. ProvisionState and PowerState are the node's states just before the request.
type SideEffect struct {
	Seq    int64     `json:"seq"` // 1, 2, ... in acceptance order
	Time   time.Time `json:"time"`
	Node   string    `json:"node_uuid"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Kind   string    `json:"kind"` // provision, power or vif
	// Target is the provision target (active, rebuild, deleted, ...), the power target
	// (power on, power off, rebooting, soft rebooting, soft power off), or for a VIF
	// attach or detach.
	Target string `json:"target"`
	VIF    string `json:"vif,omitempty"`
	// RequestID is the X-OpenStack-Request-ID the request carried, when it has the form
	// req-<uuid>: oslo's request-id middleware takes such an id as the request's global
	// request id and ignores any other.
	RequestID      string `json:"request_id,omitempty"`
	UserAgent      string `json:"user_agent,omitempty"`
	Status         int    `json:"status"`
	ProvisionState string `json:"provision_state"`
	PowerState     string `json:"power_state,omitempty"`
}

// SideEffectLog is the body of GET /_sim/side-effects.
type SideEffectLog struct {
	SideEffects []SideEffect `json:"side_effects"`
	// Dropped counts the oldest side effects no longer kept (Options.SideEffectLimit).
	Dropped int64 `json:"dropped"`
}

// globalRequestID is oslo.middleware's request id format.
var globalRequestID = regexp.MustCompile(`^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$`)

// recordEffect logs an accepted side effect on n, in its state before the change. The caller
// holds s.mu.
func (c *call) recordEffect(n *node, kind, target, vif string, status int) {
	s := c.s
	rid := c.r.Header.Get("X-OpenStack-Request-ID")
	if !globalRequestID.MatchString(rid) {
		rid = ""
	}
	s.effectSeq++
	e := SideEffect{Seq: s.effectSeq, Time: now(), Node: n.uuid, Method: c.r.Method, Path: c.r.URL.Path,
		Kind: kind, Target: target, VIF: vif, RequestID: rid, UserAgent: c.r.UserAgent(), Status: status,
		ProvisionState: n.provisionState, PowerState: derefStr(n.powerState)}
	limit := s.opts.SideEffectLimit
	if limit == 0 {
		limit = DefaultSideEffectLimit
	}
	if limit < 0 {
		return
	}
	if len(s.effects) >= limit {
		drop := len(s.effects) - limit + 1
		s.effects = append(s.effects[:0], s.effects[drop:]...)
		s.effectsDropped += int64(drop)
	}
	s.effects = append(s.effects, e)
}

func derefStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// SideEffects returns the side effects accepted so far, oldest first.
func (s *Server) SideEffects() []SideEffect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SideEffect(nil), s.effects...)
}

// serveSideEffects answers GET /_sim/side-effects[?node=<uuid>][&since=<seq>].
func (s *Server) serveSideEffects(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"error":"GET only"}` + "\n"))
		return
	}
	q := r.URL.Query()
	node := normUUID(q.Get("node"))
	var since int64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"since must be an integer"}` + "\n"))
			return
		}
		since = n
	}
	s.mu.Lock()
	out := SideEffectLog{SideEffects: []SideEffect{}, Dropped: s.effectsDropped}
	for _, e := range s.effects {
		if e.Seq > since && (node == "" || e.Node == node) {
			out.SideEffects = append(out.SideEffects, e)
		}
	}
	s.mu.Unlock()
	_ = json.NewEncoder(w).Encode(out)
}
