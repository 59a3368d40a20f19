package nova

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// A server's metadata, /servers/{id}/metadata, as Nova's server_metadata
// controller serves it: the whole of it (GET; POST merges, PUT replaces)
// and one item (GET, PUT, DELETE /servers/{id}/metadata/{key}).

// metadataBody is the body of POST and PUT /servers/{id}/metadata.
type metadataBody struct {
	Metadata map[string]json.RawMessage `json:"metadata"`
}

// metaBody is the body of PUT /servers/{id}/metadata/{key}.
type metaBody struct {
	Meta map[string]json.RawMessage `json:"meta"`
}

// metadataValues reads a body's items: every value a string, as Nova's
// schema has them.
func metadataValues(field string, raw map[string]json.RawMessage) (map[string]string, error) {
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, invalidInput(field, string(v), fmt.Sprintf("%s is not of type 'string'", v))
		}
		out[k] = s
	}
	return out, nil
}

// editErr maps the fsm's refusal of an edit of server id to Nova's answer.
func editErr(err error, id string) error {
	if errors.Is(err, fsm.ErrNotFound) && strings.Contains(err.Error(), "server "+id+" does not exist") {
		return core.ServerNotFound(id)
	}
	if errors.Is(err, fsm.ErrConflict) {
		return actionConflict(err, id)
	}
	return err
}

// serverForEdit is the server of the request's path, read after a barrier.
func (h *Handlers) serverForEdit(c echo.Context) (fsm.Server, error) {
	if err := h.st.ReadBarrier(c); err != nil {
		return fsm.Server{}, err
	}
	return h.visibleServer(c, c.Param("id"))
}

// ListServerMetadata is GET /servers/{id}/metadata.
func (h *Handlers) ListServerMetadata(c echo.Context) error {
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"metadata": orEmpty(v.Metadata)})
}

// SetServerMetadata is POST (merge) or PUT (replace) /servers/{id}/metadata.
func (h *Handlers) SetServerMetadata(replace bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		var body metadataBody
		if err := core.BindStrict(c, &body); err != nil {
			return err
		}
		if body.Metadata == nil {
			return core.BadRequest("Invalid input for field/attribute metadata. 'metadata' is a required property")
		}
		meta, err := metadataValues("metadata", body.Metadata)
		if err != nil {
			return err
		}
		if err := checkMetadata(meta); err != nil {
			return err
		}
		op := fsm.MetadataMerge
		if replace {
			op = fsm.MetadataReplace
		}
		v, err := h.editMetadata(c, &fsm.SetServerMetadata{Op: op, Metadata: meta})
		if err != nil {
			return err
		}
		if replace {
			return c.JSON(http.StatusOK, map[string]any{"metadata": meta})
		}
		return c.JSON(http.StatusOK, map[string]any{"metadata": orEmpty(v.Metadata)})
	}
}

// editMetadata proposes cmd for the server of the path and returns it as
// it is then.
func (h *Handlers) editMetadata(c echo.Context, cmd *fsm.SetServerMetadata) (fsm.Server, error) {
	v, err := h.serverForEdit(c)
	if err != nil {
		return v, err
	}
	if !h.known(fsm.CmdSetServerMetadata) {
		return v, notYet("A server's metadata")
	}
	cmd.ID, cmd.Admin = v.ID, core.CallerOf(c).Role == core.RoleAdmin
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return v, editErr(err, v.ID)
	}
	return h.st.Store().Server(v.ID)
}

// GetServerMetadataItem is GET /servers/{id}/metadata/{key}.
func (h *Handlers) GetServerMetadataItem(c echo.Context) error {
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	key := c.Param("key")
	val, ok := v.Metadata[key]
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Metadata item was not found")
	}
	return c.JSON(http.StatusOK, map[string]any{"meta": map[string]string{key: val}})
}

// SetServerMetadataItem is PUT /servers/{id}/metadata/{key}: one item,
// whose key is the path's.
func (h *Handlers) SetServerMetadataItem(c echo.Context) error {
	var body metaBody
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	switch {
	case body.Meta == nil:
		return core.BadRequest("Invalid input for field/attribute meta. 'meta' is a required property")
	case len(body.Meta) > 1:
		return core.BadRequest("Request body contains too many items")
	case len(body.Meta) == 0:
		return core.BadRequest("Invalid input for field/attribute meta. {} does not have enough properties")
	}
	meta, err := metadataValues("meta", body.Meta)
	if err != nil {
		return err
	}
	key := c.Param("key")
	if _, ok := meta[key]; !ok {
		return core.BadRequest("Request body and URI mismatch")
	}
	if err := checkMetadata(meta); err != nil {
		return err
	}
	if _, err := h.editMetadata(c, &fsm.SetServerMetadata{Op: fsm.MetadataMerge, Metadata: maps.Clone(meta)}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"meta": meta})
}

// DeleteServerMetadataItem is DELETE /servers/{id}/metadata/{key}.
func (h *Handlers) DeleteServerMetadataItem(c echo.Context) error {
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	if _, ok := v.Metadata[c.Param("key")]; !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Metadata item was not found")
	}
	if _, err := h.editMetadata(c, &fsm.SetServerMetadata{Op: fsm.MetadataDelete, Key: c.Param("key")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
