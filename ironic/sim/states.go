package sim

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// provisionTransitions maps (state, target) to the transitional state, the state it settles in,
// and whether the step is synchronous. Only the verbs corral and its tests use are modelled.
var provisionTransitions = map[[2]string]struct {
	via, to string
}{
	{"enroll", "manage"}:         {"verifying", "manageable"},
	{"manageable", "manage"}:     {"", ""}, // not actionable; kept for clarity
	{"manageable", "provide"}:    {"cleaning", "available"},
	{"available", "manage"}:      {"", "manageable"},
	{"available", "active"}:      {"deploying", "active"},
	{"active", "deleted"}:        {"deleting", "available"},
	{"active", "rebuild"}:        {"deploying", "active"},
	{"deploy failed", "active"}:  {"deploying", "active"},
	{"deploy failed", "deleted"}: {"deleting", "available"},
	{"error", "deleted"}:         {"deleting", "available"},
	{"error", "rebuild"}:         {"deploying", "active"},
	{"clean failed", "manage"}:   {"", "manageable"},
}

func actionable(state, target string) bool {
	t, ok := provisionTransitions[[2]string{state, target}]
	return ok && t.to != ""
}

// startTask locks n and runs fn with s.mu held after d; the lock is released just before fn.
func (s *Server) startTask(n *node, d time.Duration, fn func()) {
	n.locked++
	s.after(d, func() {
		n.locked--
		fn()
	})
}

// holdable is the end of a deploy on n, which HoldDeploys defers (with n still locked) until
// ReleaseDeploys. Like every task's end it runs with s.mu held.
func (s *Server) holdable(n *node, end func()) func() {
	return func() {
		if !s.holding {
			end()
			return
		}
		n.locked++
		s.held = append(s.held, func() {
			n.locked--
			end()
		})
	}
}

type provisionBody struct {
	Target      string          `json:"target"`
	ConfigDrive json.RawMessage `json:"configdrive"`
}

func (c *call) setProvisionState(ident string) {
	var body provisionBody
	if err := c.decode(&body); err != nil {
		c.failErr(err)
		return
	}
	// A node busy with a background task answers 409 at once when the action does not apply to
	// its current (transitional) state, and waits for the lock otherwise.
	c.s.mu.Lock()
	n, err := c.findNode(ident)
	if err == nil && n.locked > 0 && !actionable(n.provisionState, body.Target) {
		err = nodeLocked(n.uuid, c.s.opts.ConductorName)
	}
	c.s.mu.Unlock()
	if err != nil {
		c.failErr(err)
		return
	}
	n, err = c.lockNode(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	defer c.s.mu.Unlock()
	target := body.Target
	if (target == "active" || target == "rebuild") && n.maintenance {
		c.fail(http.StatusBadRequest, "The provisioning operation can't be performed on node "+n.uuid+
			" because it's in maintenance mode.")
		return
	}
	if !actionable(n.provisionState, target) {
		c.failErr(invalidStateRequested(target, n.uuid, n.provisionState))
		return
	}
	if target == "active" || target == "rebuild" {
		if _, ok := n.instanceInfo["image_source"]; !ok && c.s.opts.RequireImageSource {
			c.fail(http.StatusBadRequest, "Cannot validate image information for node "+n.uuid+
				" because one or more parameters are missing from its instance_info and insufficient "+
				"information is present to boot from a remote volume. Missing are: ['image_source']")
			return
		}
	}
	tr := provisionTransitions[[2]string{n.provisionState, target}]
	n.updated = now()
	n.provisionUpdated = n.updated
	n.lastError = nil
	c.recordEffect(n, EffectProvision, target, "", http.StatusAccepted)
	if tr.via == "" {
		n.provisionState = tr.to
		n.targetProvisionState = nil
		c.accepted(n)
		return
	}
	n.provisionState = tr.via
	n.targetProvisionState = strp(tr.to)
	var delay time.Duration
	var finish func()
	switch tr.via {
	case "verifying":
		delay = c.s.opts.ManageDelay
	case "cleaning":
		delay = c.s.opts.CleanDelay
	case "deploying":
		delay = c.s.opts.DeployDelay
		if c.s.opts.DeployPowersOn {
			finish = func() { n.powerState = strp("power on") }
		}
		if _, ok := n.instanceInfo["image_source"]; ok {
			n.instanceInfo["image_type"] = "whole-disk"
			n.driverInternalInfo["is_whole_disk_image"] = true
		}
		if len(body.ConfigDrive) > 0 && string(body.ConfigDrive) != "null" {
			n.instanceInfo["configdrive"] = "******"
			n.configDrive = slices.Clone(body.ConfigDrive)
		}
		n.driverInternalInfo["deploy_steps"] = nil
	case "deleting":
		delay = c.s.opts.UndeployDelay
		finish = func() { c.s.tearDown(n) }
	}
	end := func() {
		if finish != nil {
			finish()
		}
		n.provisionState = tr.to
		n.targetProvisionState = nil
		n.updated = now()
		n.provisionUpdated = n.updated
	}
	if tr.via == "deploying" {
		end = c.s.holdable(n, end)
	}
	c.s.startTask(n, delay, end)
	c.accepted(n)
}

// tearDown is the end of an undeploy: the allocation goes, the instance association is cleared.
func (s *Server) tearDown(n *node) {
	if a := s.allocs.byID(n.allocationID); a != nil {
		s.allocs.remove(a)
	}
	n.allocationID = 0
	n.instanceUUID = nil
	n.instanceInfo = map[string]any{}
	n.configDrive = nil
	delete(n.driverInternalInfo, "is_whole_disk_image")
}

func (c *call) accepted(n *node) {
	c.w.Header().Set("Location", c.base()+"/v1/nodes/"+n.uuid+"/states")
	c.noContent(http.StatusAccepted)
}

var powerTargets = map[string]string{
	"power on": "power on", "power off": "power off", "rebooting": "power on",
	"soft power off": "power off", "soft rebooting": "power on",
}

func (c *call) setPowerState(ident string) {
	var body struct {
		Target  string `json:"target"`
		Timeout *int   `json:"timeout"`
	}
	if err := c.decode(&body); err != nil {
		c.failErr(err)
		return
	}
	if body.Timeout != nil && *body.Timeout <= 0 {
		c.fail(http.StatusBadRequest, "timeout has to be positive integer")
		return
	}
	n, err := c.lockNode(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	defer c.s.mu.Unlock()
	final, ok := powerTargets[body.Target]
	if !ok {
		state := "None"
		if n.powerState != nil {
			state = *n.powerState
		}
		c.failErr(invalidStateRequested(body.Target, ident, state))
		return
	}
	c.recordEffect(n, EffectPower, body.Target, "", http.StatusAccepted)
	n.targetPowerState = strp(body.Target)
	n.updated = now()
	c.s.startTask(n, c.s.opts.PowerDelay, func() {
		n.powerState = strp(final)
		n.targetPowerState = nil
		n.updated = now()
		n.driverInternalInfo["last_power_state_change"] = now().Format("2006-01-02T15:04:05.000000")
	})
	c.accepted(n)
}
