package glance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The images of Glance's v2 API as Nova's image proxy (GET /images and
// its metadata) reaches them: whole documents, lists, deletes and JSON
// patches, and the image schema that tells Glance's own attributes from
// an image's custom properties.

// Doc is an image as Glance's v2 API answers it: its attributes and its
// custom properties side by side, as JSON values.
type Doc map[string]any

// ID is the image's id.
func (d Doc) ID() string {
	s, _ := d["id"].(string)
	return s
}

// PatchOp is one operation of a change of an image (RFC 6902, as
// Glance's application/openstack-images-v2.1-json-patch takes it).
type PatchOp struct {
	Op    string  `json:"op"` // "add", "replace" or "remove"
	Path  string  `json:"path"`
	Value *string `json:"value,omitempty"` // nil for "remove"
}

// PropertyPath is the JSON pointer of an image's attribute or property
// name (RFC 6901 escapes "~" and "/").
func PropertyPath(name string) string {
	return "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// pageSize is how many images one request asks for: Glance's most.
const pageSize = 1000

// maxPages bounds a listing, whatever Glance answers.
const maxPages = 1000

// ListImages lists images as GET /v2/images?q does, page after page:
// all of them, or the first max when max > 0. q holds Glance's filters
// and sort keys (not limit nor marker, which the walk sets; a marker in
// q is where it starts).
func (c *Client) ListImages(ctx context.Context, token string, q url.Values, max int) ([]Doc, error) {
	q = cloneValues(q)
	var out []Doc
	for range maxPages {
		n := pageSize
		if max > 0 {
			n = min(n, max-len(out))
		}
		q.Set("limit", strconv.Itoa(n))
		body, err := c.call(ctx, token, http.MethodGet, "/v2/images?"+q.Encode(), "", nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			Images []Doc  `json:"images"`
			Next   string `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("%w: GET %s/v2/images answered no image list", ErrUnavailable, c.base)
		}
		out = append(out, page.Images...)
		if page.Next == "" || len(page.Images) == 0 || max > 0 && len(out) >= max {
			return out, nil
		}
		q.Set("marker", page.Images[len(page.Images)-1].ID())
	}
	return nil, fmt.Errorf("%w: GET %s/v2/images did not end after %d pages", ErrUnavailable, c.base, maxPages)
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// ImageDoc reads image id whole.
func (c *Client) ImageDoc(ctx context.Context, token, id string) (Doc, error) {
	body, err := c.call(ctx, token, http.MethodGet, "/v2/images/"+url.PathEscape(id), "", nil)
	if err != nil {
		return nil, err
	}
	return imageDoc(body, c.base, id)
}

func imageDoc(body []byte, base, id string) (Doc, error) {
	var d Doc
	if err := json.Unmarshal(body, &d); err != nil || d.ID() == "" {
		return nil, fmt.Errorf("%w: %s/v2/images/%s answered no image document", ErrUnavailable, base, url.PathEscape(id))
	}
	return d, nil
}

// DeleteImage deletes image id.
func (c *Client) DeleteImage(ctx context.Context, token, id string) error {
	_, err := c.call(ctx, token, http.MethodDelete, "/v2/images/"+url.PathEscape(id), "", nil)
	return err
}

// PatchImage changes image id by ops and returns it as it is then.
func (c *Client) PatchImage(ctx context.Context, token, id string, ops []PatchOp) (Doc, error) {
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	out, err := c.call(ctx, token, http.MethodPatch, "/v2/images/"+url.PathEscape(id), "application/openstack-images-v2.1-json-patch", body)
	if err != nil {
		return nil, err
	}
	return imageDoc(out, c.base, id)
}

// BaseAttributes are the attributes Glance's image schema (GET
// /v2/schemas/image) holds as its own, not custom properties: those
// without "is_base": false. Read once, then kept; the map is shared and
// must not be changed.
func (c *Client) BaseAttributes(ctx context.Context, token string) (map[string]bool, error) {
	c.mu.Lock()
	base := c.attrs
	c.mu.Unlock()
	if base != nil {
		return base, nil
	}
	body, err := c.call(ctx, token, http.MethodGet, "/v2/schemas/image", "", nil)
	if err != nil {
		return nil, err
	}
	var schema struct {
		Properties map[string]struct {
			IsBase *bool `json:"is_base"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &schema); err != nil || len(schema.Properties) == 0 {
		return nil, fmt.Errorf("%w: GET %s/v2/schemas/image answered no image schema", ErrUnavailable, c.base)
	}
	base = map[string]bool{}
	for name, p := range schema.Properties {
		if p.IsBase == nil || *p.IsBase {
			base[name] = true
		}
	}
	c.mu.Lock()
	c.attrs = base
	c.mu.Unlock()
	return base, nil
}
