package keystone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

const (
	// maxBody bounds what is read of one Keystone answer (a token without its catalog is a few KiB).
	maxBody = 1 << 20
	// serviceRenewMargin is how long before its expiry the service token is replaced
	// (keystoneauth renews 120 s early too); shortened to a quarter of the lifetime for short tokens.
	serviceRenewMargin = 2 * time.Minute
)

// tokenBody is the part of Keystone's token document that corral reads.
type tokenBody struct {
	Token struct {
		ExpiresAt string `json:"expires_at"`
		IssuedAt  string `json:"issued_at"`
		User      struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Domain ref    `json:"domain"`
		} `json:"user"`
		Project *struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Domain ref    `json:"domain"`
		} `json:"project"`
		Domain   *ref            `json:"domain"`
		System   map[string]bool `json:"system"`
		Roles    []ref           `json:"roles"`
		AuditIDs []string        `json:"audit_ids"`
	} `json:"token"`
}

type ref struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// keystoneError is Keystone's error document.
type keystoneError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Title   string `json:"title"`
	} `json:"error"`
}

// errorText is the message of a Keystone error answer, or its status line.
func errorText(resp *http.Response, body []byte) string {
	var ke keystoneError
	if json.Unmarshal(body, &ke) == nil && ke.Error.Message != "" {
		return fmt.Sprintf("%s: %s", resp.Status, ke.Error.Message)
	}
	return resp.Status
}

// conn is one Keystone and how it is reached, shared by a Validator and its ServiceToken.
type conn struct {
	opts Options // with defaults
	base string  // Keystone's v3 root
	hc   *http.Client
	m    *metrics
}

// defaultHTTPClient reaches Keystone directly, never through an environment proxy.
func defaultHTTPClient(opts Options) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = (&net.Dialer{Timeout: opts.HTTPConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	return &http.Client{Transport: tr}
}

// do sends one request to Keystone and reads its whole (bounded) answer. call names the request in
// metrics; a failure to get any answer is reported as an error wrapping ErrUnavailable.
func (v *conn) do(ctx context.Context, call string, req *http.Request) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, v.opts.HTTPRequestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := v.hc.Do(req.WithContext(ctx))
	if err != nil {
		v.m.request(call, codeOf(err), time.Since(start))
		return nil, nil, fmt.Errorf("%w: %w", ErrUnavailable, err) // names the method and URL
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	v.m.request(call, strconv.Itoa(resp.StatusCode), time.Since(start))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s %s: reading the answer: %w", ErrUnavailable, req.Method,
			req.URL.Redacted(), err)
	}
	return resp, body, nil
}

func codeOf(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return "network"
}

// authenticate gets a new project-scoped service token with the service user's password.
func (v *conn) authenticate(ctx context.Context) (token string, renewAt time.Time, err error) {
	o := v.opts
	var doc struct {
		Auth struct {
			Identity struct {
				Methods  []string `json:"methods"`
				Password struct {
					User struct {
						Name     string `json:"name"`
						Domain   ref    `json:"domain"`
						Password string `json:"password"`
					} `json:"user"`
				} `json:"password"`
			} `json:"identity"`
			Scope struct {
				Project struct {
					Name   string `json:"name"`
					Domain ref    `json:"domain"`
				} `json:"project"`
			} `json:"scope"`
		} `json:"auth"`
	}
	doc.Auth.Identity.Methods = []string{"password"}
	doc.Auth.Identity.Password.User.Name = o.Username
	doc.Auth.Identity.Password.User.Domain.Name = o.UserDomainName
	doc.Auth.Identity.Password.User.Password = o.Password
	doc.Auth.Scope.Project.Name = o.ProjectName
	doc.Auth.Scope.Project.Domain.Name = o.ProjectDomainName
	payload, err := json.Marshal(doc)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("keystone: encode the service user's authentication: %w", err)
	}
	req, err := http.NewRequest(http.MethodPost, v.base+"/auth/tokens?nocatalog", bytes.NewReader(payload))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("keystone: auth_url %q: %w", o.AuthURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, body, err := v.do(ctx, "authenticate", req)
	if err != nil {
		return "", time.Time{}, err
	}
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden ||
		resp.StatusCode == http.StatusNotFound:
		return "", time.Time{}, fmt.Errorf("%w: user %q (domain %q) in project %q (domain %q): %s",
			ErrServiceCredentials, o.Username, o.UserDomainName, o.ProjectName, o.ProjectDomainName,
			errorText(resp, body))
	default:
		return "", time.Time{}, fmt.Errorf("%w: authenticating the service user at %s: %s",
			ErrUnavailable, v.base, errorText(resp, body))
	}
	token = resp.Header.Get("X-Subject-Token")
	if token == "" {
		return "", time.Time{}, fmt.Errorf("%w: Keystone at %s issued a service token without an "+
			"X-Subject-Token header", ErrUnavailable, v.base)
	}
	var tb tokenBody
	if err := json.Unmarshal(body, &tb); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: Keystone's service token answer is not JSON: %w", ErrUnavailable, err)
	}
	expires, err := time.Parse(time.RFC3339Nano, tb.Token.ExpiresAt)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: service token expires_at %q: %w", ErrUnavailable,
			tb.Token.ExpiresAt, err)
	}
	margin := serviceRenewMargin
	if issued, err := time.Parse(time.RFC3339Nano, tb.Token.IssuedAt); err == nil {
		if life := expires.Sub(issued); life > 0 && margin > life/4 {
			margin = life / 4
		}
	}
	return token, expires.Add(-margin), nil
}

