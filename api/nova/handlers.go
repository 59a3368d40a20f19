package nova

import (
	"log/slog"

	"github.com/corral-dev/corral/api/core"
)

// Config is what the compute API needs besides the replicated state.
type Config struct {
	// Images, when set ([glance]), checks that a boot's or rebuild's
	// imageRef is an active Glance image (images.go).
	Images ImageService
	// BaremetalNodes is the Ironic of the os-baremetal-nodes proxy (nil: 404).
	BaremetalNodes BaremetalNodes
	// NoInstancePassword turns off Nova's enable_instance_password: the
	// answers to a create and a rebuild carry no adminPass.
	NoInstancePassword bool
	// Networks, when set ([neutron]), checks a boot's networks and ports
	// in Neutron (networks.go).
	Networks NetworkService
	// Logger logs what the compute API does besides answering (default:
	// slog.Default()).
	Logger *slog.Logger
}

// Handlers serve the compute API.
type Handlers struct {
	st     *core.State
	images ImageService
	// networks is Neutron (nil without [neutron]).
	networks NetworkService
	// Baremetal serves os-baremetal-nodes.
	Baremetal BaremetalProxy
	// noPassword: enable_instance_password is off.
	noPassword bool
	log        *slog.Logger
}

// New returns the compute API's handlers over st.
func New(st *core.State, cfg Config) *Handlers {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Handlers{st: st, images: cfg.Images, networks: cfg.Networks, Baremetal: BaremetalProxy{Source: cfg.BaremetalNodes},
		noPassword: cfg.NoInstancePassword, log: cfg.Logger.With("component", "compute-api")}
}
