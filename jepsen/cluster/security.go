package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
)

// Security is what a run's agents and clients use beyond plain HTTP and
// static tokens.
type Security struct {
	TLS           *tls.Config // nil: plain HTTP
	GossipKey     bool
	Keystone      *Keystone
	KeystoneToken string // the workload user's token
	KeystoneSkip  string // why -keystone was not honoured
	// KeystoneProject is the id of the workload user's project.
	KeystoneProject string
	Neutron         *Neutron // nil: corral's own networks
	NeutronSkip     string   // why -neutron was not honoured
}

// SecureOptions is what a run asks for.
type SecureOptions struct {
	TLS          bool   // -tls: a CA and certificates, TLS everywhere
	GossipKey    bool   // encrypted gossip (with -tls, or for the keyrotate nemesis)
	Keystone     bool   // -keystone
	OpenStackEnv string // -openstack-env, for -keystone
	Neutron      bool   // -neutron (needs Keystone)
	NeutronEnv   string // -neutron-env, for -neutron
	// NeutronReapGrace is the reaper's grace the agents get (NeutronReapGraceOption).
	NeutronReapGrace time.Duration
	Logf             func(string, ...any)
}

// Secure sets up TLS (a CA and certificates from `corral tls`, in the
// cluster's pki/), gossip encryption (a key from `corral keygen`) and
// Keystone, and writes the agents' configuration files.
func (c *Cluster) Secure(ctx context.Context, o SecureOptions) (Security, error) {
	var sec Security
	var pki *PKI
	var key string
	var err error
	if o.TLS {
		if pki, err = MakePKI(ctx, c.Bin, filepath.Join(c.Dir, "pki"), c.Agents); err != nil {
			return sec, fmt.Errorf("make the run's CA and certificates: %w", err)
		}
		if sec.TLS, err = pki.ClientTLS(); err != nil {
			return sec, err
		}
	}
	if o.TLS || o.GossipKey {
		out, err := CLI(ctx, c.Bin, c.Dir, nil, "keygen")
		if err != nil {
			return sec, err
		}
		key, sec.GossipKey = strings.TrimSpace(out), true
	}
	if o.Keystone {
		ks, skip, err := KeystoneFromFile(o.OpenStackEnv)
		if err != nil {
			return sec, err
		}
		sec.KeystoneSkip = skip
		if skip != "" {
			o.Logf("-keystone skipped: %s", skip)
		} else {
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			tok, err := ks.Issue(tctx, &http.Client{}, ks.User, ks.Password, ks.Project)
			cancel()
			if err != nil {
				return sec, fmt.Errorf("-keystone: %w (is the control plane of %s up?)", err, o.OpenStackEnv)
			}
			sec.Keystone, sec.KeystoneToken, sec.KeystoneProject = ks, tok.Value, tok.ProjectID
			o.Logf("Keystone at %s: agents validate tokens as %s; the workload runs as %s in %s", ks.AuthURL, ks.ServiceUser, ks.User, ks.Project)
		}
	}
	if o.Neutron {
		if err := sec.neutron(ctx, o); err != nil {
			return sec, err
		}
	}
	if pki == nil && key == "" && sec.Keystone == nil {
		return sec, nil
	}
	c.NeutronReapGrace = o.NeutronReapGrace
	return sec, c.Configure(pki, key, sec.Keystone, sec.Neutron)
}

// neutron sets up -neutron: the env file read, and the network the boots
// ask for seen by the admin and shared, so that a control plane that is
// down or lacks it stops the run before the agents start.
func (s *Security) neutron(ctx context.Context, o SecureOptions) error {
	nt, skip, err := NeutronFromFile(o.NeutronEnv, s.Keystone)
	if err != nil {
		return fmt.Errorf("-neutron: %w", err)
	}
	if skip != "" {
		s.NeutronSkip = skip
		o.Logf("-neutron skipped: %s", skip)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	net, err := nt.Admin().Network(cctx, nt.NetworkID)
	if err != nil {
		return fmt.Errorf("-neutron: network %s (%s): %w (is the Neutron of %s up?)", nt.Network, nt.NetworkID, err, o.NeutronEnv)
	}
	if !net.Shared {
		return fmt.Errorf("-neutron: network %s (%s) is not shared: the workload's user could not boot on it", net.Name, net.ID)
	}
	nt.Network = net.Name
	s.Neutron = nt
	o.Logf("Neutron at %s: agents with [neutron] as %s; boots on the shared network %s (%s)", nt.URL, nt.Keystone.ServiceUser, nt.Network, nt.NetworkID)
	return nil
}

// ClientAPI is the workload's client: the admin's, or one with the
// Keystone user's token.
func (s Security) ClientAPI(admin *client.Corral) *client.Corral {
	if s.Keystone == nil {
		return admin
	}
	return client.NewCorral(s.KeystoneToken, s.TLS)
}

// Describe names the transport and the clients' credentials for the
// report.
func (s Security) Describe() (string, string) {
	transport := "HTTP"
	if s.TLS != nil {
		transport = "TLS (API with client certificates, raft, forwarding)"
	}
	if s.GossipKey {
		transport += ", encrypted gossip"
	} else {
		transport += ", gossip in clear"
	}
	auth := "a static admin token"
	switch {
	case s.Keystone != nil:
		auth = fmt.Sprintf("Keystone tokens of %s (member of %s); the suite's own reads use a static admin token", s.Keystone.User, s.Keystone.Project)
	case s.KeystoneSkip != "":
		auth += " (-keystone skipped: " + s.KeystoneSkip + ")"
	}
	return transport, auth
}

// DescribeNeutron names the networking of the run for the report ("":
// -neutron not asked for).
func (s Security) DescribeNeutron() string {
	switch {
	case s.Neutron != nil:
		return fmt.Sprintf("Neutron at %s, boots on the shared network %s (%s)", s.Neutron.URL, s.Neutron.Network, s.Neutron.NetworkID)
	case s.NeutronSkip != "":
		return "corral's own networks (-neutron skipped: " + s.NeutronSkip + ")"
	}
	return ""
}
