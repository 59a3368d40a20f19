package novabm

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-dev/corral/client"
)

// Paths of corral's API the migration uses.
const (
	AdoptPath        = "/v1/manage/adopt-server"
	reservationsPath = "/v1/reservations"
	nodesPath        = "/v1/nodes"
	flavorsPath      = "/compute/v2.1/flavors"
)

// HTTPCorral reaches the cluster through its HTTP API.
type HTTPCorral struct{ C *client.Client }

var (
	_ Corral      = HTTPCorral{}
	_ FlavorStore = HTTPCorral{}
)

// Reservations implements Corral.
func (h HTTPCorral) Reservations(ctx context.Context) (map[string]string, error) {
	var body struct {
		Reservations []struct {
			NodeUUID string `json:"node_uuid"`
			ServerID string `json:"server_id"`
		} `json:"reservations"`
	}
	if err := h.C.Do(ctx, http.MethodGet, reservationsPath+"?consistency=linearizable", nil, &body); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range body.Reservations {
		out[r.NodeUUID] = r.ServerID
	}
	return out, nil
}

// MirroredNodes implements Corral.
func (h HTTPCorral) MirroredNodes(ctx context.Context) (map[string]MirrorNode, error) {
	var body struct {
		Nodes []struct {
			UUID           string `json:"uuid"`
			ProvisionState string `json:"provision_state"`
			InstanceUUID   string `json:"instance_uuid"`
			Missing        bool   `json:"missing"`
		} `json:"nodes"`
	}
	if err := h.C.Do(ctx, http.MethodGet, nodesPath+"?consistency=linearizable", nil, &body); err != nil {
		return nil, err
	}
	out := make(map[string]MirrorNode, len(body.Nodes))
	for _, n := range body.Nodes {
		out[n.UUID] = MirrorNode{ProvisionState: n.ProvisionState, InstanceUUID: n.InstanceUUID, Missing: n.Missing}
	}
	return out, nil
}

// Adopt implements Corral.
func (h HTTPCorral) Adopt(ctx context.Context, r AdoptRequest) error {
	return h.C.Do(ctx, http.MethodPost, AdoptPath, r, nil)
}

// CorralFlavor is one of corral's flavors as the Nova API shows it.
type CorralFlavor struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	ExtraSpecs map[string]string `json:"extra_specs"`
}

// FlavorStore is what the flavor update needs from corral.
type FlavorStore interface {
	Flavors(ctx context.Context) ([]CorralFlavor, error)
	CreateFlavor(ctx context.Context, f NovaFlavor) error
	SetExtraSpecs(ctx context.Context, flavorID string, specs map[string]string) error
}

// Flavors implements FlavorStore.
func (h HTTPCorral) Flavors(ctx context.Context) ([]CorralFlavor, error) {
	var body struct {
		Flavors []CorralFlavor `json:"flavors"`
	}
	if err := h.C.Do(ctx, http.MethodGet, flavorsPath+"/detail", nil, &body); err != nil {
		return nil, err
	}
	return body.Flavors, nil
}

// CreateFlavor implements FlavorStore.
func (h HTTPCorral) CreateFlavor(ctx context.Context, f NovaFlavor) error {
	body := map[string]any{"id": f.FlavorID, "name": f.Name, "vcpus": f.VCPUs, "ram": f.MemoryMB, "disk": f.RootGB,
		"OS-FLV-EXT-DATA:ephemeral": f.EphemeralGB, "swap": f.SwapMB, "rxtx_factor": f.RxTxFactor,
		"os-flavor-access:is_public": f.IsPublic}
	return h.C.Do(ctx, http.MethodPost, flavorsPath, map[string]any{"flavor": body}, nil)
}

// SetExtraSpecs implements FlavorStore.
func (h HTTPCorral) SetExtraSpecs(ctx context.Context, flavorID string, specs map[string]string) error {
	return h.C.Do(ctx, http.MethodPost, flavorsPath+"/"+url.PathEscape(flavorID)+"/os-extra_specs",
		map[string]any{"extra_specs": specs}, nil)
}
