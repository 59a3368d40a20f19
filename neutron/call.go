package neutron

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
)

// get reads path (under /v2.0/) into doc.
func (c *Client) get(ctx context.Context, sc *gophercloud.ServiceClient, path string, doc any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	_, err := sc.Get(ctx, sc.ServiceURL(path), doc, nil)
	return c.wrap(http.MethodGet, sc.ServiceURL(path), err)
}

// do runs one gophercloud call under the request timeout, on the service
// client (logging in first when needed), and converts its error.
func (c *Client) do(ctx context.Context, what string, call func(context.Context, *gophercloud.ServiceClient) error) error {
	sc, err := c.client(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	return c.wrap("", what, call(ctx, sc))
}

// wrap turns a gophercloud error into one wrapping the package's sentinels,
// with a message that says what to do.
func (c *Client) wrap(method, what string, err error) error {
	if err == nil {
		return nil
	}
	var rc gophercloud.ErrUnexpectedResponseCode
	var reauth *gophercloud.ErrUnableToReauthenticate
	var ne net.Error
	switch {
	case errors.Is(err, ErrNotSent):
		return fmt.Errorf("%s: %w", what, err)
	case errors.As(err, &reauth):
		if gophercloud.ResponseCodeIs(reauth.ErrReauth, http.StatusUnauthorized) {
			return fmt.Errorf("%w: %s: Neutron refused the token and Keystone at %s refused the new login of [neutron] "+
				"username %q: check [neutron] username, password, project_name and the domains: %w",
				ErrUnauthorized, what, c.opts.AuthURL, c.opts.Username, reauth.ErrReauth)
		}
		return fmt.Errorf("%w: %s: Neutron refused the token and logging in again failed (is Keystone at %s up?): %w",
			ErrUnavailable, what, c.opts.AuthURL, reauth.ErrReauth)
	case errors.As(err, &rc):
		if method == "" {
			method = rc.Method
		}
		ae := apiError(method, rc.URL, rc.Actual, rc.Body)
		switch s := rc.Actual; {
		case s == http.StatusNotFound:
			return fmt.Errorf("%w: %s: %w", ErrNotFound, what, ae)
		case s == http.StatusConflict:
			return fmt.Errorf("%w: %s: %w", ErrConflict, what, ae)
		case s == http.StatusBadRequest:
			return fmt.Errorf("%w: %s: %w", ErrInvalid, what, ae)
		case s == http.StatusUnauthorized && c.opts.AuthType == AuthNone:
			return fmt.Errorf("%w: %s: Neutron wants a token: set [neutron] auth_type = password and its "+
				"Keystone options (auth_type none is for a noauth Neutron): %w", ErrUnauthorized, what, ae)
		case s == http.StatusUnauthorized:
			return fmt.Errorf("%w: %s: Neutron refused the token of [neutron] username %q even after a new login: "+
				"check that Neutron's [keystone_authtoken] trusts the Keystone at %s: %w",
				ErrUnauthorized, what, c.opts.Username, c.opts.AuthURL, ae)
		case s == http.StatusForbidden:
			return fmt.Errorf("%w: %s: Neutron's policy refused [neutron] username %q: give it the admin role in "+
				"project %q (Nova's service user needs it to bind ports to hosts): %w",
				ErrUnauthorized, what, c.opts.Username, c.opts.ProjectName, ae)
		default:
			return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, ae)
		}
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s: Neutron does not answer: check that it runs at %s ([neutron] endpoint_override, "+
			"or its endpoint in Keystone's catalog): %w", ErrUnavailable, what, c.Endpoint(), err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", what, err)
	}
	if strings.Contains(err.Error(), "connection refused") {
		return fmt.Errorf("%w: %s: Neutron does not answer at %s: %w", ErrUnavailable, what, c.Endpoint(), err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}
