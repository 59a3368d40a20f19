package api

import (
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// OpenAPIPath serves the OpenAPI document of the native /v1 admin API.
const OpenAPIPath = "/v1/openapi.json"

// apiOp documents one operation of the /v1 API; its key in openAPIOps is
// "METHOD /path" as in the route table. A test checks that the document
// and the route table list the same operations.
type apiOp struct {
	summary string
	tag     string
	body    string // request body schema name ("" for none)
	resp    string // 2xx response schema name ("" for a generic object)
	status  int    // success status (default 200)
}

var openAPIOps = map[string]apiOp{
	"GET " + OpenAPIPath:                      {summary: "This document", tag: "meta"},
	"GET /v1/cluster/members":                 {summary: "Gossip members and their raft roles", tag: "cluster", resp: "Members"},
	"GET /v1/cluster/raft":                    {summary: "This peer's view of raft", tag: "cluster", resp: "RaftStatus"},
	"POST /v1/agent/leave":                    {summary: "Make this peer leave the cluster cleanly and exit", tag: "cluster", status: http.StatusAccepted},
	"GET /v1/hosts":                           {summary: "Compute hosts, their status and capacity", tag: "hosts"},
	"GET /v1/hosts/:name":                     {summary: "One compute host", tag: "hosts"},
	"POST /v1/hosts/:name/drain":              {summary: "Move a host's servers away and keep new ones off it", tag: "hosts"},
	"POST /v1/hosts/:name/undrain":            {summary: "Let a drained host take servers again", tag: "hosts"},
	"POST /v1/hosts/:name/force-down":         {summary: "Mark a host down now (its servers move)", tag: "hosts"},
	"GET /v1/nodes":                           {summary: "Ironic nodes as the cluster mirrors them", tag: "ironic"},
	"GET /v1/reservations":                    {summary: "Committed node reservations", tag: "ironic"},
	"GET /v1/networks":                        {summary: "Networks servers may attach to", tag: "ironic"},
	"POST /v1/servers/:id/move":               {summary: "Give a server a new owner host", tag: "servers"},
	"GET /v1/servers/:id/owner":               {summary: "A server's owner host and epoch", tag: "servers"},
	"GET /v1/plan/rebalance":                  {summary: "Moves that would even out the servers per host", tag: "servers"},
	"POST /v1/manage/ironic-flavor-migration": {summary: "Migrate flavors to Ironic resource classes", tag: "manage"},
	"POST " + AdoptServerPath:                 {summary: "Adopt a server built by Nova's baremetal driver", tag: "manage"},
	"GET " + KeyringPath:                      {summary: "Every live member's gossip keyring", tag: "operator", resp: "KeyringResponse"},
	"POST " + KeyringPath:                     {summary: "Install a gossip key on every live member", tag: "operator", body: "KeyringRequest", resp: "KeyringResponse"},
	"PUT " + KeyringPath:                      {summary: "Make an installed gossip key primary on every live member", tag: "operator", body: "KeyringRequest", resp: "KeyringResponse"},
	"DELETE " + KeyringPath:                   {summary: "Remove a gossip key from every live member", tag: "operator", body: "KeyringRequest", resp: "KeyringResponse"},
	"POST " + RemovePeerPath:                  {summary: "Remove a dead peer from the raft configuration", tag: "operator", body: "RemovePeerRequest", status: http.StatusNoContent},
	"GET " + SnapshotPath:                     {summary: "Save a consistent snapshot file of the replicated state (taken by the leader)", tag: "operator", resp: "binary"},
	"POST " + SnapshotPath:                    {summary: "Restore a snapshot file into the running cluster", tag: "operator", body: "binary", resp: "SnapshotHeader"},
}

// openAPISchemas are the named schemas the operations refer to.
var openAPISchemas = map[string]any{
	"Error": obj(map[string]any{"error": obj(map[string]any{
		"code": typ("integer"), "kind": typ("string"), "message": typ("string"), "request_id": typ("string")})}),
	"Members": obj(map[string]any{"members": arr(obj(map[string]any{
		"name": typ("string"), "address": typ("string"), "status": typ("string"), "kind": typ("string"),
		"api_address": typ("string"), "raft_address": typ("string"),
		"raft": obj(map[string]any{"suffrage": typ("string"), "leader": typ("boolean")})}))}),
	"RaftStatus": obj(map[string]any{"name": typ("string"), "state": typ("string"), "leader": typ("string"),
		"leader_address": typ("string"), "term": typ("integer"), "commit_index": typ("integer"),
		"applied_index": typ("integer"), "last_index": typ("integer"), "last_snapshot_index": typ("integer"),
		"last_contact": typ("string"), "voters": arr(typ("string")), "nonvoters": arr(typ("string"))}),
	"KeyringRequest": obj(map[string]any{"key": map[string]any{"type": "string", "format": "byte", "description": "base64 of 32 bytes"}}),
	"KeyringResponse": obj(map[string]any{
		"peers":  arr(obj(map[string]any{"peer": typ("string"), "primary": typ("string"), "keys": arr(typ("string"))})),
		"errors": map[string]any{"type": "object", "additionalProperties": typ("string")}}),
	"RemovePeerRequest": obj(map[string]any{"name": typ("string")}),
	"SnapshotHeader": obj(map[string]any{"index": typ("integer"), "term": typ("integer"), "size": typ("integer"),
		"sha256": typ("string"), "taken_at": typ("string"), "taken_by": typ("string"), "digest": typ("string")}),
}

func typ(t string) map[string]any { return map[string]any{"type": t} }
func arr(items any) map[string]any {
	return map[string]any{"type": "array", "items": items}
}
func obj(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

var pathParamRE = regexp.MustCompile(`:([A-Za-z_]+)`)

// documentedRoute reports whether a route belongs in the /v1 document:
// every /v1 route but the peers' internal forwarding endpoints.
func documentedRoute(path string) bool {
	return strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, PeerPathPrefix)
}

// openAPIDoc builds the OpenAPI 3 document from openAPIOps and the roles
// of the route table.
func (s *Server) openAPIDoc() map[string]any {
	paths := map[string]map[string]any{}
	keys := make([]string, 0, len(openAPIOps))
	for k := range openAPIOps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		op := openAPIOps[k]
		method, path, _ := strings.Cut(k, " ")
		oaPath := pathParamRE.ReplaceAllString(path, "{$1}")
		status := op.status
		if status == 0 {
			status = http.StatusOK
		}
		o := map[string]any{"summary": op.summary, "tags": []string{op.tag}, "operationId": strings.ToLower(method) + strings.NewReplacer("/", "_", ":", "", "-", "_", ".", "_").Replace(path)}
		var params []any
		for _, m := range pathParamRE.FindAllStringSubmatch(path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": typ("string")})
		}
		if len(params) > 0 {
			o["parameters"] = params
		}
		if op.body != "" {
			o["requestBody"] = map[string]any{"required": true, "content": content(op.body)}
		}
		ok := map[string]any{"description": http.StatusText(status)}
		if status != http.StatusNoContent {
			ok["content"] = content(op.resp)
		}
		o["responses"] = map[string]any{
			strconv.Itoa(status): ok,
			"default":            map[string]any{"description": "An error", "content": content("Error")},
		}
		if role, known := s.roles[method+" "+path]; known && role != rolePublic {
			o["security"] = []any{map[string]any{"token": []string{}}}
			o["x-corral-role"] = string(role)
		}
		if paths[oaPath] == nil {
			paths[oaPath] = map[string]any{}
		}
		paths[oaPath][strings.ToLower(method)] = o
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "corral admin API", "version": "v1",
			"description": "corral's native admin API. The compute (Nova) and placement subsets follow OpenStack's own API references."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         openAPISchemas,
			"securitySchemes": map[string]any{"token": map[string]any{"type": "apiKey", "in": "header", "name": "X-Auth-Token"}},
		},
	}
}

func content(schema string) map[string]any {
	switch schema {
	case "binary":
		return map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
	case "":
		return map[string]any{"application/json": map[string]any{"schema": typ("object")}}
	}
	return map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/" + schema}}}
}

func (s *Server) openAPI(c echo.Context) error {
	return c.JSON(http.StatusOK, s.openAPIDoc())
}
