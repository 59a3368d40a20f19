package novabm

import (
	"context"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/wire"
)

// HTTPCorral reaches the cluster through its HTTP API.
type HTTPCorral struct{ C *client.Client }

var (
	_ Corral      = HTTPCorral{}
	_ FlavorStore = HTTPCorral{}
)

// at is the client reading at the given consistency.
func (h HTTPCorral) at(consistency string) *client.Client {
	c := *h.C
	c.Consistency = consistency
	return &c
}

// Reservations implements Corral.
func (h HTTPCorral) Reservations(ctx context.Context) (map[string]string, error) {
	rs, err := h.at("linearizable").ListReservations(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range rs {
		out[r.NodeUUID] = r.ServerID
	}
	return out, nil
}

// MirroredNodes implements Corral.
func (h HTTPCorral) MirroredNodes(ctx context.Context) (map[string]MirrorNode, error) {
	nodes, err := h.at("linearizable").ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]MirrorNode, len(nodes))
	for _, n := range nodes {
		out[n.UUID] = MirrorNode{ProvisionState: n.ProvisionState, InstanceUUID: n.InstanceUUID, Missing: n.Missing}
	}
	return out, nil
}

// Adopt implements Corral.
func (h HTTPCorral) Adopt(ctx context.Context, r wire.AdoptServerRequest) error {
	_, err := h.C.AdoptServer(ctx, r)
	return err
}

// FlavorStore is what the flavor update needs from corral.
type FlavorStore interface {
	Flavors(ctx context.Context) ([]wire.Flavor, error)
	CreateFlavor(ctx context.Context, f NovaFlavor) error
	SetExtraSpecs(ctx context.Context, flavorID string, specs map[string]string) error
}

// Flavors implements FlavorStore.
func (h HTTPCorral) Flavors(ctx context.Context) ([]wire.Flavor, error) {
	return h.at("").ListFlavors(ctx, client.FlavorQuery{})
}

// CreateFlavor implements FlavorStore.
func (h HTTPCorral) CreateFlavor(ctx context.Context, f NovaFlavor) error {
	_, err := h.C.CreateFlavor(ctx, wire.FlavorCreate{ID: new(f.FlavorID), Name: new(f.Name), VCPUs: new(int(f.VCPUs)),
		RAM: new(int(f.MemoryMB)), Disk: new(int(f.RootGB)), Ephemeral: new(int(f.EphemeralGB)), Swap: new(int(f.SwapMB)),
		RxTxFactor: new(f.RxTxFactor), IsPublic: new(f.IsPublic)})
	return err
}

// SetExtraSpecs implements FlavorStore.
func (h HTTPCorral) SetExtraSpecs(ctx context.Context, flavorID string, specs map[string]string) error {
	return h.C.SetFlavorExtraSpecs(ctx, flavorID, specs)
}
