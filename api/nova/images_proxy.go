package nova

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/glance"
	"github.com/corral-dev/corral/wire"
)

// Nova's image proxy, GET /images, /images/detail, /images/{id} and
// DELETE /images/{id} (up to 2.35; 404 after, as in Nova), and an image's
// metadata (image_metadata.go, up to 2.38): Glance's images as the
// caller's Keystone token sees them, in Nova's view. Glance decides who
// sees and changes what. A caller with one of corral's static tokens
// reads as corral's [glance] service user and changes nothing: corral
// acts in Glance for a static token no further than a boot's image check.

// imagesMaxMinor is the last microversion of the image proxy (Nova's
// MAX_PROXY_API_SUPPORT_VERSION).
const imagesMaxMinor = 35

// novaImage is a Glance image as Nova's image API holds it
// (nova.image.glance._translate_from_glance): Glance's own attributes,
// and the custom properties apart.
type novaImage struct {
	id      string
	name    any // string, or nil
	status  string
	minRAM  int64
	minDisk int64
	size    any // the data's bytes, 0 when Glance has none
	created any // Nova's date, or nil
	updated any
	props   map[string]any
	glance  string // Glance's endpoint, for the alternate link
}

// imageOmitted are the attributes of Glance's documents that Nova's
// image dict leaves out (protected and the rest; the locations, asked
// for by the compute host only).
var imageOmitted = map[string]bool{"self": true, "schema": true, "protected": true, "virtual_size": true, "file": true,
	"tags": true, "direct_url": true, "locations": true, "visibility": true}

// toNovaImage translates a Glance document as Nova does: the attributes
// of Glance's schema stay attributes, every other one is a property
// (Nova JSON-decodes two properties it stores as JSON).
func toNovaImage(d glance.Doc, base map[string]bool, glanceURL string) novaImage {
	im := novaImage{id: d.ID(), props: map[string]any{}, glance: glanceURL, size: 0}
	for k, v := range d {
		switch {
		case imageOmitted[k]:
		case base[k]:
			switch k {
			case "name":
				im.name = v
			case "status":
				im.status, _ = v.(string)
			case "min_ram":
				im.minRAM = intOf(v)
			case "min_disk":
				im.minDisk = intOf(v)
			case "size":
				if v != nil {
					im.size = intOf(v)
				}
			case "created_at":
				im.created = novaDate(v)
			case "updated_at":
				im.updated = novaDate(v)
			}
		default:
			if s, ok := v.(string); ok && (k == "block_device_mapping" || k == "mappings") {
				var decoded any
				if json.Unmarshal([]byte(s), &decoded) == nil {
					v = decoded
				}
			}
			im.props[k] = v
		}
	}
	return im
}

func intOf(v any) int64 {
	if f, ok := v.(float64); ok {
		return int64(f)
	}
	return 0
}

