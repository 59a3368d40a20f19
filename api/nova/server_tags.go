package nova

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// A server's tags, /servers/{id}/tags, from microversion 2.26, as Nova's
// server_tags controller serves them.

// tagsBody is the body of PUT /servers/{id}/tags.
type tagsBody struct {
	Tags []string `json:"tags"`
}

// needTags answers Nova's 404 for the tags below 2.26.
func needTags(c echo.Context) error {
	if !mvAtLeast(c, 2, 26) {
		return echo.NewHTTPError(http.StatusNotFound, "The resource could not be found: server tags need microversion 2.26")
	}
	return nil
}

// checkTags checks a list of tags as Nova's schema does.
func checkTags(tags []string) error {
	if len(tags) > fsm.MaxTags {
		return core.BadRequest("The number of tags exceeded the per-server limit %d", fsm.MaxTags)
	}
	for _, t := range tags {
		if err := checkTag("tags", t); err != nil {
			return err
		}
	}
	return nil
}

// ListServerTags is GET /servers/{id}/tags.
func (h *Handlers) ListServerTags(c echo.Context) error {
	if err := needTags(c); err != nil {
		return err
	}
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"tags": tagsOf(serverItem{v: v})})
}

// editTags proposes cmd for the server of the path and returns it as it
// is then.
func (h *Handlers) editTags(c echo.Context, cmd *fsm.SetServerTags) (fsm.Server, error) {
	if err := needTags(c); err != nil {
		return fsm.Server{}, err
	}
	v, err := h.serverForEdit(c)
	if err != nil {
		return v, err
	}
	if !h.known(fsm.CmdSetServerTags) {
		return v, notYet("A server's tags")
	}
	cmd.ID = v.ID
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return v, editErr(err, v.ID)
	}
	return h.st.Store().Server(v.ID)
}

// ReplaceServerTags is PUT /servers/{id}/tags.
func (h *Handlers) ReplaceServerTags(c echo.Context) error {
	var body tagsBody
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if body.Tags == nil {
		return core.BadRequest("Invalid input for field/attribute tags. 'tags' is a required property")
	}
	if err := checkTags(body.Tags); err != nil {
		return err
	}
	v, err := h.editTags(c, &fsm.SetServerTags{Op: fsm.TagsReplace, Tags: body.Tags})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"tags": tagsOf(serverItem{v: v})})
}

// DeleteServerTags is DELETE /servers/{id}/tags.
func (h *Handlers) DeleteServerTags(c echo.Context) error {
	if _, err := h.editTags(c, &fsm.SetServerTags{Op: fsm.TagsReplace}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// GetServerTag is GET /servers/{id}/tags/{tag}: 204 when the server has
// it.
func (h *Handlers) GetServerTag(c echo.Context) error {
	if err := needTags(c); err != nil {
		return err
	}
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	tag := c.Param("tag")
	if !slices.Contains(v.Tags, tag) {
		return echo.NewHTTPError(http.StatusNotFound, "Instance "+v.ID+" has no tag '"+tag+"'")
	}
	return c.NoContent(http.StatusNoContent)
}

// AddServerTag is PUT /servers/{id}/tags/{tag}: 201 with its Location
// when the tag is new, 204 when the server had it.
func (h *Handlers) AddServerTag(c echo.Context) error {
	tag := c.Param("tag")
	if err := checkTag("tag", tag); err != nil {
		return err
	}
	before, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	if _, err := h.editTags(c, &fsm.SetServerTags{Op: fsm.TagAdd, Tag: tag}); err != nil {
		return err
	}
	if slices.Contains(before.Tags, tag) {
		return c.NoContent(http.StatusNoContent)
	}
	c.Response().Header().Set("Location", core.BaseURL(c)+c.Request().URL.EscapedPath())
	return c.NoContent(http.StatusCreated)
}

// DeleteServerTag is DELETE /servers/{id}/tags/{tag}.
func (h *Handlers) DeleteServerTag(c echo.Context) error {
	if _, err := h.editTags(c, &fsm.SetServerTags{Op: fsm.TagDelete, Tag: c.Param("tag")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