// errServiceRefused is returned by check when Keystone refuses the service token itself (401): the
// caller gets a fresh one and asks once more.
var errServiceRefused = errors.New("keystone refused the service token")

// check asks Keystone about one token with the given service token.
func (v *Validator) check(ctx context.Context, service, token string) (Identity, error) {
	req, err := http.NewRequest(http.MethodGet, v.base+"/auth/tokens?nocatalog", nil)
	if err != nil {
		return Identity{}, fmt.Errorf("keystone: auth_url %q: %w", v.opts.AuthURL, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Auth-Token", service)
	req.Header.Set("X-Subject-Token", token)
	resp, body, err := v.do(ctx, "validate", req)
	if err != nil {
		return Identity{}, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		// Keystone's answer to a token it did not issue, that expired or that was revoked.
		return Identity{}, fmt.Errorf("%w: %s", ErrInvalidToken, errorText(resp, body))
	case http.StatusUnauthorized:
		return Identity{}, fmt.Errorf("%w: %s", errServiceRefused, errorText(resp, body))
	case http.StatusForbidden:
		return Identity{}, fmt.Errorf("%w: Keystone does not let user %q validate tokens (give it the service "+
			"or admin role in project %q): %s", ErrUnavailable, v.opts.Username, v.opts.ProjectName,
			errorText(resp, body))
	default:
		return Identity{}, fmt.Errorf("%w: validating a token at %s: %s", ErrUnavailable, v.base,
			errorText(resp, body))
	}
	var tb tokenBody
	if err := json.Unmarshal(body, &tb); err != nil {
		return Identity{}, fmt.Errorf("%w: Keystone's token answer is not JSON: %w", ErrUnavailable, err)
	}
	return identityOf(&tb)
}

// identityOf turns Keystone's token document into an Identity.
func identityOf(tb *tokenBody) (Identity, error) {
	t := &tb.Token
	expires, err := time.Parse(time.RFC3339Nano, t.ExpiresAt)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: token expires_at %q: %w", ErrUnavailable, t.ExpiresAt, err)
	}
	id := Identity{
		UserID:         t.User.ID,
		UserName:       t.User.Name,
		UserDomainID:   t.User.Domain.ID,
		UserDomainName: t.User.Domain.Name,
		ExpiresAt:      expires,
		AuditIDs:       append([]string(nil), t.AuditIDs...),
		System:         t.System["all"],
	}
	if issued, err := time.Parse(time.RFC3339Nano, t.IssuedAt); err == nil {
		id.IssuedAt = issued
	}
	if t.Project != nil {
		id.ProjectID, id.ProjectName = t.Project.ID, t.Project.Name
		id.ProjectDomainID, id.ProjectDomainName = t.Project.Domain.ID, t.Project.Domain.Name
	}
	if t.Domain != nil {
		id.DomainID, id.DomainName = t.Domain.ID, t.Domain.Name
	}
	for _, r := range t.Roles {
		id.Roles = append(id.Roles, r.Name)
	}
	if id.UserID == "" {
		return Identity{}, fmt.Errorf("%w: Keystone's token answer names no user", ErrUnavailable)
	}
	return id, nil
}
