package main

import (
	"strings"
	"testing"
)

// TestConfigKeystoneStrategy: strategy keystone reads [keystone_authtoken] and refuses to start
// without what it needs, naming each missing option.
func TestConfigKeystoneStrategy(t *testing.T) {
	env := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n"}
	_, err := load(t, []string{"--config", writeConfig(t, "[auth]\nstrategy = keystone\n")}, env)
	if err == nil {
		t.Fatal("strategy keystone without [keystone_authtoken] was accepted")
	}
	for _, want := range []string{"[keystone_authtoken] auth_url is not set", "[keystone_authtoken] username",
		"[keystone_authtoken] password", "[keystone_authtoken] project_name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if _, err := load(t, []string{"--config", writeConfig(t, "[auth]\nstrategy = ldap\n")}, env); err == nil ||
		!strings.Contains(err.Error(), "[auth] strategy") {
		t.Errorf("strategy ldap: %v", err)
	}
	c := mustLoad(t, []string{"--config", writeConfig(t, `[auth]
strategy = keystone
peer_token = peer-secret-0123456
[keystone_authtoken]
auth_url = http://127.0.0.1:5000/v3
username = corral
password = pw
project_name = service
token_cache_time = 30
`)}, map[string]string{"CORRAL_NAME": "n"})
	if c.AuthStrategy != strategyKeystone || c.Keystone.TokenCacheTime.Seconds() != 30 || c.PeerToken != "peer-secret-0123456" {
		t.Errorf("keystone config: %+v", c)
	}
	v, err := c.validator(nil)
	if err != nil || v == nil || v.WWWAuthenticate() != `Keystone uri="http://127.0.0.1:5000/v3"` {
		t.Errorf("validator: %v, %v", v, err)
	}
	plain := mustLoad(t, nil, env)
	if v, err := plain.validator(nil); v != nil || err != nil {
		t.Errorf("strategy token built a validator: %v, %v", v, err)
	}
}

// TestConfigIronicAuth: [ironic] auth_type and the options each type needs, and [glance]'s service user.
func TestConfigIronicAuth(t *testing.T) {
	env := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n"}
	for _, c := range []struct {
		name, ini string
		want      []string // "" entries: valid
	}{
		{"password without Keystone options", "[ironic]\nauth_type = password\n",
			[]string{"[ironic] auth_url is required", "[ironic] username is required", "[ironic] password is required", "[ironic] project_name is required"}},
		{"http_basic without url", "[ironic]\nauth_type = http_basic\nusername = u\npassword = p\n", []string{"[ironic] url is required"}},
		{"unknown type", "[ironic]\nurl = http://127.0.0.1:6385\nauth_type = token\n", []string{"[ironic] auth_type \"token\""}},
		{"bad interface", "[ironic]\nauth_type = password\nauth_url = http://k:5000/v3\nusername = u\npassword = p\nproject_name = s\nvalid_interfaces = private\n",
			[]string{"valid_interfaces"}},
		{"password, endpoint from the catalog", "[ironic]\nauth_type = password\nauth_url = http://k:5000/v3\nusername = u\npassword = p\nproject_name = s\n", nil},
		{"http_basic", "[ironic]\nurl = http://127.0.0.1:6385\nauth_type = http_basic\nusername = u\npassword = p\n", nil},
		{"bad proxy auth", "[ironic]\nbaremetal_proxy_auth = caller\n", []string{"[ironic] baremetal_proxy_auth", "is not user"}},
		{"proxy as the service user", "[ironic]\nurl = http://127.0.0.1:6385\nbaremetal_proxy_auth = service\n", nil},
		{"glance password without its options", "[glance]\nauth_type = password\n",
			[]string{"[glance] auth_type = password needs [glance] url", "[glance] auth_url is required", "[glance] username is required",
				"[glance] password is required", "[glance] project_name is required"}},
		{"glance unknown auth type", "[glance]\nurl = http://127.0.0.1:9292\nauth_type = token\n", []string{"[glance] auth_type \"token\" is not none or password"}},
		{"glance bad url", "[glance]\nurl = 127.0.0.1:9292\n", []string{"[glance] url"}},
		{"glance service user", "[glance]\nurl = http://127.0.0.1:9292\nauth_type = password\nauth_url = http://k:5000/v3\nusername = glance-reader\npassword = p\nproject_name = s\n", nil},
	} {
		_, err := load(t, []string{"--config", writeConfig(t, c.ini)}, env)
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q:\n%v", c.name, w, err)
			}
		}
	}
	if c := mustLoad(t, []string{"--config", writeConfig(t, "[ironic]\nauth_type = password\nauth_url = http://k:5000/v3\nusername = u\npassword = p\nproject_name = s\n")}, env); !c.ironicEnabled() {
		t.Error("auth_type password without url: Ironic not enabled (it is found in the catalog)")
	}
}
