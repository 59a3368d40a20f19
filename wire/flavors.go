package wire

import "encoding/json"

// Flavor is a flavor as Nova's API shows it at ComputeVersion (Description
// from 2.55, ExtraSpecs from 2.61, Swap a number from 2.75).
type Flavor struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	RAM         int               `json:"ram"`
	Disk        int               `json:"disk"`
	VCPUs       int               `json:"vcpus"`
	Ephemeral   int               `json:"OS-FLV-EXT-DATA:ephemeral"`
	Swap        int               `json:"swap"`
	RxTxFactor  float64           `json:"rxtx_factor"`
	IsPublic    bool              `json:"os-flavor-access:is_public"`
	Disabled    bool              `json:"OS-FLV-DISABLED:disabled"`
	Description *string           `json:"description"`
	ExtraSpecs  map[string]string `json:"extra_specs"`
	Links       []Link            `json:"links"`
}

// FlavorBrief is a flavor in GET /flavors (without detail; Description
// from 2.55).
type FlavorBrief struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	Links       []Link  `json:"links"`
}

// FlavorResponse is the body of GET /flavors/{id} and of the answers that
// show a flavor.
type FlavorResponse struct {
	Flavor Flavor `json:"flavor"`
}

// FlavorsResponse is the body of GET /flavors/detail; Links holds the
// next page's link when a limit cut the list.
type FlavorsResponse struct {
	Flavors []Flavor `json:"flavors"`
	Links   []Link   `json:"flavors_links,omitempty"`
}

// FlavorCreateRequest is Nova's POST /flavors body.
type FlavorCreateRequest struct {
	Flavor *FlavorCreate `json:"flavor"`
}

// FlavorCreate is a flavor to create: name, ram, vcpus and disk are
// required; ID defaults to a new UUID, RxTxFactor to 1.0, IsPublic to true.
type FlavorCreate struct {
	Name        *string  `json:"name,omitempty"`
	ID          *string  `json:"id,omitempty"`
	RAM         *int     `json:"ram,omitempty"`
	VCPUs       *int     `json:"vcpus,omitempty"`
	Disk        *int     `json:"disk,omitempty"`
	Ephemeral   *int     `json:"OS-FLV-EXT-DATA:ephemeral,omitempty"`
	Swap        *int     `json:"swap,omitempty"`
	RxTxFactor  *float64 `json:"rxtx_factor,omitempty"`
	IsPublic    *bool    `json:"os-flavor-access:is_public,omitempty"`
	Description *string  `json:"description,omitempty"`
}

// FlavorUpdateRequest is PUT /flavors/{id} (microversion 2.55).
type FlavorUpdateRequest struct {
	Flavor *FlavorUpdate `json:"flavor"`
}

// FlavorUpdate changes the one field of a flavor that may change.
type FlavorUpdate struct {
	Description json.RawMessage `json:"description"` // a string, or null to clear it
}

// ExtraSpecsBody is the body of POST /flavors/{id}/os-extra_specs and of
// GET on it.
type ExtraSpecsBody struct {
	ExtraSpecs map[string]string `json:"extra_specs"`
}

// FlavorAccessAction is POST /flavors/{id}/action: exactly one of Add
// (addTenantAccess) and Remove (removeTenantAccess).
type FlavorAccessAction struct {
	Add    *TenantAccess `json:"addTenantAccess,omitempty"`
	Remove *TenantAccess `json:"removeTenantAccess,omitempty"`
}

// TenantAccess names the project a private flavor is given or taken.
type TenantAccess struct {
	Tenant string `json:"tenant"`
}

// FlavorAccessResponse is the body of os-flavor-access answers.
type FlavorAccessResponse struct {
	FlavorAccess []FlavorAccess `json:"flavor_access"`
}

// FlavorAccess is one project's access to a private flavor.
type FlavorAccess struct {
	FlavorID string `json:"flavor_id"`
	TenantID string `json:"tenant_id"`
}
