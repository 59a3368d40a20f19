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

// routeVIFs serves the VIF API as Ironic does. With the noop network interface (the default)
// attach and detach are accepted and do nothing visible, and the list is always empty; the
// simulator still records attached VIFs, and NodeState.VIFs shows them to tests. With flat or
// neutron (NodeSpec.NetworkInterface), as Ironic's VIFPortIDMixin: each VIF takes the first
// free port of the node (internal_info.tenant_vif_port_id), a VIF beyond the node's free ports
// is refused (400), the same VIF twice is a conflict (409), the list shows the attached VIFs and
// a detach of a VIF not attached is refused (400). Unlike Ironic it asks no Neutron whether the
// port exists, and updates no Neutron port.
func (c *call) routeVIFs(ident string, rest []string) {
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
		vifs := []any{}
		if n.bindsVIFs() {
			for _, p := range c.s.ports.order {
				if v := tenantVIF(p); p.nodeID == n.id && v != "" {
					vifs = append(vifs, map[string]any{"id": v})
				}
			}
		}
		c.json(http.StatusOK, map[string]any{"vifs": vifs})
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
		if n.bindsVIFs() {
			var free *port
			for _, p := range c.s.ports.order {
				switch {
				case p.nodeID != n.id:
				case tenantVIF(p) == id:
					c.fail(http.StatusConflict, fmt.Sprintf("Unable to attach VIF %s, it is already attached to Ironic Port %s.", id, p.uuid))
					return
				case tenantVIF(p) == "" && free == nil:
					free = p
				}
			}
			if free == nil {
				c.fail(http.StatusBadRequest, fmt.Sprintf("Unable to attach VIF %s, not enough free physical ports.", id))
				return
			}
			if free.internalInfo == nil {
				free.internalInfo = map[string]any{}
			}
			free.internalInfo["tenant_vif_port_id"] = id
			free.updated = now()
		}
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
		if n.bindsVIFs() {
			var held *port
			for _, p := range c.s.ports.order {
				if p.nodeID == n.id && tenantVIF(p) == rest[0] {
					held = p
				}
			}
			if held == nil {
				c.fail(http.StatusBadRequest, fmt.Sprintf("Unable to detach VIF %s from node %s because it is not attached to it.", rest[0], n.uuid))
				return
			}
			delete(held.internalInfo, "tenant_vif_port_id")
			held.updated = now()
		}
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

// networkIface is the node's network_interface as Ironic shows it.
func (n *node) networkIface() string {
	if n.networkInterface == "" {
		return "noop"
	}
	return n.networkInterface
}

// bindsVIFs reports whether the node's network interface binds VIFs to its ports.
func (n *node) bindsVIFs() bool {
	return n.networkInterface == "flat" || n.networkInterface == "neutron"
}

// tenantVIF is the VIF a port carries ("" when free).
func tenantVIF(p *port) string {
	v, _ := p.internalInfo["tenant_vif_port_id"].(string)
	return v
}
