package api

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/wire"
)

// operation documents one route of the admin API in its OpenAPI
// document; the route table (routes.go) carries it.
type operation struct {
	summary string
	tag     string
	body    string // request body schema name ("" for none)
	resp    string // 2xx response schema name ("" for a generic object)
	code    int    // success status (default 200)
}

// doc documents a route of the admin API.
func doc(tag, summary string) *operation { return &operation{summary: summary, tag: tag} }

// in names the schema of the request body.
func (o *operation) in(schema string) *operation { o.body = schema; return o }

// out names the schema of the success answer.
func (o *operation) out(schema string) *operation { o.resp = schema; return o }

// status is the success status, if not 200.
func (o *operation) status(code int) *operation { o.code = code; return o }

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

// documentedRoute reports whether a route belongs in the OpenAPI
// document: every route of the admin API but the peers' endpoints.
func documentedRoute(path string) bool {
	return strings.HasPrefix(path, wire.AdminPrefix+"/") && !core.IsPeerPath(path)
}

// openAPIDoc builds the OpenAPI 3 document of the admin API from the
// route table.
func (s *Server) openAPIDoc() map[string]any {
	paths := map[string]map[string]any{}
	for _, r := range s.routeTable() {
		op := r.doc
		if op == nil {
			continue
		}
		method, path := r.method, r.path
		oaPath := pathParamRE.ReplaceAllString(path, "{$1}")
		status := op.code
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
		if r.role != core.RolePublic {
			o["security"] = []any{map[string]any{"token": []string{}}}
			o["x-corral-role"] = string(r.role)
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

// openAPI serves wire.OpenAPIPath.
func (s *Server) openAPI(c echo.Context) error {
	return c.JSON(http.StatusOK, s.document)
}
