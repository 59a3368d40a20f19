package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
)

// serverCreateBody is Nova's POST /servers body. Fields corral accepts but
// has no use for on bare metal (security groups, key names, availability
// zones, ...) are accepted and ignored, so that standard clients work.
type serverCreateBody struct {
	Server *struct {
		Name             string            `json:"name"`
		ImageRef         string            `json:"imageRef"`
		FlavorRef        string            `json:"flavorRef"`
		Networks         json.RawMessage   `json:"networks"`
		Metadata         map[string]string `json:"metadata"`
		Description      *string           `json:"description"`
		SecurityGroups   []map[string]any  `json:"security_groups"`
		KeyName          string            `json:"key_name"`
		AvailabilityZone string            `json:"availability_zone"`
		UserData         string            `json:"user_data"`
		ConfigDrive      *bool             `json:"config_drive"`
		AdminPass        string            `json:"adminPass"`
		AccessIPv4       string            `json:"accessIPv4"`
		AccessIPv6       string            `json:"accessIPv6"`
		MinCount         *int              `json:"min_count"`
		MaxCount         *int              `json:"max_count"`
		Tags             []string          `json:"tags"`
	} `json:"server"`
	SchedulerHints map[string]any `json:"os:scheduler_hints"`
}

func parseNetworks(raw json.RawMessage) ([]fsm.Network, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var word string
	if json.Unmarshal(raw, &word) == nil {
		if word == "auto" || word == "none" {
			return nil, nil
		}
		return nil, badRequest(`networks %q must be "auto", "none" or a list of {"uuid": ...}`, word)
	}
	var list []struct {
		UUID    string `json:"uuid"`
		Port    string `json:"port"`
		FixedIP string `json:"fixed_ip"`
		Tag     string `json:"tag"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, badRequest("networks must be a list of {\"uuid\": ..., \"port\": ..., \"fixed_ip\": ...}: %v", err)
	}
	out := make([]fsm.Network, 0, len(list))
	for _, n := range list {
		if n.UUID == "" && n.Port == "" {
			return nil, badRequest("each network needs a uuid or a port")
		}
		out = append(out, fsm.Network{UUID: n.UUID, Port: n.Port, FixedIP: n.FixedIP})
	}
	return out, nil
}

func (s *Server) createServer(c echo.Context) error {
	var body serverCreateBody
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	in := body.Server
	if in == nil {
		return badRequest(`the body must be {"server": {...}}`)
	}
	name := strings.TrimSpace(in.Name)
	if name == "" || len(in.Name) > 255 {
		return badRequest("server name must be 1 to 255 characters")
	}
	if in.ImageRef == "" {
		return badRequest("Missing imageRef attribute: a bare-metal server boots from an image")
	}
	if in.MaxCount != nil && *in.MaxCount > 1 || in.MinCount != nil && *in.MinCount > 1 {
		return badRequest("min_count/max_count above 1 are not supported: boot servers one by one")
	}
	flavorID := path.Base(strings.TrimRight(in.FlavorRef, "/"))
	if in.FlavorRef == "" {
		return badRequest("flavorRef is required")
	}
	// The flavor is checked when the entry applies, against the leader's
	// state: this peer's replica may not have a flavor created elsewhere yet.
	if err := checkNetworksVersion(c, in.Networks); err != nil {
		return err
	}
	if err := checkUserData(in.UserData); err != nil {
		return err
	}
	nets, err := parseNetworks(in.Networks)
	if err != nil {
		return err
	}
	cl := callerOf(c)
	if !cl.static && cl.project == "" {
		return fmt.Errorf("%w: a server belongs to a project: boot it with a project-scoped token", ErrForbidden)
	}
	if err := checkFlavorAccess(c, s.c.Store(), flavorID); err != nil { // flavor_access.go
		return err
	}
	image, err := s.checkImageRef(c, in.ImageRef) // images.go
	if err != nil {
		return err
	}
	id := uuid.NewString()
	cmd := &fsm.CreateServer{ID: id, Name: in.Name, FlavorID: flavorID, ImageRef: image,
		Networks: nets, Metadata: in.Metadata, ProjectID: cl.project, UserID: cl.user, KeyName: in.KeyName, UserData: in.UserData}
	if err := s.propose(c, cmd); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"server": map[string]any{
		"id": id, "links": serverLinks(c, id), "OS-DCF:diskConfig": "MANUAL",
		"security_groups": []map[string]string{{"name": "default"}},
	}})
}

func serverLinks(c echo.Context, id string) []link {
	u := baseURL(c) + novaPrefix + "/servers/" + url.PathEscape(id)
	return []link{{Rel: "self", Href: u}, {Rel: "bookmark", Href: strings.Replace(u, novaPrefix, "/compute", 1)}}
}

const novaTime = "2006-01-02T15:04:05Z"

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

// novaServerView renders a server as Nova shows it to an admin.
func (s *Server) novaServerView(c echo.Context, v fsm.Server) map[string]any {
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
		"image":                                map[string]any{"id": v.ImageRef, "links": []link{{Rel: "bookmark", Href: baseURL(c) + "/images/" + url.PathEscape(v.ImageRef)}}},
		"flavor":                               s.embeddedFlavor(c, v.Flavor),
		"OS-EXT-STS:task_state":                task,
		"OS-EXT-STS:vm_state":                  vmState(v),
		"OS-EXT-STS:power_state":               power,
		"OS-EXT-SRV-ATTR:host":                 nullable(v.Host),
		"OS-EXT-SRV-ATTR:hypervisor_hostname":  nullable(v.NodeUUID),
		"OS-EXT-SRV-ATTR:instance_name":        "instance-" + v.ID,
		"OS-EXT-AZ:availability_zone":          "nova",
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
func (s *Server) embeddedFlavor(c echo.Context, f fsm.Flavor) map[string]any {
	v, _ := c.Get(ctxMicroversion).(microversion)
	if v.less(microversion{2, 47}) {
		return map[string]any{"id": f.ID, "links": []link{{Rel: "bookmark", Href: baseURL(c) + "/compute/flavors/" + url.PathEscape(f.ID)}}}
	}
	specs := f.ExtraSpecs
	if specs == nil {
		specs = map[string]string{}
	}
	return map[string]any{"vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk, "ephemeral": f.Ephemeral,
		"swap": f.Swap, "original_name": f.Name, "extra_specs": specs}
}

func (s *Server) listServers(detail bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.readBarrier(c); err != nil {
			return err
		}
		q := c.QueryParams()
		limit, err := intParam(q, "limit")
		if err != nil {
			return err
		}
		project, err := listProject(callerOf(c), q)
		if err != nil {
			return err
		}
		all := s.c.Store().Servers()
		sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt.After(all[j].CreatedAt) }) // newest first, like Nova
		start := 0
		if m := q.Get("marker"); m != "" {
			start = -1
			for i, v := range all {
				if v.ID == m {
					start = i + 1
				}
			}
			if start < 0 {
				return badRequest("marker [%s] not found", m)
			}
		}
		var out []any
		var last string
		more := false
		for _, v := range all[start:] {
			if !v.Live() && q.Get("deleted") != "true" {
				continue
			}
			if project != "" && v.Project() != project {
				continue
			}
			if st := q.Get("status"); st != "" && !strings.EqualFold(st, string(v.Status)) {
				continue
			}
			if h := q.Get("host"); h != "" && h != v.Host {
				continue
			}
			if n := q.Get("name"); n != "" && !strings.Contains(v.Name, n) {
				continue
			}
			if limit > 0 && len(out) == limit {
				more = true
				break
			}
			if detail {
				out = append(out, s.novaServerView(c, v))
			} else {
				out = append(out, map[string]any{"id": v.ID, "name": v.Name, "links": serverLinks(c, v.ID)})
			}
			last = v.ID
		}
		if out == nil {
			out = []any{}
		}
		resp := map[string]any{"servers": out}
		if more {
			nq := url.Values{}
			for k, v := range q {
				nq[k] = v
			}
			nq.Set("marker", last)
			resp["servers_links"] = []link{{Rel: "next", Href: baseURL(c) + c.Request().URL.Path + "?" + nq.Encode()}}
		}
		return c.JSON(http.StatusOK, resp)
	}
}

// liveServer returns a server that is not deleted (deleted ones are 404,
// as in Nova).
func (s *Server) liveServer(id string) (fsm.Server, error) {
	v, err := s.c.Store().Server(id)
	if err != nil {
		return v, echo.NewHTTPError(http.StatusNotFound, "Instance "+id+" could not be found.")
	}
	if !v.Live() {
		return v, echo.NewHTTPError(http.StatusNotFound, "Instance "+id+" could not be found.")
	}
	return v, nil
}

func (s *Server) getServer(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	v, err := s.visibleServer(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server": s.novaServerView(c, v)})
}

func (s *Server) deleteServer(c echo.Context) error {
	// No local pre-check for a caller that may delete any server: this
	// peer's replica may not have applied a create the client saw
	// acknowledged elsewhere, and the leader's Apply answers 404. A
	// project's caller is checked against the server, after a read
	// barrier for the same reason; another project's server is a 404.
	if cl := callerOf(c); !cl.seesEveryProject() {
		if err := s.c.ReadBarrier(c.Request().Context(), cluster.Default); err != nil {
			return err
		}
		v, err := s.visibleServer(c, c.Param("id"))
		if err != nil {
			return err
		}
		if v.Locked { // only admins delete a locked server, as in Nova (actions.go)
			return echo.NewHTTPError(http.StatusConflict, "Instance "+v.ID+" is locked")
		}
	}
	err := s.propose(c, &fsm.DeleteServer{ID: c.Param("id")})
	if errors.Is(err, fsm.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "Instance "+c.Param("id")+" could not be found.")
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
