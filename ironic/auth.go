package ironic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/httpbasic"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
)

// How the client authenticates to Ironic (Auth.Type), as Nova's [ironic] auth_type.
const (
	AuthNone      = "none"       // Ironic with auth_strategy = noauth
	AuthHTTPBasic = "http_basic" // Ironic with auth_strategy = http_basic
	AuthPassword  = "password"   // Keystone: a service user's token, the endpoint from the catalog
)

// reauthMargin: a Keystone token this close to its expiry is renewed before a request carries it.
const reauthMargin = 2 * time.Minute

// Auth is how the client authenticates; the zero value is AuthNone.
type Auth struct {
	Type string // AuthNone (or ""), AuthHTTPBasic, AuthPassword
	// Username and Password: the http_basic user, or the Keystone service user (password).
	Username, Password string
	// For password: Keystone's identity endpoint, the user's and the project's domains (default
	// "Default"), the project, and which catalog endpoint to use (region; interface, default public).
	AuthURL, UserDomainName, ProjectName, ProjectDomainName, RegionName, Interface string
}

// Validate reports every missing option, by its name in the [ironic] section.
func (a Auth) Validate(haveURL bool) error {
	var errs []error
	need := func(name, v string) {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("[ironic] %s is required with auth_type = %s", name, a.Type))
		}
	}
	switch a.Type {
	case "", AuthNone:
		if !haveURL {
			return nil // no Ironic at all
		}
	case AuthHTTPBasic:
		if !haveURL {
			errs = append(errs, errors.New("[ironic] url is required with auth_type = http_basic"))
		}
		need("username", a.Username)
		need("password", a.Password)
	case AuthPassword:
		need("auth_url", a.AuthURL)
		need("username", a.Username)
		need("password", a.Password)
		need("project_name", a.ProjectName)
		if a.AuthURL != "" && !strings.HasPrefix(a.AuthURL, "http://") && !strings.HasPrefix(a.AuthURL, "https://") {
			errs = append(errs, fmt.Errorf("[ironic] auth_url %q must start with http:// or https://", a.AuthURL))
		}
		switch a.Interface {
		case "", "public", "internal", "admin":
		default:
			errs = append(errs, fmt.Errorf("[ironic] valid_interfaces %q is not public, internal or admin", a.Interface))
		}
	default:
		errs = append(errs, fmt.Errorf("[ironic] auth_type %q is not none, http_basic or password", a.Type))
	}
	return errors.Join(errs...)
}

// Enabled reports whether an Ironic is configured: a URL, or Keystone to find it in.
func (a Auth) Enabled(url string) bool { return url != "" || a.Type == AuthPassword }

// serviceClient builds the baremetal client of opts.Auth; root is the configured URL ("" for
// password without an endpoint override: the catalog's). It returns the root it settled on.
func serviceClient(ctx context.Context, opts Options) (*gophercloud.ServiceClient, string, error) {
	a := opts.Auth
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: NewTransport()}
	}
	opts.HTTPClient = withRequestIDs(opts.HTTPClient)
	if a.Type != AuthPassword {
		root, err := rootURL(opts.URL)
		if err != nil {
			return nil, "", err
		}
		var sc *gophercloud.ServiceClient
		if a.Type == AuthHTTPBasic {
			sc, err = httpbasic.NewBareMetalHTTPBasic(httpbasic.EndpointOpts{IronicEndpoint: root + "/v1",
				IronicUser: a.Username, IronicUserPassword: a.Password})
		} else {
			sc, err = noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: root + "/v1"})
		}
		if err != nil {
			return nil, "", fmt.Errorf("ironic: baremetal client for %s: %w", root, err)
		}
		if opts.HTTPClient != nil {
			sc.HTTPClient = *opts.HTTPClient
		}
		return sc, root, nil
	}
	pc, err := Authenticate(ctx, a, opts.HTTPClient)
	if err != nil {
		return nil, "", err
	}
	endpoint := opts.URL
	if endpoint == "" {
		eo := gophercloud.EndpointOpts{Region: a.RegionName, Availability: gophercloud.Availability(a.Interface)}
		if eo.Availability == "" {
			eo.Availability = gophercloud.AvailabilityPublic
		}
		bm, err := openstack.NewBareMetalV1(pc, eo)
		if err != nil {
			return nil, "", fmt.Errorf("%w: Keystone's catalog at %s has no baremetal endpoint (region %q, interface %s): "+
				"register Ironic in the catalog, or set [ironic] url, region_name or valid_interfaces: %w",
				ErrAuthentication, a.AuthURL, a.RegionName, eo.Availability, err)
		}
		endpoint = bm.Endpoint
	}
	root, err := rootURL(endpoint)
	if err != nil {
		return nil, "", err
	}
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: root + "/v1/", Type: "baremetal"}, root, nil
}

