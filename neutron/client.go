package neutron

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
)

// How the client authenticates (Options.AuthType), as Nova's [neutron] auth_type.
const (
	AuthPassword = "password" // Keystone: the service user's token, the endpoint from the catalog
	AuthNone     = "none"     // no token (a noauth Neutron); endpoint_override is required
)

const (
	// reauthMargin: a token this close to its expiry is renewed before a request carries it.
	reauthMargin = 2 * time.Minute
	// DefaultTimeout bounds one request to Neutron or Keystone.
	DefaultTimeout = 30 * time.Second
)

// Options are Nova's [neutron] options; each field's comment names its option.
type Options struct {
	AuthType          string // auth_type: password or none
	AuthURL           string // auth_url: Keystone's identity endpoint (password)
	Username          string // username
	Password          string // password
	ProjectName       string // project_name
	UserDomainName    string // user_domain_name (default Default)
	ProjectDomainName string // project_domain_name (default Default)
	RegionName        string // region_name: region of the catalog's network endpoint ("" : any)
	// ValidInterfaces (valid_interfaces) are the catalog interfaces to use, in order of
	// preference, comma-separated: public, internal, admin (default "internal,public", as Nova).
	ValidInterfaces  string
	EndpointOverride string // endpoint_override: Neutron's URL, instead of the catalog's
	// Timeout bounds one request (0: DefaultTimeout). HTTPClient nil: a direct client (no
	// proxy from the environment).
	Timeout    time.Duration
	HTTPClient *http.Client
}

// Set sets the option named as in Nova's [neutron] section.
func (o *Options) Set(name, value string) error {
	f := map[string]*string{"auth_type": &o.AuthType, "auth_url": &o.AuthURL, "username": &o.Username,
		"password": &o.Password, "project_name": &o.ProjectName, "user_domain_name": &o.UserDomainName,
		"project_domain_name": &o.ProjectDomainName, "region_name": &o.RegionName,
		"valid_interfaces": &o.ValidInterfaces, "endpoint_override": &o.EndpointOverride}[name]
	if f == nil {
		return fmt.Errorf("neutron: unknown option %q", name)
	}
	*f = strings.TrimSpace(value)
	return nil
}

// Enabled reports whether any [neutron] option is set: corral then uses Neutron.
func (o Options) Enabled() bool {
	return o.AuthType != "" || o.AuthURL != "" || o.Username != "" || o.Password != "" || o.ProjectName != "" ||
		o.EndpointOverride != "" || o.RegionName != "" || o.ValidInterfaces != "" || o.UserDomainName != "" ||
		o.ProjectDomainName != ""
}

// interfaces are the valid_interfaces, defaulted.
func (o Options) interfaces() []string {
	v := o.ValidInterfaces
	if v == "" {
		v = "internal,public"
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Validate reports every missing or malformed option, by its name in [neutron].
func (o Options) Validate() error {
	var errs []error
	need := func(name, v string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("[neutron] %s is required with auth_type = %s", name, o.AuthType))
		}
	}
	if o.EndpointOverride != "" {
		if err := checkURL(o.EndpointOverride); err != nil {
			errs = append(errs, fmt.Errorf("[neutron] endpoint_override %q: %w (e.g. http://127.0.0.1:9696)", o.EndpointOverride, err))
		}
	}
	switch o.AuthType {
	case AuthNone:
		need("endpoint_override", o.EndpointOverride)
	case AuthPassword:
		need("auth_url", o.AuthURL)
		need("username", o.Username)
		need("password", o.Password)
		need("project_name", o.ProjectName)
		if o.AuthURL != "" {
			if err := checkURL(o.AuthURL); err != nil {
				errs = append(errs, fmt.Errorf("[neutron] auth_url %q: %w (e.g. http://127.0.0.1:5000/v3)", o.AuthURL, err))
			}
		}
		for _, i := range o.interfaces() {
			switch i {
			case "public", "internal", "admin":
			default:
				errs = append(errs, fmt.Errorf("[neutron] valid_interfaces: %q is not public, internal or admin", i))
			}
		}
	case "":
		errs = append(errs, errors.New("[neutron] auth_type is required: password (corral's Keystone service user) or none (a noauth Neutron at endpoint_override)"))
	default:
		errs = append(errs, fmt.Errorf("[neutron] auth_type %q is not password or none", o.AuthType))
	}
	return errors.Join(errs...)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("want an http:// or https:// URL")
	case u.Host == "":
		return errors.New("the URL has no host")
	}
	return nil
}

// Client is a Neutron client; safe for concurrent use. It logs in (and finds
// Neutron in the catalog) on first use, and again after a failed attempt.
type Client struct {
	opts Options
	mu   sync.Mutex
	sc   *gophercloud.ServiceClient
}

// New checks the options and returns a client. It contacts nothing: Check does.
func New(opts Options) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		tr.MaxIdleConnsPerHost = 32
		opts.HTTPClient = &http.Client{Transport: tr}
	}
	if opts.UserDomainName == "" {
		opts.UserDomainName = "Default"
	}
	if opts.ProjectDomainName == "" {
		opts.ProjectDomainName = "Default"
	}
	return &Client{opts: opts}, nil
}

