package main

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-dev/corral/neutron"
)

// neutronCheckTimeout bounds the start-up check of [neutron] (login, catalog, one listing).
const neutronCheckTimeout = 30 * time.Second

// neutronOptions are the [neutron] options, Nova's names; README.md
// documents them with the others. Without any of them corral keeps its own
// networks, as before.
var neutronOptions = []option{
	neutronOption("auth_type", "password: corral's Keystone service user (the options below); none: no token, a noauth Neutron at endpoint_override. Setting any [neutron] option turns Neutron on"),
	neutronOption("auth_url", "Keystone's identity endpoint of the service user (auth_type password)"),
	neutronOption("username", "corral's service user in Neutron (needs the admin role in its project, to bind ports to hosts)"),
	neutronOption("password", "that user's password"),
	neutronOption("project_name", "that user's project"),
	neutronOption("user_domain_name", "the user's domain (default Default)"),
	neutronOption("project_domain_name", "the project's domain (default Default)"),
	neutronOption("region_name", "region of the catalog's network endpoint (default: any)"),
	neutronOption("valid_interfaces", "catalog interfaces of the network endpoint, in order of preference (default internal,public)"),
	neutronOption("endpoint_override", "Neutron's URL, e.g. http://127.0.0.1:9696, instead of the catalog's (required with auth_type none)"),
}

func init() { options = append(options, neutronOptions...) }

func neutronOption(key, usage string) option {
	return option{section: "neutron", key: key, usage: usage, set: func(c *agentConfig, v string) error {
		return c.Neutron.Set(key, v)
	}}
}

// validateNeutron checks [neutron] when any of it is set.
func (c *agentConfig) validateNeutron() error {
	if !c.Neutron.Enabled() {
		return nil
	}
	return c.Neutron.Validate()
}

// checkNeutron, with [neutron] set, builds the Neutron client and checks
// that Neutron answers and takes the credentials, so that an agent with
// wrong ones stops at start. It returns nil without [neutron].
func (a *agent) checkNeutron() (*neutron.Client, error) {
	o := a.cfg.Neutron
	if !o.Enabled() {
		return nil, nil
	}
	c, err := neutron.New(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), neutronCheckTimeout)
	defer cancel()
	if err := c.Check(ctx); err != nil {
		return nil, fmt.Errorf("[neutron] auth_type = %s: %w", o.AuthType, err)
	}
	a.log.Info("Neutron answers: servers get Neutron ports (vnic type baremetal on ironic hosts, normal on hypervisor hosts)", "endpoint", c.Endpoint(), "auth_type", o.AuthType,
		"user", o.Username)
	return c, nil
}