// NewTransport returns the HTTP transport corral talks to Ironic (and
// Keystone) with: Go's default one, keeping up to 128 idle connections per
// server instead of 2. A host's workers and watcher send many requests at
// once; with 2 kept connections every other one would open a new
// connection (and, over TLS, a new handshake) and leave a socket in
// TIME_WAIT.
func NewTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 128
	return tr
}

// Authenticate logs the Keystone service user in as gophercloud's openstack.AuthenticatedClient
// does (on hc when not nil). The provider client renews its token before it expires and once
// more when Ironic answers 401 (AllowReauth). Errors wrap ErrAuthentication and name the
// [ironic] option to fix.
func Authenticate(ctx context.Context, a Auth, hc *http.Client) (*gophercloud.ProviderClient, error) {
	pc, err := openstack.NewClient(a.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("%w: [ironic] auth_url %q: %w", ErrAuthentication, a.AuthURL, err)
	}
	if hc != nil {
		pc.HTTPClient = *hc
	}
	pc.ReauthBeforeTokenExpiration = reauthMargin
	udom, pdom := a.UserDomainName, a.ProjectDomainName
	if udom == "" {
		udom = "Default"
	}
	if pdom == "" {
		pdom = "Default"
	}
	ao := gophercloud.AuthOptions{IdentityEndpoint: a.AuthURL, Username: a.Username, Password: a.Password,
		DomainName: udom, AllowReauth: true, Scope: &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: pdom}}
	if err := openstack.Authenticate(ctx, pc, ao); err != nil {
		var ne net.Error
		switch {
		case gophercloud.ResponseCodeIs(err, http.StatusUnauthorized):
			return nil, fmt.Errorf("%w: Keystone at %s refused user %q (domain %q) in project %q (domain %q): "+
				"check [ironic] username, password, project_name, user_domain_name, project_domain_name: %w",
				ErrAuthentication, a.AuthURL, a.Username, udom, a.ProjectName, pdom, err)
		case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("%w: Keystone at %s does not answer: check [ironic] auth_url and that Keystone runs: %w",
				ErrAuthentication, a.AuthURL, err)
		}
		return nil, fmt.Errorf("%w: authenticating [ironic] username %q at [ironic] auth_url %s: %w",
			ErrAuthentication, a.Username, a.AuthURL, err)
	}
	return pc, nil
}

// CheckAuth authenticates as opts.Auth says and finds Ironic's endpoint, without asking Ironic
// anything: an agent calls it at start so that wrong credentials, an unreachable Keystone or a
// catalog without Ironic stop it at once (errors wrap ErrAuthentication), while an Ironic that is
// not up yet is waited for. It does nothing for AuthNone and AuthHTTPBasic.
func CheckAuth(ctx context.Context, opts Options) error {
	if err := opts.Auth.Validate(opts.URL != ""); err != nil {
		return fmt.Errorf("%w: %w", ErrAuthentication, err)
	}
	if opts.Auth.Type != AuthPassword {
		return nil
	}
	_, _, err := serviceClient(ctx, opts)
	return err
}

// WithToken returns a client that presents token, a caller's own Keystone token, instead of its
// own credentials, so that a Keystone-protected Ironic answers with the caller's rights (a 403 or
// a narrower listing where the caller may see less). It shares everything else with c (endpoint,
// microversion, HTTP client, metrics) and never re-authenticates: a 401 is the caller's to handle.
// Use it only with a client of AuthPassword; an Ironic without Keystone does not judge tokens.
func (c *Client) WithToken(token string) *Client {
	base := c.sc.ProviderClient
	pc := &gophercloud.ProviderClient{HTTPClient: base.HTTPClient, UserAgent: base.UserAgent,
		RetryBackoffFunc: base.RetryBackoffFunc, MaxBackoffRetries: base.MaxBackoffRetries}
	pc.SetToken(token)
	sc := *c.sc
	sc.ProviderClient = pc
	cc := *c
	cc.sc = &sc
	return &cc
}
