package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/ironic"
)

// Authentication strategies of the API ([auth] strategy).
const (
	strategyToken    = "token"    // static tokens only ([auth] admin_tokens, reader_tokens); "" means it
	strategyKeystone = "keystone" // Keystone tokens ([keystone_authtoken]), and the static ones
)

// authOptions are the [auth] strategy, [keystone_authtoken] and [ironic]
// authentication options; README.md documents them with the others.
var authOptions = []option{
	{section: "auth", key: "strategy", usage: "token: static tokens only; keystone: validate X-Auth-Token against Keystone ([keystone_authtoken]); the static tokens stay valid", set: authStrategy},
	ksOption("auth_url", "Keystone's identity endpoint, e.g. http://127.0.0.1:5000/v3 (required with strategy keystone)"),
	ksOption("www_authenticate_uri", "Keystone address told to clients in WWW-Authenticate of a 401 (default auth_url)"),
	ksOption("username", "service user corral validates tokens as"),
	ksOption("password", "the service user's password"),
	ksOption("project_name", "the service user's project"),
	ksOption("user_domain_name", "the service user's domain (default Default)"),
	ksOption("project_domain_name", "the project's domain (default Default)"),
	ksOption("token_cache_time", "seconds a validated token is reused without asking Keystone (default 300; a revocation takes effect within it; negative: no cache)"),
	{section: "ironic", key: "auth_type", usage: "none (noauth Ironic), http_basic (username, password) or password (Keystone service user; the endpoint from the catalog unless url is set)", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.Type })},
	{section: "ironic", key: "auth_url", usage: "Keystone's identity endpoint (auth_type password)", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.AuthURL })},
	{section: "ironic", key: "username", usage: "user of http_basic, or the Keystone service user (password)", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.Username })},
	{section: "ironic", key: "password", usage: "that user's password", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.Password })},
	{section: "ironic", key: "project_name", usage: "the Keystone service user's project (auth_type password)", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.ProjectName })},
	{section: "ironic", key: "user_domain_name", usage: "the Keystone user's domain (default Default)", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.UserDomainName })},
	{section: "ironic", key: "project_domain_name", usage: "the Keystone project's domain (default Default)", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.ProjectDomainName })},
	{section: "ironic", key: "region_name", usage: "region of the catalog's baremetal endpoint (default: any)", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.RegionName })},
	{section: "ironic", key: "valid_interfaces", usage: "catalog interface of the baremetal endpoint: public (default), internal or admin", set: str(func(c *agentConfig) *string { return &c.Ironic.Auth.Interface })},
	{section: "ironic", key: "baremetal_proxy_auth", usage: "what os-baremetal-nodes presents to Ironic for a Keystone caller: user (its own token, with auth_type password; default) or service (corral's [ironic] credentials)", set: proxyAuth},
}

func init() { options = append(options, authOptions...) }

func ksOption(key, usage string) option {
	return option{section: "keystone_authtoken", key: key, usage: usage, set: func(c *agentConfig, v string) error {
		return c.Keystone.Set(key, strings.TrimSpace(v))
	}}
}

func authStrategy(c *agentConfig, v string) error {
	switch v = strings.TrimSpace(v); v {
	case strategyToken, strategyKeystone:
		c.AuthStrategy = v
		return nil
	}
	return fmt.Errorf("%q is not token (static tokens) or keystone", v)
}

func proxyAuth(c *agentConfig, v string) error {
	switch v = strings.TrimSpace(v); v {
	case proxyAuthUser, proxyAuthService:
		c.Ironic.ProxyAuth = v
		return nil
	}
	return fmt.Errorf("%q is not user (the caller's own Keystone token) or service (corral's [ironic] credentials)", v)
}

// validateAuth checks the strategy's options and [ironic]'s authentication.
func (c *agentConfig) validateAuth() error {
	var errs []error
	if c.AuthStrategy == strategyKeystone {
		if err := c.Keystone.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("[auth] strategy = keystone needs [keystone_authtoken]:\n%s",
				strings.ReplaceAll(err.Error(), "keystone: ", "[keystone_authtoken] ")))
		}
	}
	if err := c.Ironic.Auth.Validate(c.Ironic.URL != ""); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ironicEnabled reports whether this agent talks to an Ironic.
func (c *agentConfig) ironicEnabled() bool { return c.Ironic.Auth.Enabled(c.Ironic.URL) }

// validator builds the Keystone token validator of strategy keystone (nil for token).
func (c *agentConfig) validator(reg prometheus.Registerer, opts ...keystone.Option) (*keystone.Validator, error) {
	if c.AuthStrategy != strategyKeystone {
		return nil, nil
	}
	v, err := keystone.New(c.Keystone, reg, opts...)
	if err != nil {
		return nil, fmt.Errorf("[keystone_authtoken]: %w", err)
	}
	return v, nil
}

// startAuth sets up the API's Keystone validator (strategy keystone) and
// checks [ironic]'s Keystone credentials and catalog entry, so that an
// agent with wrong ones stops at start instead of retrying forever.
func (a *agent) startAuth(apiCfg *api.Config, reg prometheus.Registerer) error {
	v, err := a.cfg.validator(reg, keystone.WithLogger(a.log))
	if err != nil {
		return err
	}
	if v != nil {
		apiCfg.Keystone = v
		a.log.Info("API callers authenticate with Keystone", "auth_url", a.cfg.Keystone.AuthURL)
	}
	if a.cfg.Ironic.Auth.Type != ironic.AuthPassword {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Ironic.RequestTimeout)
	defer cancel()
	if err := ironic.CheckAuth(ctx, ironic.Options{URL: a.cfg.Ironic.URL, Auth: a.cfg.Ironic.Auth}); err != nil {
		return fmt.Errorf("[ironic] auth_type = password: %w", err)
	}
	return nil
}
