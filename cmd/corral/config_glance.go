package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/api/nova"
	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/glance"
)

// glanceConfig is the [glance] section: Glance's endpoint, and corral's
// own service user there (Nova's [glance] keystoneauth options), which
// reads images for callers that have no Keystone token of their own.
type glanceConfig struct {
	URL string
	// AuthType is "" or none (no service user), or password.
	AuthType string
	// Service is the service user: auth_url, username, password,
	// project_name, user_domain_name, project_domain_name.
	Service keystone.Options
}

// glanceOptions are the [glance] options; README.md documents them with
// the others.
var glanceOptions = []option{
	{section: "glance", key: "url", usage: "Glance's endpoint, e.g. http://127.0.0.1:9292: imageRef must then be an active Glance image (empty: imageRef goes to Ironic as is)",
		set: str(func(c *agentConfig) *string { return &c.Glance.URL })},
	{section: "glance", key: "auth_type", usage: "none (default): callers with a static token look images up with no token; password: as the service user below",
		set: str(func(c *agentConfig) *string { return &c.Glance.AuthType })},
	glanceOption("auth_url", "Keystone's identity endpoint of the service user (auth_type password)"),
	glanceOption("username", "corral's service user in Glance (auth_type password)"),
	glanceOption("password", "that user's password"),
	glanceOption("project_name", "that user's project"),
	glanceOption("user_domain_name", "the user's domain (default Default)"),
	glanceOption("project_domain_name", "the project's domain (default Default)"),
}

func init() { options = append(options, glanceOptions...) }

func glanceOption(key, usage string) option {
	return option{section: "glance", key: key, usage: usage, set: func(c *agentConfig, v string) error {
		return c.Glance.Service.Set(key, strings.TrimSpace(v))
	}}
}

// validateGlance checks [glance]: a URL, and with auth_type password the
// service user's options.
func (c *agentConfig) validateGlance() error {
	g := c.Glance
	var errs []error
	if g.URL != "" {
		if _, err := glance.New(g.URL, nil); err != nil {
			errs = append(errs, err)
		}
	}
	switch g.AuthType {
	case "", "none":
	case "password":
		if g.URL == "" {
			errs = append(errs, errors.New("[glance] auth_type = password needs [glance] url"))
		}
		need := func(name, v string) {
			if strings.TrimSpace(v) == "" {
				errs = append(errs, fmt.Errorf("[glance] %s is required with auth_type = password", name))
			}
		}
		need("auth_url", g.Service.AuthURL)
		need("username", g.Service.Username)
		need("password", g.Service.Password)
		need("project_name", g.Service.ProjectName)
		if u := g.Service.AuthURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("[glance] auth_url %q must start with http:// or https://", u))
		}
	default:
		errs = append(errs, fmt.Errorf("[glance] auth_type %q is not none or password", g.AuthType))
	}
	return errors.Join(errs...)
}

// images is the API's image service: a Glance client when [glance] url is
// set, nil otherwise. With auth_type password it logs the service user in
// once, so that an agent whose credentials Keystone refuses stops at start
// (a Keystone that does not answer yet is only logged: the token is got on
// first use).
func (a *agent) images(reg prometheus.Registerer) (nova.ImageService, error) {
	g := a.cfg.Glance
	if g.URL == "" {
		return nil, nil
	}
	if g.AuthType != "password" {
		return glance.New(g.URL, nil)
	}
	ts, err := keystone.NewServiceToken(g.Service, reg, nil)
	if err != nil {
		return nil, fmt.Errorf("[glance]: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	switch _, err := ts.Token(ctx); {
	case errors.Is(err, keystone.ErrServiceCredentials):
		return nil, fmt.Errorf("[glance] auth_type = password: %w: check [glance] username, password, project_name, "+
			"user_domain_name, project_domain_name", err)
	case err != nil:
		a.log.Warn("Glance's service user could not log in yet; retrying on first use", "auth_url", g.Service.AuthURL, "err", err)
	}
	return glance.New(g.URL, nil, glance.WithServiceToken(ts))
}
