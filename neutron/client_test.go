package neutron

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func mustNew(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The endpoint comes from the catalog: the first of valid_interfaces the
// catalog has, in region_name; /v2.0 is appended once.
func TestCatalogEndpointByInterfaceAndRegion(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	c := mustNew(t, f.opts()) // default valid_interfaces internal,public
	if err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Endpoint(), f.srv.URL+"/internal"; got != want {
		t.Errorf("endpoint %s, want %s", got, want)
	}
	o := f.opts()
	o.ValidInterfaces = "admin, public"
	c = mustNew(t, o)
	if err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Endpoint(), f.srv.URL+"/public"; got != want {
		t.Errorf("endpoint %s, want %s (admin is not in the catalog)", got, want)
	}
	_, reqs := f.counts()
	if last := reqs[len(reqs)-1]; !strings.HasPrefix(last, "GET /public/v2.0/networks?limit=1 tok-") {
		t.Errorf("Check sent %q", last)
	}
}

func TestCatalogWithoutNetwork(t *testing.T) {
	f := newFake(t)
	f.catalog = false
	err := mustNew(t, f.opts()).Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "endpoint_override") ||
		!strings.Contains(err.Error(), "no network endpoint") {
		t.Fatalf("Check = %v, want ErrUnavailable naming the catalog and endpoint_override", err)
	}
	o := f.opts()
	o.RegionName = "RegionThree"
	f.catalog = true
	err = mustNew(t, o).Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "RegionThree") {
		t.Fatalf("Check in a region without Neutron = %v", err)
	}
}

func TestCheckRefusedCredentials(t *testing.T) {
	f := newFake(t)
	o := f.opts()
	o.Password = "wrong"
	err := mustNew(t, o).Check(context.Background())
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "[neutron] username, password") {
		t.Fatalf("Check = %v, want ErrUnauthorized naming the options to fix", err)
	}
}

func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	_ = ln.Close()
	return u
}

func TestCheckUnreachable(t *testing.T) {
	dead := closedURL(t)
	err := mustNew(t, Options{AuthType: AuthNone, EndpointOverride: dead, Timeout: 2 * time.Second}).Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), dead) {
		t.Fatalf("Check of a Neutron that is not there = %v", err)
	}
	// Keystone answers and its catalog names Neutron, which does not answer.
	f := newFake(t)
	f.down = true
	err = mustNew(t, f.opts()).Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "does not answer its version document") {
		t.Fatalf("Check with Neutron down = %v", err)
	}
	o := f.opts()
	o.AuthURL = dead + "/v3"
	err = mustNew(t, o).Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "[neutron] auth_url") {
		t.Fatalf("Check with Keystone not there = %v", err)
	}
}

// A token Neutron refuses is replaced once: the call goes through with the new one.
func TestReauthenticationOn401(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	c := mustNew(t, f.opts())
	p, err := c.CreatePort(ctx, PortCreate{NetworkID: "net-1", DeviceID: "srv-1", DeviceOwner: "compute:nova", VNICType: VNICBaremetal})
	if err != nil {
		t.Fatal(err)
	}
	f.revokeAll()
	got, err := c.Port(ctx, p.ID)
	if err != nil {
		t.Fatalf("after Neutron refused the token: %v", err)
	}
	if got.DeviceID != "srv-1" {
		t.Errorf("port %+v", got)
	}
	logins, reqs := f.counts()
	if logins != 2 {
		t.Errorf("%d logins, want 2", logins)
	}
	if last := reqs[len(reqs)-1]; !strings.HasSuffix(last, " tok-2") {
		t.Errorf("retry sent %q, want the new token", last)
	}
	// Refused again after the new login: ErrUnauthorized, one more login only.
	f.mu.Lock()
	f.refuseAll = true
	f.mu.Unlock()
	_, err = c.Port(ctx, p.ID)
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "keystone_authtoken") {
		t.Fatalf("refused twice = %v, want ErrUnauthorized", err)
	}
	if logins, _ := f.counts(); logins != 3 {
		t.Errorf("%d logins, want 3", logins)
	}
	// The password changed meanwhile: the re-login is refused.
	f.mu.Lock()
	f.refuseAll, f.password = false, "rotated"
	f.valid = map[string]bool{}
	f.mu.Unlock()
	_, err = c.Port(ctx, p.ID)
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "check [neutron] username, password") {
		t.Fatalf("re-login refused = %v, want ErrUnauthorized", err)
	}
}

func TestAuthNoneEndpointOverride(t *testing.T) {
	f := newFake(t)
	f.noauth = true
	ctx := context.Background()
	c := mustNew(t, Options{AuthType: AuthNone, EndpointOverride: f.srv.URL + "/override/v2.0/"})
	if err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePort(ctx, PortCreate{NetworkID: "net-1", ProjectID: "proj-a"}); err != nil {
		t.Fatal(err)
	}
	logins, reqs := f.counts()
	if logins != 0 {
		t.Errorf("%d Keystone logins with auth_type none", logins)
	}
	for _, r := range reqs {
		if !strings.HasPrefix(strings.SplitN(r, " ", 2)[1], "/override/v2.0/") || !strings.HasSuffix(r, " ") {
			t.Errorf("request %q: want /override/v2.0/... and no token", r)
		}
	}
	if got := f.bodies[0]["port"].(map[string]any)["project_id"]; got != "proj-a" {
		t.Errorf("project_id sent %v", got)
	}
	// endpoint_override also wins over the catalog with password.
	f.noauth = false
	o := f.opts()
	o.EndpointOverride = f.srv.URL + "/override"
	c = mustNew(t, o)
	if err := c.Check(ctx); err != nil || c.Endpoint() != f.srv.URL+"/override" {
		t.Fatalf("Check = %v, endpoint %s", err, c.Endpoint())
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want []string
	}{
		{Options{}, []string{"auth_type is required"}},
		{Options{AuthType: "token"}, []string{`auth_type "token" is not password or none`}},
		{Options{AuthType: AuthNone}, []string{"endpoint_override is required"}},
		{Options{AuthType: AuthNone, EndpointOverride: "127.0.0.1:9696"}, []string{"endpoint_override", "http://"}},
		{Options{AuthType: AuthPassword, ValidInterfaces: "public,private"}, []string{"auth_url is required",
			"username is required", "password is required", "project_name is required", `"private" is not public`}},
	} {
		err := tc.o.Validate()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, w)
			}
		}
		if _, err := New(tc.o); err == nil {
			t.Errorf("New(%+v) accepted", tc.o)
		}
	}
	var o Options
	for k, v := range map[string]string{"auth_type": "password", "auth_url": "http://k:5000/v3", "username": "u",
		"password": " p ", "project_name": "service", "valid_interfaces": "public"} {
		if err := o.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Validate(); err != nil || o.Password != "p" || !o.Enabled() {
		t.Errorf("Validate = %v, %+v", err, o)
	}
	if err := o.Set("url", "x"); err == nil {
		t.Error("Set accepted an unknown option")
	}
	if (Options{}).Enabled() {
		t.Error("empty options enabled")
	}
}
