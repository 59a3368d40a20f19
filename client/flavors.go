package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/corral-dev/corral/wire"
)

// FlavorQuery narrows ListFlavors.
type FlavorQuery struct {
	// All lists private flavors too (is_public=none; admins).
	All             bool
	MinRAM, MinDisk int
	// Limit and Marker page the list (Limit 0: every flavor).
	Limit  int
	Marker string
}

func (q FlavorQuery) values() url.Values {
	v := url.Values{}
	if q.All {
		v.Set("is_public", "none")
	}
	for k, n := range map[string]int{"minRam": q.MinRAM, "minDisk": q.MinDisk, "limit": q.Limit} {
		if n > 0 {
			v.Set(k, strconv.Itoa(n))
		}
	}
	if q.Marker != "" {
		v.Set("marker", q.Marker)
	}
	return v
}

// ListFlavors lists flavors with details.
func (c *Client) ListFlavors(ctx context.Context, q FlavorQuery) ([]wire.Flavor, error) {
	var resp wire.FlavorsResponse
	err := c.compute(ctx, http.MethodGet, wire.FlavorsPath+"/detail", q.values(), nil, &resp)
	return resp.Flavors, err
}

// GetFlavor reads one flavor.
func (c *Client) GetFlavor(ctx context.Context, id string) (wire.Flavor, error) {
	var resp wire.FlavorResponse
	err := c.compute(ctx, http.MethodGet, wire.FlavorPath(id), nil, nil, &resp)
	return resp.Flavor, err
}

// CreateFlavor creates a flavor (409 when its id or name is taken).
func (c *Client) CreateFlavor(ctx context.Context, f wire.FlavorCreate) (wire.Flavor, error) {
	var resp wire.FlavorResponse
	err := c.compute(ctx, http.MethodPost, wire.FlavorsPath, nil, wire.FlavorCreateRequest{Flavor: &f}, &resp)
	return resp.Flavor, err
}

// DeleteFlavor deletes a flavor.
func (c *Client) DeleteFlavor(ctx context.Context, id string) error {
	return c.compute(ctx, http.MethodDelete, wire.FlavorPath(id), nil, nil, nil)
}

// SetFlavorExtraSpecs merges specs into a flavor's extra specs.
func (c *Client) SetFlavorExtraSpecs(ctx context.Context, id string, specs map[string]string) error {
	return c.compute(ctx, http.MethodPost, wire.ExtraSpecsPath(id), nil, wire.ExtraSpecsBody{ExtraSpecs: specs}, nil)
}

// DeleteFlavorExtraSpec removes one extra spec of a flavor.
func (c *Client) DeleteFlavorExtraSpec(ctx context.Context, id, key string) error {
	return c.compute(ctx, http.MethodDelete, wire.ExtraSpecPath(id, key), nil, nil, nil)
}
