package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
)

// Neutron is the Neutron of scripts/neutron-up.sh as its env file
// (NEUTRON_ENV) describes it, with the Keystone of -keystone: the agents
// get a [neutron] section with corral's service user, the workload's
// boots ask for the shared network, and the suite reads Neutron as the
// control plane's admin.
type Neutron struct {
	URL       string // e.g. http://127.0.0.1:9696
	Region    string
	Network   string // the shared provider network's name
	NetworkID string
	Keystone  *Keystone
}

// NeutronReapGraceOption is the [neutron] option that sets how long the
// leader's reaper leaves a port whose server is gone before deleting it
// (at least a minute), and NeutronReapIntervalOption how often it looks.
const (
	NeutronReapGraceOption    = "port_reap_grace"
	NeutronReapIntervalOption = "port_reap_interval"
)

// NeutronReapInterval is the agents' port_reap_interval in a run: the
// reaper looks often, so that the check waits little beyond the grace.
const NeutronReapInterval = 5 * time.Second

// NeutronReapSlack is what the Neutron check waits beyond the reaper's
// grace: the reaper runs at the leader's node syncs, and a port orphaned
// just before the quiescence is only due a grace later.
const NeutronReapSlack = 20 * time.Second

// NeutronFromEnv takes Neutron from neutron-up.sh's env file; ks is the
// Keystone of -keystone, which must be the one Neutron validates tokens
// with.
func NeutronFromEnv(env map[string]string, ks *Keystone) (*Neutron, error) {
	nt := &Neutron{URL: strings.TrimRight(env["NEUTRON_URL"], "/"), Region: env["NEUTRON_REGION"],
		Network: env["NEUTRON_PROVIDER_NETWORK"], NetworkID: env["NEUTRON_PROVIDER_NETWORK_ID"], Keystone: ks}
	var missing []string
	for k, v := range map[string]string{"NEUTRON_URL": nt.URL, "NEUTRON_PROVIDER_NETWORK": nt.Network,
		"NEUTRON_PROVIDER_NETWORK_ID": nt.NetworkID} {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the Neutron env file lacks %s (written by scripts/neutron-up.sh)", strings.Join(missing, ", "))
	}
	if nt.Region == "" {
		nt.Region = "RegionOne"
	}
	if auth := env["NEUTRON_AUTH"]; auth != "" && auth != "keystone" {
		return nil, fmt.Errorf("the Neutron of the env file runs with auth %q: -neutron needs one with Keystone", auth)
	}
	if u := strings.TrimRight(env["NEUTRON_KEYSTONE_URL"], "/"); u != "" && u != ks.AuthURL {
		return nil, fmt.Errorf("Neutron validates tokens with the Keystone at %s, -keystone's is %s: start neutron-up.sh with the OPENSTACK_ENV of -openstack-env", u, ks.AuthURL)
	}
	if ks.AdminUser == "" || ks.AdminPassword == "" || ks.AdminProject == "" {
		return nil, fmt.Errorf("the OpenStack env file names no admin (OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME): the suite reads Neutron as the admin")
	}
	return nt, nil
}

// NeutronFromFile reads the env file of scripts/neutron-up.sh
// (-neutron-env). A missing env file, or no Keystone (ks nil: -keystone
// skipped), is not an error: the run goes on without Neutron and says why
// ("skip").
func NeutronFromFile(path string, ks *Keystone) (*Neutron, string, error) {
	switch {
	case ks == nil:
		return nil, "-neutron needs the Keystone of -keystone, which was skipped", nil
	case path == "":
		return nil, "NEUTRON_ENV is not set: start Neutron with scripts/neutron-up.sh and set NEUTRON_ENV (or -neutron-env) to the env file it prints", nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Sprintf("no Neutron env file %s (%v): start Neutron with scripts/neutron-up.sh", path, err), nil
	}
	env, err := ReadEnvFile(path)
	if err != nil {
		return nil, "", err
	}
	nt, err := NeutronFromEnv(env, ks)
	return nt, "", err
}

// Admin is a client of Neutron as the control plane's admin, who sees
// every project's ports and their bindings.
func (nt *Neutron) Admin() *client.Neutron {
	hc := &http.Client{Timeout: 30 * time.Second}
	return &client.Neutron{URL: nt.URL, HTTP: hc, Auth: func(ctx context.Context) (string, error) {
		return nt.Keystone.AdminToken(ctx, hc)
	}}
}

// User is a client of Neutron as the workload's user (the -keystone
// member), who owns the ports she hands to her boots.
func (nt *Neutron) User() *client.Neutron {
	hc := &http.Client{Timeout: 30 * time.Second}
	return &client.Neutron{URL: nt.URL, HTTP: hc, Auth: func(ctx context.Context) (string, error) {
		return nt.Keystone.Token(ctx, hc)
	}}
}

// AgentSection is the agents' [neutron]: corral's service user of the
// Keystone, the endpoint from its catalog (docs/neutron.md, "A corral
// agent against it"), and the reaper's grace and interval.
func (nt *Neutron) AgentSection(reapGrace time.Duration) [][2]string {
	ks := nt.Keystone
	kv := [][2]string{{"auth_type", "password"}, {"auth_url", ks.AuthURL}, {"username", ks.ServiceUser},
		{"password", ks.ServicePassword}, {"project_name", ks.ServiceProject}, {"user_domain_name", "Default"},
		{"project_domain_name", "Default"}, {"region_name", nt.Region}, {"valid_interfaces", "public"}}
	if reapGrace > 0 {
		kv = append(kv, [2]string{NeutronReapGraceOption, reapGrace.String()},
			[2]string{NeutronReapIntervalOption, min(NeutronReapInterval, reapGrace).String()})
	}
	return kv
}