// novaDate is a Glance time as Nova writes it (utils.isotime), nil when
// there is none.
func novaDate(v any) any {
	s, _ := v.(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// imageStatus and imageProgress are Nova's of each Glance status
// (UNKNOWN and 0 otherwise).
var (
	imageStatus = map[string]string{"active": "ACTIVE", "queued": "SAVING", "saving": "SAVING", "deleted": "DELETED",
		"pending_delete": "DELETED", "killed": "ERROR"}
	imageProgress = map[string]int{"queued": 25, "saving": 50, "active": 100}
)

// imageLink is a link of an image's view, whose alternate has a type.
type imageLink struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
	Type string `json:"type,omitempty"`
}

type imageItem struct {
	c  echo.Context
	im novaImage
}

func (it imageItem) links() []imageLink {
	u := core.BaseURL(it.c) + wire.ComputePrefix + "/images/" + url.PathEscape(it.im.id)
	return []imageLink{{Rel: "self", Href: u}, {Rel: "bookmark", Href: strings.Replace(u, wire.ComputePrefix, "/compute", 1)},
		{Rel: "alternate", Type: "application/vnd.openstack.image", Href: it.im.glance + "/images/" + url.PathEscape(it.im.id)}}
}

// The views of an image.
const (
	imageBrief view = 1 << iota // an entry of GET /images
	imageShow                   // GET /images/{id}, an entry of /images/detail
)

// imageTable is Nova's image view (views/images.py).
var imageTable = &table[imageItem]{
	resource: "image",
	views:    []string{"brief", "show"},
	fields: []field[imageItem]{
		{name: "id", until: v2(imagesMaxMinor), in: imageBrief | imageShow, value: func(i imageItem) any { return i.im.id }},
		{name: "name", until: v2(imagesMaxMinor), in: imageBrief | imageShow, value: func(i imageItem) any { return i.im.name }},
		{name: "links", until: v2(imagesMaxMinor), in: imageBrief | imageShow, value: func(i imageItem) any { return i.links() }},
		{name: "minRam", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any { return i.im.minRAM }},
		{name: "minDisk", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any { return i.im.minDisk }},
		{name: "metadata", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any { return i.im.props }},
		{name: "created", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any { return i.im.created }},
		{name: "updated", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any { return i.im.updated }},
		{name: "status", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any {
			if s, ok := imageStatus[i.im.status]; ok {
				return s
			}
			return "UNKNOWN"
		}},
		{name: "progress", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any { return imageProgress[i.im.status] }},
		{name: "OS-EXT-IMG-SIZE:size", until: v2(imagesMaxMinor), in: imageShow, value: func(i imageItem) any { return i.im.size }},
		{name: "server", until: v2(imagesMaxMinor), in: imageShow, when: "an image of a server (its instance_uuid property)",
			value: func(i imageItem) any {
				id, ok := i.im.props["instance_uuid"].(string)
				if !ok {
					return omit
				}
				return map[string]any{"id": id, "links": serverLinks(i.c, id)}
			}},
		{name: "OS-DCF:diskConfig", until: v2(imagesMaxMinor), in: imageShow, when: "an image with the auto_disk_config property",
			value: func(i imageItem) any {
				v, ok := i.im.props["auto_disk_config"]
				if !ok || v == nil {
					return omit
				}
				if boolFromString(fmt.Sprint(v)) {
					return "AUTO"
				}
				return "MANUAL"
			}},
	},
}

// boolFromString is oslo's strutils.bool_from_string, not strict.
func boolFromString(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "t", "true", "on", "y", "yes":
		return true
	}
	return false
}

// imagesGone is Nova's 404 for the image proxy after 2.35, and for an
// image's metadata after 2.38.
func imagesGone(c echo.Context, lastMinor int) error {
	if mvAtLeast(c, 2, lastMinor+1) {
		return echo.NewHTTPError(http.StatusNotFound, "The resource could not be found.")
	}
	return nil
}

// imageProxy checks a call of the proxy: its microversion, an image
// service configured.
func (h *Handlers) imageProxy(c echo.Context, lastMinor int) error {
	if err := imagesGone(c, lastMinor); err != nil {
		return err
	}
	if h.images == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no image service is configured on this peer: [glance] url is empty")
	}
	return nil
}

// imageWriter is the caller's Keystone token, for a change in Glance; a
// caller with a static token has none, and corral changes nothing as its
// own service user for it.
func imageWriter(c echo.Context) (string, error) {
	tok := core.CallerOf(c).KeystoneToken
	if tok == "" {
		return "", fmt.Errorf("%w: images are changed in Glance with the caller's own Keystone token; corral changes none for a static token",
			core.ErrForbidden)
	}
	return tok, nil
}

// imageError maps the image service's errors as Nova's image API does;
// notFound is the answer to a 404.
func imageError(err error, id, notFound string) error {
	switch {
	case errors.Is(err, glance.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, notFound)
	case errors.Is(err, glance.ErrUnauthorized):
		return fmt.Errorf("%w: Not authorized for image %s.", core.ErrForbidden, id)
	case errors.Is(err, glance.ErrInvalid):
		return core.BadRequest("Request of image %s got BadRequest response: %v", id, err)
	case errors.Is(err, glance.ErrConflict):
		return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Conflict updating image %s: %v", id, err))
	}
	return echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf("cannot reach the image service: %v", err))
}

// readImage reads image id whole, in Nova's form.
func (h *Handlers) readImage(c echo.Context, id string) (novaImage, error) {
	ctx, tok := c.Request().Context(), core.CallerOf(c).KeystoneToken
	d, err := h.images.ImageDoc(ctx, tok, id)
	if err != nil {
		return novaImage{}, imageError(err, id, "Image not found.")
	}
	base, err := h.images.BaseAttributes(ctx, tok)
	if err != nil {
		return novaImage{}, imageError(err, id, "Image not found.")
	}
	return toNovaImage(d, base, h.images.URL()), nil
}

