package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

// quotaWith is Nova's [quota] defaults with the given resource, limit
// pairs changed.
func quotaWith(kv ...any) fsm.QuotaLimits {
	q := fsm.NovaQuotaDefaults()
	for i := 0; i < len(kv); i += 2 {
		q[kv[i].(string)] = int64(kv[i+1].(int))
	}
	return q
}

// TestConfigQuotaDefaults: without [quota], Nova's defaults, which the
// cluster is configured with (and advertises to the other peers).
func TestConfigQuotaDefaults(t *testing.T) {
	c := mustLoad(t, nil, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken})
	if !maps.Equal(c.Quota, fsm.NovaQuotaDefaults()) {
		t.Fatalf("default [quota] = %v, want Nova's %v", c.Quota, fsm.NovaQuotaDefaults())
	}
	want := "cores=20,fixed_ips=-1,floating_ips=-1,injected_file_content_bytes=10240,injected_file_path_bytes=255," +
		"injected_files=5,instances=10,key_pairs=100,metadata_items=128,ram=51200,security_group_rules=-1," +
		"security_groups=-1,server_group_members=10,server_groups=10"
	if got := c.clusterConfig().QuotaDefaults.String(); got != want {
		t.Fatalf("cluster QuotaDefaults = %s, want %s", got, want)
	}
}

// TestConfigQuotaValues: each option sets its resource, from the file or
// the environment; a limit that is no integer of -1 up to Nova's largest
// stops the agent, naming the option.
func TestConfigQuotaValues(t *testing.T) {
	env := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_QUOTA_KEY_PAIRS": "3"}
	c := mustLoad(t, []string{"--config", writeConfig(t, "[quota]\ncores = -1\nserver_group_members = 0\n")}, env)
	if want := quotaWith(fsm.QuotaCores, -1, fsm.QuotaServerGroupMembers, 0, fsm.QuotaKeyPairs, 3); !maps.Equal(c.Quota, want) {
		t.Fatalf("[quota] = %v, want %v", c.Quota, want)
	}
	for _, bad := range []string{"-2", "ten", "2147483648", "1.5", ""} {
		_, err := load(t, []string{"--config", writeConfig(t, "[quota]\ninstances = "+bad+"\n")}, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken})
		if err == nil || !strings.Contains(err.Error(), "[quota] instances") || !strings.Contains(err.Error(), "-1 (unlimited)") {
			t.Errorf("instances = %q: err %v, want one naming [quota] instances", bad, err)
		}
	}
	_, err := load(t, []string{"--config", writeConfig(t, "[quota]\nfloating_ips = 5\n")}, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken})
	if err == nil || !strings.Contains(err.Error(), "unknown option [quota] floating_ips") {
		t.Errorf("floating_ips: err %v, want unknown option", err)
	}
}
