package nova

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

type fakeBaremetal struct {
	nodes     []BaremetalNode
	lastToken string
}

func (f *fakeBaremetal) BaremetalNodes(_ context.Context, token string) ([]BaremetalNode, error) {
	f.lastToken = token
	return f.nodes, nil
}

func (f *fakeBaremetal) BaremetalNode(_ context.Context, id, token string) (BaremetalNode, error) {
	f.lastToken = token
	for _, n := range f.nodes {
		if n.UUID == id {
			return n, nil
		}
	}
	return BaremetalNode{}, fmt.Errorf("ironic: %w", ErrBaremetalNodeNotFound)
}

// proxyServer mounts the proxy on a bare echo with the role and the
// microversion taken from test headers.
func proxyServer(t *testing.T, src BaremetalNodes) *httptest.Server {
	p := BaremetalProxy{Source: src}
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) { // the API's status mapping
		code, _ := core.Classify(err)
		_ = c.JSON(code, map[string]any{"error": err.Error()})
	}
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			core.SetCaller(c, core.Caller{Role: core.Role(c.Request().Header.Get("X-Test-Role"))})
			v := core.Microversion{Major: 2, Minor: 1}
			if h := c.Request().Header.Get("X-Test-Version"); h != "" {
				v, _ = core.ParseMicroversion(h)
			}
			c.Set(ctxMicroversion, v)
			return next(c)
		}
	})
	e.GET("/os-baremetal-nodes", p.List)
	e.GET("/os-baremetal-nodes/:id", p.Show)
	e.POST("/os-baremetal-nodes", p.NotSupported)
	e.DELETE("/os-baremetal-nodes/:id", p.NotSupported)
	e.POST("/os-baremetal-nodes/:id/action", p.NotSupported)
	ts := httptest.NewServer(e)
	t.Cleanup(ts.Close)
	return ts
}

func proxyCall(t *testing.T, ts *httptest.Server, method, path, role, version string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, nil)
	req.Header.Set("X-Test-Role", role)
	req.Header.Set("X-Auth-Token", "tok-"+role)
	if version != "" {
		req.Header.Set("X-Test-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func TestBaremetalProxyShape(t *testing.T) {
	src := &fakeBaremetal{nodes: []BaremetalNode{
		{UUID: "n1", ProvisionState: "available", CPUs: 16, MemoryMB: 65536, LocalGB: 200, MACs: []string{"52:54:00:00:00:01"}},
		{UUID: "n2", ProvisionState: "active", InstanceUUID: "i2"},
	}}
	ts := proxyServer(t, src)
	code, body := proxyCall(t, ts, http.MethodGet, "/os-baremetal-nodes", string(core.RoleAdmin), "")
	want := map[string]any{"nodes": []any{
		map[string]any{"id": "n1", "host": "IRONIC MANAGED", "task_state": "available", "cpus": 16.0, "memory_mb": 65536.0,
			"disk_gb": 200.0, "interfaces": []any{map[string]any{"address": "52:54:00:00:00:01"}}},
		map[string]any{"id": "n2", "host": "IRONIC MANAGED", "task_state": "active", "cpus": 0.0, "memory_mb": 0.0,
			"disk_gb": 0.0, "interfaces": []any{}},
	}}
	if code != http.StatusOK || !reflect.DeepEqual(body, want) {
		t.Fatalf("list: %d %v", code, body)
	}
	code, body = proxyCall(t, ts, http.MethodGet, "/os-baremetal-nodes/n2", string(core.RoleAdmin), "2.35")
	node, _ := body["node"].(map[string]any)
	if code != http.StatusOK || node["instance_uuid"] != "i2" || node["host"] != "IRONIC MANAGED" {
		t.Fatalf("show: %d %v", code, body)
	}
	if code, _ := proxyCall(t, ts, http.MethodGet, "/os-baremetal-nodes/nope", string(core.RoleAdmin), ""); code != http.StatusNotFound {
		t.Fatalf("show of an unknown node: %d", code)
	}
}

func TestBaremetalProxyRefusals(t *testing.T) {
	ts := proxyServer(t, &fakeBaremetal{})
	for _, tc := range []struct {
		method, path, role, version string
		want                        int
	}{
		{http.MethodGet, "/os-baremetal-nodes", string(core.RoleReader), "", http.StatusForbidden},
		{http.MethodGet, "/os-baremetal-nodes", string(core.RoleAdmin), "2.36", http.StatusNotFound},
		{http.MethodPost, "/os-baremetal-nodes", string(core.RoleAdmin), "", http.StatusNotFound},
		{http.MethodDelete, "/os-baremetal-nodes/n1", string(core.RoleAdmin), "", http.StatusNotFound},
		{http.MethodPost, "/os-baremetal-nodes/n1/action", string(core.RoleAdmin), "", http.StatusNotFound},
	} {
		if code, _ := proxyCall(t, ts, tc.method, tc.path, tc.role, tc.version); code != tc.want {
			t.Errorf("%s %s as %s at %q: %d, want %d", tc.method, tc.path, tc.role, tc.version, code, tc.want)
		}
	}
	if code, _ := proxyCall(t, proxyServer(t, nil), http.MethodGet, "/os-baremetal-nodes", string(core.RoleAdmin), ""); code != http.StatusNotFound {
		t.Errorf("no Ironic: %d, want 404", code)
	}
}
