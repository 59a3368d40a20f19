package keystone

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit/proc"
)

// TestKeystoneStartErrors: an agent whose Keystone settings cannot work stops at start with a
// message naming the option to fix, instead of running without Ironic or authentication.
func TestKeystoneStartErrors(t *testing.T) {
	cl := realCloud(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v3"
	_ = ln.Close()
	ironicOK := []string{"CORRAL_IRONIC_AUTH_TYPE=password", "CORRAL_IRONIC_AUTH_URL=" + cl.authURL,
		"CORRAL_IRONIC_USERNAME=" + cl.env("CORRAL_SERVICE_USERNAME"), "CORRAL_IRONIC_PASSWORD=" + cl.env("CORRAL_SERVICE_PASSWORD"),
		"CORRAL_IRONIC_PROJECT_NAME=" + cl.env("SERVICE_PROJECT")}
	with := func(kv ...string) []string { return append(append([]string(nil), ironicOK...), kv...) }
	for i, c := range []struct {
		name string
		env  []string
		want []string
	}{
		{"strategy keystone without auth_url", with("CORRAL_AUTH_STRATEGY=keystone"),
			[]string{"[keystone_authtoken] auth_url is not set"}},
		{"wrong Ironic password", with("CORRAL_IRONIC_PASSWORD=wrong"),
			[]string{"[ironic] username, password"}},
		{"Keystone unreachable", with("CORRAL_IRONIC_AUTH_URL=" + dead),
			[]string{"[ironic] auth_url", "does not answer"}},
		{"no baremetal endpoint in the region", with("CORRAL_IRONIC_REGION_NAME=NoSuchRegion"),
			[]string{"no baremetal endpoint", "region_name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cluster := e2e.Start(t, 1, e2e.Options{BaseIP: baseIP + 10 + i, Env: c.env})
			a := cluster.Agents[0]
			if !a.Wait(60 * time.Second) {
				t.Fatal("the agent is still running")
			}
			log, err := proc.Tail(a.LogPath(), 8000)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(log, w) {
					t.Errorf("the agent's output does not say %q:\n%s", w, log)
				}
			}
		})
	}
}
