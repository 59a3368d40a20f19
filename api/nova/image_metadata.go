package nova

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/glance"
)

// An image's metadata, /images/{id}/metadata (up to 2.38), as Nova's
// image_metadata controller serves it: the image's custom properties in
// Glance, read with the caller's token and changed by a JSON patch of
// them (Nova's update with purge_props). The image's properties count
// against the project's metadata_items quota, as in Nova.

// metadataImage checks a metadata call and reads the image.
func (h *Handlers) metadataImage(c echo.Context) (novaImage, error) {
	if err := h.imageProxy(c, 38); err != nil {
		return novaImage{}, err
	}
	return h.readImage(c, c.Param("id"))
}

// setImageProperties makes the image's properties props (a JSON patch of
// the difference, in key order) and returns them as Glance then holds
// them. The metadata_items quota of the caller's project bounds them.
func (h *Handlers) setImageProperties(c echo.Context, im novaImage, props map[string]any) (map[string]any, error) {
	if limit := h.st.Store().MetadataItemsLimit(core.CallerProject(c)); len(props) > limit {
		return nil, fmt.Errorf("%w: Image metadata limit exceeded", core.ErrForbidden)
	}
	tok, err := imageWriter(c)
	if err != nil {
		return nil, err
	}
	var ops []glance.PatchOp
	for _, k := range sortedKeys(im.props) {
		if _, keep := props[k]; !keep {
			ops = append(ops, glance.PatchOp{Op: "remove", Path: glance.PropertyPath(k)})
		}
	}
	for _, k := range sortedKeys(props) {
		v := fmt.Sprint(props[k])
		old, had := im.props[k]
		switch {
		case !had:
			ops = append(ops, glance.PatchOp{Op: "add", Path: glance.PropertyPath(k), Value: &v})
		case fmt.Sprint(old) != v:
			ops = append(ops, glance.PatchOp{Op: "replace", Path: glance.PropertyPath(k), Value: &v})
		}
	}
	if len(ops) == 0 {
		return im.props, nil
	}
	ctx := c.Request().Context()
	d, err := h.images.PatchImage(ctx, tok, im.id, ops)
	if err != nil {
		return nil, imageError(err, im.id, "Image not found.")
	}
	base, err := h.images.BaseAttributes(ctx, tok)
	if err != nil {
		return nil, imageError(err, im.id, "Image not found.")
	}
	return toNovaImage(d, base, h.images.URL()).props, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// imageMetadataBody reads and checks the metadata of a POST or PUT, as
// Nova's schema (parameter_types.metadata).
func imageMetadataBody(c echo.Context) (map[string]string, error) {
	var body metadataBody
	if err := core.BindStrict(c, &body); err != nil {
		return nil, err
	}
	if body.Metadata == nil {
		return nil, core.BadRequest("Invalid input for field/attribute metadata. 'metadata' is a required property")
	}
	meta, err := metadataValues("metadata", body.Metadata)
	if err != nil {
		return nil, err
	}
	return meta, checkMetadata(meta)
}

// ListImageMetadata is GET /images/{id}/metadata.
func (h *Handlers) ListImageMetadata(c echo.Context) error {
	im, err := h.metadataImage(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"metadata": im.props})
}

// SetImageMetadata is POST (merge) or PUT (replace) /images/{id}/metadata.
func (h *Handlers) SetImageMetadata(replace bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := imagesGone(c, 38); err != nil {
			return err
		}
		meta, err := imageMetadataBody(c)
		if err != nil {
			return err
		}
		im, err := h.metadataImage(c)
		if err != nil {
			return err
		}
		props := map[string]any{}
		if !replace {
			for k, v := range im.props {
				props[k] = v
			}
		}
		for k, v := range meta {
			props[k] = v
		}
		got, err := h.setImageProperties(c, im, props)
		if err != nil {
			return err
		}
		if replace {
			return c.JSON(http.StatusOK, map[string]any{"metadata": meta})
		}
		return c.JSON(http.StatusOK, map[string]any{"metadata": got})
	}
}

// GetImageMetadataItem is GET /images/{id}/metadata/{key}.
func (h *Handlers) GetImageMetadataItem(c echo.Context) error {
	im, err := h.metadataImage(c)
	if err != nil {
		return err
	}
	key := c.Param("key")
	v, ok := im.props[key]
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "The resource could not be found.")
	}
	return c.JSON(http.StatusOK, map[string]any{"meta": map[string]any{key: v}})
}

// SetImageMetadataItem is PUT /images/{id}/metadata/{key}: one item,
// whose key is the path's.
func (h *Handlers) SetImageMetadataItem(c echo.Context) error {
	if err := imagesGone(c, 38); err != nil {
		return err
	}
	var body metaBody
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	switch {
	case body.Meta == nil:
		return core.BadRequest("Invalid input for field/attribute meta. 'meta' is a required property")
	case len(body.Meta) > 1:
		return core.BadRequest("Invalid input for field/attribute meta. Value: %s. %s has too many properties", c.Param("key"), "meta")
	case len(body.Meta) == 0:
		return core.BadRequest("Invalid input for field/attribute meta. {} does not have enough properties")
	}
	meta, err := metadataValues("meta", body.Meta)
	if err != nil {
		return err
	}
	if err := checkMetadata(meta); err != nil {
		return err
	}
	key := c.Param("key")
	if _, ok := meta[key]; !ok {
		return core.BadRequest("Request body and URI mismatch")
	}
	im, err := h.metadataImage(c)
	if err != nil {
		return err
	}
	props := map[string]any{key: meta[key]}
	for k, v := range im.props {
		if k != key {
			props[k] = v
		}
	}
	if _, err := h.setImageProperties(c, im, props); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"meta": meta})
}

// DeleteImageMetadataItem is DELETE /images/{id}/metadata/{key}.
func (h *Handlers) DeleteImageMetadataItem(c echo.Context) error {
	im, err := h.metadataImage(c)
	if err != nil {
		return err
	}
	key := c.Param("key")
	if _, ok := im.props[key]; !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Invalid metadata key")
	}
	props := map[string]any{}
	for k, v := range im.props {
		if k != key {
			props[k] = v
		}
	}
	if _, err := h.setImageProperties(c, im, props); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
