package sim

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
)

var customTraitRE = regexp.MustCompile(`^CUSTOM_[A-Z0-9_]+$`)

// validTrait reports whether Ironic accepts t: a standard trait name or CUSTOM_[A-Z0-9_]+.
func validTrait(t string) bool {
	return len(t) <= 255 && (standardTraits[t] || customTraitRE.MatchString(t))
}

func (c *call) routeTraits(ident string, rest []string) {
	m := c.r.Method
	switch {
	case len(rest) == 0 && m == http.MethodGet:
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		n, err := c.findNode(ident)
		if err != nil {
			c.failErr(err)
			return
		}
		c.json(http.StatusOK, map[string]any{"traits": stringsAny(n.traits)})
	case len(rest) == 0 && m == http.MethodPut:
		var body struct {
			Traits []string `json:"traits"`
		}
		if err := c.decode(&body); err != nil {
			c.failErr(err)
			return
		}
		for _, t := range body.Traits {
			if !validTrait(t) {
				c.failErr(traitSchemaError("body", t))
				return
			}
		}
		c.updateTraits(ident, func(n *node) *apiError {
			n.traits = slices.Compact(slices.Sorted(slices.Values(body.Traits)))
			if n.traits == nil {
				n.traits = []string{}
			}
			return nil
		})
	case len(rest) == 0 && m == http.MethodDelete:
		c.updateTraits(ident, func(n *node) *apiError {
			n.traits = []string{}
			return nil
		})
	case len(rest) == 1 && m == http.MethodPut:
		t := rest[0]
		if !validTrait(t) {
			c.failErr(traitSchemaError("trait", t))
			return
		}
		c.w.Header().Set("Location", c.base()+"/v1/nodes/"+ident+"/traits/"+t)
		c.updateTraits(ident, func(n *node) *apiError {
			if !slices.Contains(n.traits, t) {
				n.traits = append(n.traits, t)
				slices.Sort(n.traits)
			}
			return nil
		})
	case len(rest) == 1 && m == http.MethodDelete:
		t := rest[0]
		c.updateTraits(ident, func(n *node) *apiError {
			i := slices.Index(n.traits, t)
			if i < 0 {
				return errf(http.StatusNotFound, fmt.Sprintf("Node %s doesn't have a trait '%s'", n.uuid, t))
			}
			n.traits = slices.Delete(n.traits, i, i+1)
			return nil
		})
	case len(rest) <= 1:
		c.methodNotAllowed()
	default:
		c.notFound()
	}
}

func (c *call) updateTraits(ident string, fn func(n *node) *apiError) {
	n, err := c.lockNode(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	defer c.s.mu.Unlock()
	if err := fn(n); err != nil {
		c.failErr(err)
		return
	}
	n.updated = now()
	c.noContent(http.StatusNoContent)
}

// routeVIFs serves the VIF API as Ironic does with the noop network interface: attach and detach
// are accepted and do nothing visible, and the list is always empty. The simulator still records
// attached VIFs; NodeState.VIFs shows them to tests.
func (c *call) routeVIFs(ident string, rest []string) {
	m := c.r.Method
	switch {
	case len(rest) == 0 && m == http.MethodGet:
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		if _, err := c.findNode(ident); err != nil {
			c.failErr(err)
			return
		}
		c.json(http.StatusOK, map[string]any{"vifs": []any{}})
	case len(rest) == 0 && m == http.MethodPost:
		var body map[string]any
		if err := c.decode(&body); err != nil {
			c.failErr(err)
			return
		}
		id, ok := body["id"].(string)
		if !ok {
			c.fail(http.StatusBadRequest, "Schema error for vif: 'id' is a required property")
			return
		}
		n, err := c.lockNode(ident)
		if err != nil {
			c.failErr(err)
			return
		}
		defer c.s.mu.Unlock()
		c.recordEffect(n, EffectVIF, "attach", id, http.StatusNoContent)
		if !slices.Contains(n.vifs, id) {
			n.vifs = append(n.vifs, id)
		}
		n.updated = now() // the conductor's node lock bumps updated_at
		c.noContent(http.StatusNoContent)
	case len(rest) == 1 && m == http.MethodDelete:
		n, err := c.lockNode(ident)
		if err != nil {
			c.failErr(err)
			return
		}
		defer c.s.mu.Unlock()
		c.recordEffect(n, EffectVIF, "detach", rest[0], http.StatusNoContent)
		n.vifs = slices.DeleteFunc(n.vifs, func(v string) bool { return v == rest[0] })
		n.updated = now()
		c.noContent(http.StatusNoContent)
	case len(rest) <= 1:
		c.methodNotAllowed()
	default:
		c.notFound()
	}
}
