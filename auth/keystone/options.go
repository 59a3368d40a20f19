package keystone

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by Options.withDefaults, as keystonemiddleware has them where it has one.
const (
	DefaultTokenCacheTime     = 300 * time.Second
	DefaultDomainName         = "Default"
	DefaultHTTPConnectTimeout = 5 * time.Second
	// DefaultHTTPRequestTimeout bounds one whole request to Keystone (connect, send, answer).
	DefaultHTTPRequestTimeout = 15 * time.Second
)

// Options configure a Validator. Each field's comment gives the name it has in keystonemiddleware's
// [keystone_authtoken] section; Set accepts those names, so an operator's section carries over.
type Options struct {
	// AuthURL (auth_url) is Keystone's identity endpoint, with or without the trailing /v3.
	AuthURL string
	// WWWAuthenticateURI (www_authenticate_uri) is the Keystone address told to clients in the
	// WWW-Authenticate header of a 401. Empty means AuthURL.
	WWWAuthenticateURI string
	// Username, Password, ProjectName, UserDomainName, ProjectDomainName (username, password,
	// project_name, user_domain_name, project_domain_name) are the service user's credentials. The
	// user needs a role that may validate other users' tokens (service or admin) in that project.
	Username          string
	Password          string
	ProjectName       string
	UserDomainName    string // empty means "Default"
	ProjectDomainName string // empty means "Default"
	// TokenCacheTime (token_cache_time) is how long a valid answer is reused without asking Keystone
	// again; never past the token's own expiry. Zero means 300 s; a negative value disables caching,
	// so a revoked token is refused at once. A revocation takes effect after at most this long.
	TokenCacheTime time.Duration
	// HTTPConnectTimeout (http_connect_timeout) bounds connecting to Keystone. Zero means 5 s.
	HTTPConnectTimeout time.Duration
	// HTTPRequestTimeout (http_request_timeout, corral's own: keystonemiddleware has no such option)
	// bounds one whole request to Keystone. Zero means 15 s.
	HTTPRequestTimeout time.Duration
}

// Set sets the option named as in keystonemiddleware's [keystone_authtoken] section. token_cache_time
// and the timeouts take whole seconds, as there, or a Go duration such as "90s".
func (o *Options) Set(name, value string) error {
	switch name {
	case "auth_url":
		o.AuthURL = value
	case "www_authenticate_uri":
		o.WWWAuthenticateURI = value
	case "username":
		o.Username = value
	case "password":
		o.Password = value
	case "project_name":
		o.ProjectName = value
	case "user_domain_name":
		o.UserDomainName = value
	case "project_domain_name":
		o.ProjectDomainName = value
	case "token_cache_time", "http_connect_timeout", "http_request_timeout":
		d, err := parseSeconds(value)
		if err != nil {
			return fmt.Errorf("keystone: option %s: %w", name, err)
		}
		switch name {
		case "token_cache_time":
			o.TokenCacheTime = d
		case "http_connect_timeout":
			o.HTTPConnectTimeout = d
		default:
			o.HTTPRequestTimeout = d
		}
	default:
		return fmt.Errorf("keystone: unknown option %q (known: auth_url, www_authenticate_uri, username, password, "+
			"project_name, user_domain_name, project_domain_name, token_cache_time, http_connect_timeout, "+
			"http_request_timeout)", name)
	}
	return nil
}

// parseSeconds reads whole (possibly negative) seconds or a Go duration.
func parseSeconds(value string) (time.Duration, error) {
	value = strings.TrimSpace(value)
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("%q is neither whole seconds nor a duration such as 90s", value)
	}
	return d, nil
}

// Validate reports every option that is missing or malformed, each by its operator-facing name.
func (o Options) Validate() error {
	var errs []error
	if strings.TrimSpace(o.AuthURL) == "" {
		errs = append(errs, errors.New("keystone: auth_url is not set: give Keystone's identity endpoint, "+
			"e.g. http://127.0.0.1:5000/v3"))
	} else if err := checkURL(o.AuthURL); err != nil {
		errs = append(errs, fmt.Errorf("keystone: auth_url %q: %w", o.AuthURL, err))
	} else if strings.HasSuffix(strings.TrimRight(o.AuthURL, "/"), "/v2.0") {
		errs = append(errs, fmt.Errorf("keystone: auth_url %q names Identity v2.0: give the v3 endpoint "+
			"(e.g. ending in /v3) or the unversioned one", o.AuthURL))
	}
	if o.WWWAuthenticateURI != "" {
		if err := checkURL(o.WWWAuthenticateURI); err != nil {
			errs = append(errs, fmt.Errorf("keystone: www_authenticate_uri %q: %w", o.WWWAuthenticateURI, err))
		}
	}
	for _, f := range []struct{ name, value string }{
		{"username", o.Username}, {"password", o.Password}, {"project_name", o.ProjectName},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("keystone: %s is not set: give the service user's %s "+
				"(the user corral validates tokens as)", f.name, strings.ReplaceAll(f.name, "_", " ")))
		}
	}
	if o.HTTPConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("keystone: http_connect_timeout %s is negative", o.HTTPConnectTimeout))
	}
	if o.HTTPRequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("keystone: http_request_timeout %s is negative", o.HTTPRequestTimeout))
	}
	return errors.Join(errs...)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("want an http:// or https:// URL")
	}
	if u.Host == "" {
		return errors.New("the URL has no host")
	}
	return nil
}

// withDefaults fills the zero values with the defaults.
func (o Options) withDefaults() Options {
	if o.UserDomainName == "" {
		o.UserDomainName = DefaultDomainName
	}
	if o.ProjectDomainName == "" {
		o.ProjectDomainName = DefaultDomainName
	}
	if o.TokenCacheTime == 0 {
		o.TokenCacheTime = DefaultTokenCacheTime
	}
	if o.HTTPConnectTimeout == 0 {
		o.HTTPConnectTimeout = DefaultHTTPConnectTimeout
	}
	if o.HTTPRequestTimeout == 0 {
		o.HTTPRequestTimeout = DefaultHTTPRequestTimeout
	}
	if o.WWWAuthenticateURI == "" {
		o.WWWAuthenticateURI = o.AuthURL
	}
	return o
}

// identityV3 is the v3 API root: auth_url with /v3 appended unless it already ends in it.
func (o Options) identityV3() string {
	base := strings.TrimRight(o.AuthURL, "/")
	if !strings.HasSuffix(base, "/v3") {
		base += "/v3"
	}
	return base
}
