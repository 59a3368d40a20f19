package cluster

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Configure gives every agent a configuration file with TLS (pki), the
// gossip key, Keystone and Neutron (each optional), and makes it read the
// file at every start.
func (c *Cluster) Configure(pki *PKI, gossipKey string, ks *Keystone, nt *Neutron) error {
	c.PKI, c.Keystone, c.Neutron = pki, ks, nt
	c.mu.Lock()
	c.gossipKey = gossipKey
	c.mu.Unlock()
	if err := c.writeConfigs(); err != nil {
		return err
	}
	for _, a := range c.Agents {
		a.p.Args = append(a.p.Args, "--config", a.ConfPath())
	}
	return nil
}

// GossipKey is the key the agents' configuration seeds a new keyring with.
func (c *Cluster) GossipKey() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gossipKey
}

// SetGossipKey rewrites every agent's `[gossip] encrypt` after a rotation,
// as an operator must, so that an agent restarted with an empty data dir
// joins with the current key.
func (c *Cluster) SetGossipKey(key string) error {
	c.mu.Lock()
	c.gossipKey = key
	c.mu.Unlock()
	return c.writeConfigs()
}

func (c *Cluster) writeConfigs() error {
	key := c.GossipKey()
	for _, a := range c.Agents {
		ac := AgentConfig{GossipKey: key, Keystone: c.Keystone, PeerToken: c.PeerToken}
		if c.Neutron != nil {
			ac.Neutron = c.Neutron.AgentSection(c.NeutronReapGrace)
		}
		if c.PKI != nil {
			ac.CA, ac.Cert, ac.Key = c.PKI.CA, c.PKI.Certs[a.Name], c.PKI.Keys[a.Name]
		}
		if err := writeFileAtomic(a.ConfPath(), []byte(ac.INI()), a.UID); err != nil {
			return fmt.Errorf("write %s: %w", a.ConfPath(), err)
		}
	}
	return nil
}

// AgentConfig is what goes into an agent's configuration file beyond its
// command line: TLS, the gossip key, Keystone, Neutron.
type AgentConfig struct {
	CA, Cert, Key string // empty: no TLS
	GossipKey     string // empty: gossip in clear
	Keystone      *Keystone
	PeerToken     string
	Neutron       [][2]string // [neutron]; nil: corral's own networks
}

// INI renders the configuration file. Sections are written in a fixed
// order so that the file is reproducible.
func (c AgentConfig) INI() string {
	sections := map[string][][2]string{}
	if c.Cert != "" {
		sections["tls"] = [][2]string{{"ca_file", c.CA}, {"cert_file", c.Cert}, {"key_file", c.Key},
			{"verify_incoming", "true"}, {"verify_outgoing", "true"}}
	}
	if c.GossipKey != "" {
		sections["gossip"] = [][2]string{{"encrypt", c.GossipKey}}
	}
	if ks := c.Keystone; ks != nil {
		sections["auth"] = [][2]string{{"strategy", "keystone"}, {"peer_token", c.PeerToken}}
		sections["keystone_authtoken"] = [][2]string{{"auth_url", ks.AuthURL}, {"www_authenticate_uri", ks.AuthURL},
			{"username", ks.ServiceUser}, {"password", ks.ServicePassword}, {"project_name", ks.ServiceProject},
			{"user_domain_name", "Default"}, {"project_domain_name", "Default"}, {"token_cache_time", "300"}}
	}
	if len(c.Neutron) > 0 {
		sections["neutron"] = c.Neutron
	}
	names := make([]string, 0, len(sections))
	for s := range sections {
		names = append(names, s)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, s := range names {
		fmt.Fprintf(&b, "[%s]\n", s)
		for _, kv := range sections[s] {
			fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeFileAtomic replaces path with data (mode 0600, owned by uid when
// not 0), so that an agent starting meanwhile reads the old or the new
// file, never half of one.
func writeFileAtomic(path string, data []byte, uid int) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if uid != 0 {
		if err := os.Chown(tmp, uid, uid); err != nil {
			return err
		}
	}
	return os.Rename(tmp, path)
}
