package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/corral-dev/corral/wire"
)

// seen is one request the fake API received.
type seen struct {
	method, uri, version, body string
}

// fakeAPI answers every request with the given status and body and
// records what it received.
func fakeAPI(t *testing.T, status int, answer string) (*Client, *[]seen) {
	t.Helper()
	var got []seen
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, seen{r.Method, r.URL.RequestURI(), r.Header.Get("OpenStack-API-Version"), string(b)})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(ts.Close)
	return New(ts.URL, "tok"), &got
}

func TestTypedComputeCalls(t *testing.T) {
	ctx := context.Background()
	c, got := fakeAPI(t, http.StatusAccepted, `{"server": {"id": "s-1", "links": [{"rel": "self", "href": "h"}]}}`)
	ref, err := c.CreateServer(ctx, wire.ServerCreate{Name: "a", ImageRef: "img", FlavorRef: "f", Networks: wire.Networks("n1")})
	if err != nil || ref.ID != "s-1" {
		t.Fatalf("CreateServer: %+v, %v", ref, err)
	}
	want := seen{"POST", "/compute/v2.1/servers", "compute 2.75",
		`{"server":{"name":"a","imageRef":"img","flavorRef":"f","networks":[{"uuid":"n1"}]}}`}
	if (*got)[0] != want {
		t.Fatalf("sent %+v, want %+v", (*got)[0], want)
	}

	c.Consistency, c.ComputeVersion = "linearizable", "2.73"
	if _, err := c.ListServers(ctx, ServerQuery{Status: "ACTIVE", Deleted: true}); err != nil {
		t.Fatal(err)
	}
	if s := (*got)[1]; s.uri != "/compute/v2.1/servers/detail?consistency=linearizable&deleted=true&status=ACTIVE" || s.version != "compute 2.73" {
		t.Fatalf("ListServers sent %+v", s)
	}
	c.Headers = map[string]string{"OpenStack-API-Version": "compute 2.1"}
	if err := c.RebootServer(ctx, "s 1", true); err != nil {
		t.Fatal(err)
	}
	if s := (*got)[2]; s.uri != "/compute/v2.1/servers/s%201/action" || s.version != "compute 2.1" || s.body != `{"reboot":{"type":"HARD"}}` {
		t.Fatalf("RebootServer sent %+v", s)
	}
	if err := c.StopServer(ctx, "s"); err != nil || (*got)[3].body != `{"os-stop":null}` {
		t.Fatalf("StopServer sent %+v, %v", (*got)[3], err)
	}
	if _, err := c.CreateFlavor(ctx, wire.FlavorCreate{Name: new("f"), RAM: new(0), VCPUs: new(1), Disk: new(0)}); err != nil {
		t.Fatal(err)
	}
	if s := (*got)[4]; s.body != `{"flavor":{"name":"f","ram":0,"vcpus":1,"disk":0}}` {
		t.Fatalf("CreateFlavor sent %s", s.body)
	}
}

func TestTypedAdminCalls(t *testing.T) {
	ctx := context.Background()
	c, got := fakeAPI(t, http.StatusOK, `{"owner": {"server_id": "s", "host": "h1", "epoch": 3}}`)
	c.Consistency = "stale"
	ow, err := c.ServerOwner(ctx, "s")
	if err != nil || ow.Host != "h1" || ow.Epoch != 3 {
		t.Fatalf("ServerOwner: %+v, %v", ow, err)
	}
	if s := (*got)[0]; s.uri != "/v1/servers/s/owner?consistency=stale" || s.version != "" {
		t.Fatalf("ServerOwner sent %+v", s)
	}
	if _, err := c.MoveServer(ctx, "s", "h2"); err != nil || (*got)[1].uri != "/v1/servers/s/move" || (*got)[1].body != `{"host":"h2"}` {
		t.Fatalf("MoveServer sent %+v, %v", (*got)[1], err)
	}
	// The keyring is an operation, not a read: no consistency.
	if _, err := c.Keyring(ctx, http.MethodGet, ""); err != nil || (*got)[2].uri != "/v1/operator/keyring" || (*got)[2].body != "" {
		t.Fatalf("Keyring sent %+v, %v", (*got)[2], err)
	}
	if _, err := c.Keyring(ctx, http.MethodPut, "k"); err != nil || (*got)[3].body != `{"key":"k"}` {
		t.Fatalf("Keyring sent %+v, %v", (*got)[3], err)
	}
}

func TestTypedCallErrors(t *testing.T) {
	ctx := context.Background()
	c, _ := fakeAPI(t, http.StatusNotFound, `{"itemNotFound": {"code": 404, "message": "Instance x could not be found."}}`)
	_, err := c.GetServer(ctx, "x")
	var e *Error
	if !IsStatus(err, http.StatusNotFound) || !errors.As(err, &e) || e.Kind != "itemNotFound" || e.Message != "Instance x could not be found." {
		t.Fatalf("Nova error: %#v", err)
	}
	c, _ = fakeAPI(t, http.StatusConflict, mustJSON(wire.ErrorBody{Error: wire.ErrorDetail{Code: 409, Kind: wire.KindConflict, Message: "taken"}}))
	_, err = c.GetHost(ctx, "h")
	if !errors.As(err, &e) || e.Kind != wire.KindConflict || e.Message != "taken" {
		t.Fatalf("native error: %#v", err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
