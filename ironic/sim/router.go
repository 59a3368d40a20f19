package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// call is one request being served.
type call struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	minor int
}

func (c *call) base() string {
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.r.Host
}

// links returns Ironic's self and bookmark links for a resource.
func (c *call) links(kind, id string) []any {
	suffix := "/"
	if id != "" {
		suffix = "/" + id
	}
	return []any{
		map[string]any{"href": c.base() + "/v1/" + kind + suffix, "rel": "self"},
		map[string]any{"href": c.base() + "/" + kind + suffix, "rel": "bookmark"},
	}
}

// decode reads a JSON body into v; kind names the schema in error messages.
func (c *call) decode(v any) *apiError {
	b, err := io.ReadAll(io.LimitReader(c.r.Body, 8<<20))
	if err != nil {
		return errf(http.StatusBadRequest, "Could not read the request body: "+err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errf(http.StatusBadRequest, "Invalid JSON in the request body: "+err.Error())
	}
	return nil
}

func (c *call) query(name string) (string, bool) {
	q := c.r.URL.Query()
	if !q.Has(name) {
		return "", false
	}
	return q.Get(name), true
}

// boolQuery parses a boolean query parameter like oslo's bool_from_string (strict).
func (c *call) boolQuery(name string) (*bool, *apiError) {
	v, ok := c.query(name)
	if !ok {
		return nil, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "t", "true", "on", "y", "yes":
		t := true
		return &t, nil
	case "0", "f", "false", "off", "n", "no":
		f := false
		return &f, nil
	}
	return nil, errf(http.StatusBadRequest, "Invalid value for "+name+": "+v)
}

// limitQuery validates limit like Ironic: absent -> max (1000), <= 0 -> 400, capped at 1000.
func (c *call) limitQuery() (int, *apiError) {
	v, ok := c.query("limit")
	if !ok || v == "" {
		return maxLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errf(http.StatusBadRequest, "Expected an integer for limit: "+v)
	}
	if n <= 0 {
		return 0, errf(http.StatusBadRequest, "Limit must be positive")
	}
	return min(n, maxLimit), nil
}

// fieldsQuery parses fields=a,b; nil when absent.
func (c *call) fieldsQuery() ([]string, *apiError) {
	v, ok := c.query("fields")
	if !ok {
		return nil, nil
	}
	if c.minor < mvFields {
		return nil, errf(http.StatusNotAcceptable, "Request not acceptable.")
	}
	var out []string
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

const maxLimit = 1000

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

func isUUID(s string) bool { return uuidRE.MatchString(s) }

var logicalNameRE = regexp.MustCompile(`^[A-Za-z0-9\-._~]+$`)

// hostnameSafeRE is the name rule before API 1.10.
var hostnameSafeRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-]{0,61}[a-z0-9])?([.][a-z0-9]([a-z0-9\-]{0,61}[a-z0-9])?)*[.]?$`)

func (c *call) validLogicalName(name string) bool {
	if len(name) > 255 {
		return false
	}
	if c.minor < 10 {
		return hostnameSafeRE.MatchString(name)
	}
	return logicalNameRE.MatchString(name)
}

func (c *call) validNodeName(name string) bool { return c.validLogicalName(name) && !isUUID(name) }

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	c := &call{s: s, w: w, r: r}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == "" {
		if r.Method != http.MethodGet {
			c.abort(http.StatusMethodNotAllowed, "The method is not allowed for this resource.")
			return
		}
		c.handleRoot()
		return
	}
	if !c.negotiate() {
		return
	}
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if seg[0] != "v1" {
		c.notFound()
		return
	}
	seg = seg[1:]
	if len(seg) == 0 {
		c.setVersionHeaders(true)
		if r.Method != http.MethodGet {
			c.methodNotAllowed()
			return
		}
		c.handleV1()
		return
	}
	switch seg[0] {
	case "nodes":
		c.setVersionHeaders(true)
		c.routeNodes(seg[1:])
	case "ports":
		c.setVersionHeaders(true)
		c.routePorts(seg[1:])
	case "allocations":
		c.routeAllocations(seg[1:])
	default:
		c.abort(http.StatusNotFound, "")
	}
}

// abortBare answers like a request rejected before any version handling: no version headers.
func (c *call) abortBare(status int, description string) {
	for _, h := range []string{hdrMin, hdrMax, hdrVersion} {
		c.w.Header().Del(h)
	}
	c.abort(status, description)
}

func (c *call) notFound() { c.abort(http.StatusNotFound, "The resource could not be found.") }

func (c *call) methodNotAllowed() {
	c.abort(http.StatusMethodNotAllowed, "The method "+c.r.Method+" is not allowed for this resource.")
}

func (c *call) routeNodes(seg []string) {
	m := c.r.Method
	switch {
	case len(seg) == 0 && m == http.MethodGet:
		c.listNodes(false)
	case len(seg) == 0 && m == http.MethodPost:
		c.createNode()
	case len(seg) == 0 && (m == http.MethodDelete || m == http.MethodPatch):
		c.fail(http.StatusBadRequest, "Missing mandatory parameter: node_ident")
	case len(seg) == 1 && seg[0] == "detail" && m == http.MethodGet:
		c.listNodes(true)
	case len(seg) == 1 && m == http.MethodGet:
		c.getNode(seg[0])
	case len(seg) == 1 && m == http.MethodPatch:
		c.patchNode(seg[0])
	case len(seg) == 1 && m == http.MethodDelete:
		c.deleteNode(seg[0])
	case len(seg) == 2 && seg[1] == "states" && m == http.MethodGet:
		c.getNodeStates(seg[0])
	case len(seg) == 3 && seg[1] == "states" && seg[2] == "power" && m == http.MethodPut:
		c.setPowerState(seg[0])
	case len(seg) == 3 && seg[1] == "states" && seg[2] == "provision" && m == http.MethodPut:
		c.setProvisionState(seg[0])
	case len(seg) >= 2 && seg[1] == "traits" && c.minor < mvTraits:
		c.fail(http.StatusNotAcceptable, "Request not acceptable.")
	case len(seg) >= 2 && seg[1] == "traits":
		c.routeTraits(seg[0], seg[2:])
	case len(seg) >= 2 && seg[1] == "vifs" && c.minor < mvVIFs:
		c.abortBare(http.StatusNotFound, "")
	case len(seg) >= 2 && seg[1] == "vifs":
		c.routeVIFs(seg[0], seg[2:])
	case len(seg) == 2 && seg[1] == "allocation":
		c.routeNodeAllocation(seg[0])
	case len(seg) == 2 && seg[1] == "ports" && m == http.MethodGet:
		c.fail(http.StatusNotFound, "Portgroup None could not be found.")
	case len(seg) <= 3:
		c.methodNotAllowed()
	default:
		c.notFound()
	}
}
