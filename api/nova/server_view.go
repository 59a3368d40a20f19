package nova

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// novaTime is the timestamp format of Nova's server view.
const novaTime = "2006-01-02T15:04:05Z"

func serverLinks(c echo.Context, id string) []wire.Link {
	u := core.BaseURL(c) + wire.ServersPath + "/" + url.PathEscape(id)
	return []wire.Link{{Rel: "self", Href: u}, {Rel: "bookmark", Href: strings.Replace(u, wire.ComputePrefix, "/compute", 1)}}
}

func vmState(s fsm.Server) string {
	switch s.Status {
	case fsm.StatusActive:
		return "active"
	case fsm.StatusError:
		return "error"
	case fsm.StatusDeleted:
		return "deleted"
	}
	return "building"
}

// serverView renders a server as Nova shows it to an admin.
func (h *Handlers) serverView(c echo.Context, v fsm.Server) map[string]any {
	var task any
	if v.TaskState != "" {
		task = v.TaskState
	}
	power := 0
	if v.Status == fsm.StatusActive {
		power = 1
	}
	addresses := map[string][]any{}
	for _, n := range v.Networks {
		key := n.UUID
		if key == "" {
			key = n.Port
		}
		addresses[key] = []any{}
	}
	meta := v.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	out := map[string]any{
		"id": v.ID, "name": v.Name, "status": string(v.Status), "tenant_id": v.Project(), "user_id": v.User(),
		"created": v.CreatedAt.UTC().Format(novaTime), "updated": v.UpdatedAt.UTC().Format(novaTime),
		"hostId": hostID(v), "progress": 0, "accessIPv4": "", "accessIPv6": "", "addresses": addresses,
		"metadata": meta, "links": serverLinks(c, v.ID), "key_name": nullable(v.KeyName), "config_drive": configDriveShown(v),
		"image":                                map[string]any{"id": v.ImageRef, "links": []wire.Link{{Rel: "bookmark", Href: core.BaseURL(c) + "/images/" + url.PathEscape(v.ImageRef)}}},
		"flavor":                               embeddedFlavor(c, v.Flavor),
		"OS-EXT-STS:task_state":                task,
		"OS-EXT-STS:vm_state":                  vmState(v),
		"OS-EXT-STS:power_state":               power,
		"OS-EXT-SRV-ATTR:host":                 nullable(v.Host),
		"OS-EXT-SRV-ATTR:hypervisor_hostname":  nullable(v.NodeUUID),
		"OS-EXT-SRV-ATTR:instance_name":        "instance-" + v.ID,
		"OS-EXT-AZ:availability_zone":          availabilityZone,
		"OS-DCF:diskConfig":                    "MANUAL",
		"security_groups":                      []map[string]string{{"name": "default"}},
		"os-extended-volumes:volumes_attached": []any{},
		"locked":                               false,
	}
	actionView(c, v, out) // actions.go: status, power and lock of server actions
	if v.Fault != nil {
		out["fault"] = map[string]any{"code": v.Fault.Code, "message": v.Fault.Message,
			"created": v.Fault.Created.UTC().Format(novaTime)}
	}
	return out
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// embeddedFlavor shows the flavor stored in the server: from microversion
// 2.47 its fields, like Nova; before that, a reference to its id.
func embeddedFlavor(c echo.Context, f fsm.Flavor) map[string]any {
	if !mvAtLeast(c, 2, 47) {
		return map[string]any{"id": f.ID, "links": []wire.Link{{Rel: "bookmark", Href: core.BaseURL(c) + "/compute/flavors/" + url.PathEscape(f.ID)}}}
	}
	specs := f.ExtraSpecs
	if specs == nil {
		specs = map[string]string{}
	}
	return map[string]any{"vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk, "ephemeral": f.Ephemeral,
		"swap": f.Swap, "original_name": f.Name, "extra_specs": specs}
}

// hostID is Nova's hostId: the owner host hashed with the server's
// project, so that a project can tell whether two of its servers share a
// host without learning host names; empty without a host.
func hostID(v fsm.Server) string {
	if v.Host == "" {
		return ""
	}
	sum := sha256.Sum224([]byte(v.Project() + v.Host))
	return hex.EncodeToString(sum[:])
}

// configDriveShown is the server's config_drive field: "True" for a
// bare-metal server, whose deploy always carries a config drive.
func configDriveShown(v fsm.Server) string {
	if v.ClaimedNode != "" || v.NodeUUID != "" {
		return "True"
	}
	return ""
}
