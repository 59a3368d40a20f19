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
}

// SecureOptions is what a run asks for.
type SecureOptions struct {
	TLS          bool   // -tls: a CA and certificates, TLS everywhere
	GossipKey    bool   // encrypted gossip (with -tls, or for the keyrotate nemesis)
	Keystone     bool   // -keystone
	OpenStackEnv string // -openstack-env, for -keystone
	Logf         func(string, ...any)
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
			sec.KeystoneToken, err = ks.Token(tctx, &http.Client{})
			cancel()
			if err != nil {
				return sec, fmt.Errorf("-keystone: %w (is the control plane of %s up?)", err, o.OpenStackEnv)
			}
			sec.Keystone = ks
			o.Logf("Keystone at %s: agents validate tokens as %s; the workload runs as %s in %s", ks.AuthURL, ks.ServiceUser, ks.User, ks.Project)
		}
	}
	if pki == nil && key == "" && sec.Keystone == nil {
		return sec, nil
	}
	return sec, c.Configure(pki, key, sec.Keystone)
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
