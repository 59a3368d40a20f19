package sim

import (
	"net/http"
	"strconv"
)

// apiError is an error that a handler answers with: Ironic's faultstring body.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errf(status int, msg string) *apiError { return &apiError{status: status, msg: msg} }

// marshal encodes like Python's json.dumps: no HTML escaping.
func marshal(v any) []byte { return appendJSON(nil, v) }

// pyString renders s as a JSON string literal, as json.dumps does.
func pyString(s string) string { return string(marshal(s)) }

// fail writes Ironic's error body: {"error_message": "<JSON of faultcode/faultstring/debuginfo>"}.
func (c *call) fail(status int, msg string) {
	code := "Client"
	if status >= 500 {
		code = "Server"
	}
	inner := `{"faultcode": ` + pyString(code) + `, "faultstring": ` + pyString(msg) + `, "debuginfo": null}`
	c.raw(status, map[string]any{"error_message": inner})
}

// abort writes the body of a request rejected before reaching a controller (code/title/description).
func (c *call) abort(status int, description string) {
	inner := `{"code": ` + strconv.Itoa(status) + `, "title": ` + pyString(http.StatusText(status)) +
		`, "description": ` + pyString(description) + `}`
	c.raw(status, map[string]any{"error_message": inner})
}

func (c *call) failErr(err *apiError) { c.fail(err.status, err.msg) }

func (c *call) raw(status int, body any) {
	b := marshal(body)
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	_, _ = c.w.Write(b)
}

func (c *call) json(status int, body any) { c.raw(status, body) }

func (c *call) noContent(status int) { c.w.WriteHeader(status) }

// Messages shared by several handlers.
func nodeNotFound(ident string) *apiError {
	return errf(http.StatusNotFound, "Node "+ident+" could not be found.")
}

func nodeLocked(uuid, host string) *apiError {
	return errf(http.StatusConflict, "Node "+uuid+" is locked by host "+host+
		", please retry after the current operation is completed.")
}

func nodeAssociated(node, instance string) *apiError {
	return errf(http.StatusConflict, "Node "+node+" is associated with instance "+instance+".")
}

func invalidStateRequested(action, node, state string) *apiError {
	return errf(http.StatusBadRequest, `The requested action "`+action+`" can not be performed on node "`+
		node+`" while it is in state "`+state+`".`)
}

func traitSchemaError(kind, t string) *apiError {
	return errf(http.StatusBadRequest, "Schema error for "+kind+": '"+t+
		"' is not valid under any of the given schemas. Possible root cause: '"+t+
		"' does not match '^CUSTOM_[A-Z0-9_]+$'")
}