// Endpoint is Neutron's root URL as the client found it ("" before the first success).
func (c *Client) Endpoint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sc == nil {
		return ""
	}
	return strings.TrimRight(c.sc.Endpoint, "/")
}

// Check logs in, finds Neutron and lists one network, so that an agent
// stops at start when Neutron cannot be reached or refuses the credentials.
func (c *Client) Check(ctx context.Context) error {
	sc, err := c.client(ctx)
	if err != nil {
		return err
	}
	var doc struct {
		Networks []struct{} `json:"networks"`
	}
	if err := c.get(ctx, sc, "networks?limit=1", &doc); err != nil {
		return fmt.Errorf("neutron at %s: %w", strings.TrimRight(sc.Endpoint, "/"), err)
	}
	return nil
}

// client returns the service client, logging in first when needed.
func (c *Client) client(ctx context.Context) (*gophercloud.ServiceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sc != nil {
		return c.sc, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	sc, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.sc = sc
	return sc, nil
}

func (c *Client) connect(ctx context.Context) (*gophercloud.ServiceClient, error) {
	o := c.opts
	hc := *o.HTTPClient
	hc.Timeout = o.Timeout
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = sendGate{next: next}
	if o.AuthType == AuthNone {
		pc := &gophercloud.ProviderClient{HTTPClient: hc, UserAgent: gophercloud.UserAgent{}}
		root := rootURL(o.EndpointOverride)
		return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: root + "/", ResourceBase: root + "/v2.0/",
			Type: "network"}, nil
	}
	pc, err := openstack.NewClient(o.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("%w: [neutron] auth_url %q: %w", ErrUnavailable, o.AuthURL, err)
	}
	pc.HTTPClient = hc
	pc.ReauthBeforeTokenExpiration = reauthMargin
	ao := gophercloud.AuthOptions{IdentityEndpoint: o.AuthURL, Username: o.Username, Password: o.Password,
		DomainName: o.UserDomainName, AllowReauth: true,
		Scope: &gophercloud.AuthScope{ProjectName: o.ProjectName, DomainName: o.ProjectDomainName}}
	if err := openstack.Authenticate(ctx, pc, ao); err != nil {
		var ne net.Error
		switch {
		case gophercloud.ResponseCodeIs(err, http.StatusUnauthorized), gophercloud.ResponseCodeIs(err, http.StatusForbidden),
			gophercloud.ResponseCodeIs(err, http.StatusNotFound):
			return nil, fmt.Errorf("%w: Keystone at %s refused user %q (domain %q) in project %q (domain %q): "+
				"check [neutron] username, password, project_name, user_domain_name, project_domain_name: %w",
				ErrUnauthorized, o.AuthURL, o.Username, o.UserDomainName, o.ProjectName, o.ProjectDomainName, err)
		case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("%w: Keystone at %s does not answer: check [neutron] auth_url and that Keystone runs: %w",
				ErrUnavailable, o.AuthURL, err)
		}
		return nil, fmt.Errorf("%w: logging [neutron] username %q in at [neutron] auth_url %s: %w",
			ErrUnavailable, o.Username, o.AuthURL, err)
	}
	if o.EndpointOverride != "" {
		root := rootURL(o.EndpointOverride)
		return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: root + "/", ResourceBase: root + "/v2.0/",
			Type: "network"}, nil
	}
	var tried []string
	for _, i := range o.interfaces() {
		sc, err := openstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: o.RegionName,
			Availability: gophercloud.Availability(i)})
		var nf *gophercloud.ErrEndpointNotFound
		switch {
		case err == nil:
			root := rootURL(sc.Endpoint)
			sc.Endpoint, sc.ResourceBase = root+"/", root+"/v2.0/"
			return sc, nil
		case !errors.As(err, &nf):
			// The catalog names it, but asking it which API versions it has failed.
			return nil, fmt.Errorf("%w: Neutron, found in Keystone's catalog (interface %s), does not answer its "+
				"version document: check that it runs at its catalog endpoint, or set [neutron] endpoint_override: %w",
				ErrUnavailable, i, err)
		}
		tried = append(tried, i)
	}
	region := o.RegionName
	if region == "" {
		region = "any"
	}
	return nil, fmt.Errorf("%w: Keystone's catalog at %s has no network endpoint (region %s, interfaces %s): "+
		"register Neutron in the catalog (service type network), or set [neutron] region_name, valid_interfaces "+
		"or endpoint_override", ErrUnavailable, o.AuthURL, region, strings.Join(tried, ", "))
}

// rootURL is Neutron's root: raw without a trailing slash or /v2.0.
func rootURL(raw string) string {
	root := strings.TrimRight(raw, "/")
	root = strings.TrimSuffix(root, "/v2.0")
	return strings.TrimRight(root, "/")
}
