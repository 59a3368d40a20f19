package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Neutron speaks Neutron's v2.0 REST API (black box, like Ironic's): the
// suite reads ports and networks as an admin of the control plane, and
// creates and deletes the users' own ports.
type Neutron struct {
	URL  string // root, without /v2.0
	HTTP *http.Client
	// Auth issues a token; it is asked again once when Neutron answers 401.
	Auth func(ctx context.Context) (string, error)

	mu    sync.Mutex
	token string
}

// NeutronPort is the part of a Neutron port the suite reads. The binding
// attributes are shown to admins only.
type NeutronPort struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	NetworkID   string           `json:"network_id"`
	ProjectID   string           `json:"project_id"`
	DeviceID    string           `json:"device_id"`
	DeviceOwner string           `json:"device_owner"`
	MAC         string           `json:"mac_address"`
	FixedIPs    []NeutronFixedIP `json:"fixed_ips"`
	HostID      string           `json:"binding:host_id"`
	VNICType    string           `json:"binding:vnic_type"`
	VIFType     string           `json:"binding:vif_type,omitempty"`
	Status      string           `json:"status,omitempty"`
	CreatedAt   string           `json:"created_at,omitempty"` // RFC 3339, UTC, to the second
}

// NeutronFixedIP is one address of a port.
type NeutronFixedIP struct {
	SubnetID  string `json:"subnet_id,omitempty"`
	IPAddress string `json:"ip_address"`
}

// IPs are the port's addresses.
func (p NeutronPort) IPs() []string {
	out := make([]string, 0, len(p.FixedIPs))
	for _, ip := range p.FixedIPs {
		out = append(out, ip.IPAddress)
	}
	return out
}

// NeutronNetwork is the part of a network the suite reads.
type NeutronNetwork struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Shared bool   `json:"shared"`
}

// NeutronPortCreate is the body of POST /v2.0/ports the suite sends for a
// user's own port (no device: a boot hands it to corral).
type NeutronPortCreate struct {
	Port NeutronNewPort `json:"port"`
}

// NeutronNewPort is a user's port to create.
type NeutronNewPort struct {
	NetworkID   string `json:"network_id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// ErrNeutronNotFound is a 404 from Neutron.
var ErrNeutronNotFound = errors.New("not found in Neutron")

func (n *Neutron) currentToken(ctx context.Context, renew bool) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.token == "" || renew {
		if n.Auth == nil {
			return "", errors.New("Neutron: no credentials")
		}
		tok, err := n.Auth(ctx)
		if err != nil {
			return "", err
		}
		n.token = tok
	}
	return n.token, nil
}

// do sends one request (body nil for none) and decodes a 2xx answer into
// out (nil: ignored); a 401 renews the token once.
func (n *Neutron) do(ctx context.Context, method, path string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		tok, err := n.currentToken(ctx, attempt > 0)
		if err != nil {
			return fmt.Errorf("Neutron token: %w", err)
		}
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(n.URL, "/")+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("X-Auth-Token", tok)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := n.HTTP.Do(req)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		msg, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusUnauthorized && attempt == 0:
			continue
		case resp.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%s %s: %w", method, path, ErrNeutronNotFound)
		case resp.StatusCode >= 300:
			return fmt.Errorf("%s %s: HTTP %d: %.300s", method, path, resp.StatusCode, bytes.TrimSpace(msg))
		case rerr != nil:
			return fmt.Errorf("%s %s: %w", method, path, rerr)
		}
		if out != nil && len(msg) > 0 {
			if err := json.Unmarshal(msg, out); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
		}
		return nil
	}
}

// Ports lists the ports the query selects (e.g. network_id=...), every
// page (Neutron pages only when asked to, or when configured to).
func (n *Neutron) Ports(ctx context.Context, q url.Values) ([]NeutronPort, error) {
	var out []NeutronPort
	path := "/v2.0/ports?" + q.Encode()
	for path != "" {
		var page struct {
			Ports []NeutronPort `json:"ports"`
			Links []struct {
				Rel  string `json:"rel"`
				Href string `json:"href"`
			} `json:"ports_links"`
		}
		if err := n.do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Ports...)
		path = ""
		for _, l := range page.Links {
			if l.Rel != "next" || len(page.Ports) == 0 {
				continue
			}
			u, err := url.Parse(l.Href)
			if err != nil {
				return nil, fmt.Errorf("ports: next link %q: %w", l.Href, err)
			}
			path = u.Path + "?" + u.RawQuery
			if i := strings.Index(path, "/v2.0/"); i > 0 {
				path = path[i:]
			}
		}
	}
	return out, nil
}

// Port reads one port.
func (n *Neutron) Port(ctx context.Context, id string) (NeutronPort, error) {
	var body struct {
		Port NeutronPort `json:"port"`
	}
	err := n.do(ctx, http.MethodGet, "/v2.0/ports/"+url.PathEscape(id), nil, &body)
	return body.Port, err
}

// Network reads one network.
func (n *Neutron) Network(ctx context.Context, id string) (NeutronNetwork, error) {
	var body struct {
		Network NeutronNetwork `json:"network"`
	}
	err := n.do(ctx, http.MethodGet, "/v2.0/networks/"+url.PathEscape(id), nil, &body)
	return body.Network, err
}

// CreatePort creates a port with this client's credentials.
func (n *Neutron) CreatePort(ctx context.Context, p NeutronNewPort) (NeutronPort, error) {
	var body struct {
		Port NeutronPort `json:"port"`
	}
	err := n.do(ctx, http.MethodPost, "/v2.0/ports", NeutronPortCreate{Port: p}, &body)
	return body.Port, err
}

// DeletePort deletes a port; one already gone is no error.
func (n *Neutron) DeletePort(ctx context.Context, id string) error {
	err := n.do(ctx, http.MethodDelete, "/v2.0/ports/"+url.PathEscape(id), nil, nil)
	if errors.Is(err, ErrNeutronNotFound) {
		return nil
	}
	return err
}