// imageFilters are Nova's filters of a list and Glance's names of them.
var imageFilters = map[string]string{"name": "name", "status": "status", "changes-since": "changes-since",
	"server": "instance_uuid", "type": "image_type", "minRam": "min_ram", "minDisk": "min_disk"}

// glanceQuery is a list request's filters and paging as Glance's v2 API
// takes them (Nova's _get_filters and _extract_query_params_v2), and its
// limit (0: none).
func glanceQuery(q url.Values) (url.Values, int, error) {
	out := url.Values{}
	for k := range q {
		v := q.Get(k)
		name, known := imageFilters[k]
		if prop, ok := strings.CutPrefix(k, "property-"); ok {
			name, known = prop, true
		}
		switch {
		case !known:
		case k == "server":
			if i := strings.LastIndex(v, "/"); i >= 0 {
				v = v[i+1:]
			}
			out.Set(name, v)
		case k == "status":
			out.Set(name, strings.ToLower(v))
		case k == "changes-since":
			out.Set("updated_at", "gte:"+v)
		default:
			out.Set(name, v)
		}
	}
	limit := 0
	for _, p := range []string{"limit", "page_size", "offset"} {
		if !q.Has(p) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(q.Get(p)))
		switch {
		case err != nil:
			return nil, 0, core.BadRequest("Invalid input received: %s must be an integer", p)
		case n < 0:
			return nil, 0, core.BadRequest("Invalid input received: %s must be >= 0", p)
		case p == "limit":
			limit = n
		}
	}
	if m := q.Get("marker"); m != "" {
		out.Set("marker", m)
	}
	return out, limit, nil
}

// novaMaxLimit is Nova's [api] max_limit: a list that long has a next
// link.
const novaMaxLimit = 1000

// ListImages is GET /images (brief) and /images/detail.
func (h *Handlers) ListImages(detail bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := h.imageProxy(c, imagesMaxMinor); err != nil {
			return err
		}
		q, limit, err := glanceQuery(c.QueryParams())
		if err != nil {
			return err
		}
		ctx, tok := c.Request().Context(), core.CallerOf(c).KeystoneToken
		docs, err := h.images.ListImages(ctx, tok, q, limit)
		if err == nil {
			var base map[string]bool
			if base, err = h.images.BaseAttributes(ctx, tok); err == nil {
				return c.JSON(http.StatusOK, h.imageList(c, docs, base, detail, limit))
			}
		}
		switch {
		case errors.Is(err, glance.ErrInvalid):
			return core.BadRequest("%v", err) // Nova's Invalid: a filter or marker Glance refuses
		case errors.Is(err, glance.ErrUnauthorized):
			return fmt.Errorf("%w: %v", core.ErrForbidden, err)
		}
		return imageError(err, "", "Image not found.")
	}
}

func (h *Handlers) imageList(c echo.Context, docs []glance.Doc, base map[string]bool, detail bool, limit int) map[string]any {
	in := imageBrief
	if detail {
		in = imageShow
	}
	items := make([]any, 0, len(docs))
	for _, d := range docs {
		items = append(items, imageTable.render(c, in, imageItem{c: c, im: toNovaImage(d, base, h.images.URL())}))
	}
	out := map[string]any{"images": items}
	most := novaMaxLimit
	if limit > 0 {
		most = min(limit, novaMaxLimit)
	}
	if len(docs) > 0 && len(docs) == most {
		out["images_links"] = nextLinks(c, docs[len(docs)-1].ID())
	}
	return out
}

// ShowImage is GET /images/{id}.
func (h *Handlers) ShowImage(c echo.Context) error {
	if err := h.imageProxy(c, imagesMaxMinor); err != nil {
		return err
	}
	im, err := h.readImage(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"image": imageTable.render(c, imageShow, imageItem{c: c, im: im})})
}

// DeleteImage is DELETE /images/{id}.
func (h *Handlers) DeleteImage(c echo.Context) error {
	if err := h.imageProxy(c, imagesMaxMinor); err != nil {
		return err
	}
	tok, err := imageWriter(c)
	if err != nil {
		return err
	}
	id := c.Param("id")
	switch err := h.images.DeleteImage(c.Request().Context(), tok, id); {
	case errors.Is(err, glance.ErrUnauthorized):
		return fmt.Errorf("%w: You are not allowed to delete the image.", core.ErrForbidden)
	case err != nil:
		return imageError(err, id, "Image not found.")
	}
	return c.NoContent(http.StatusNoContent)
}
