package client_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/client"
)

func TestUseTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "https://")

	// Without the CA the server's certificate is not trusted.
	var out struct{ OK bool }
	if err := client.New(strings.Replace(srv.URL, "https", "http", 1), "").Do(context.Background(), "GET", "/", nil, &out); err == nil {
		t.Fatal("plain HTTP to a TLS server succeeded")
	}
	tc, err := client.TLSConfigFromEnv(env{client.EnvCACert: ca}.get)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(addr, "")
	if err := c.UseTLS(tc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Addr, "https://") {
		t.Fatalf("address %s not switched to https", c.Addr)
	}
	if err := c.Do(context.Background(), "GET", "/", nil, &out); err != nil || !out.OK {
		t.Fatalf("GET over TLS: %v %+v", err, out)
	}
}

type env map[string]string

func (e env) get(k string) string { return e[k] }

func TestTLSConfigErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tc, err := client.TLSConfigFromEnv(env{}.get); tc != nil || err != nil {
		t.Fatalf("no variables: %v %v", tc, err)
	}
	for name, e := range map[string]env{
		"CA junk":     {client.EnvCACert: junk},
		"CA missing":  {client.EnvCACert: filepath.Join(dir, "missing.pem")},
		"cert junk":   {client.EnvClientCert: junk, client.EnvClientKey: junk},
		"key missing": {client.EnvClientCert: junk},
	} {
		_, err := client.TLSConfigFromEnv(e.get)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), "junk.pem") && !strings.Contains(err.Error(), "missing.pem") && !strings.Contains(err.Error(), client.EnvClientKey) {
			t.Errorf("%s: %v names neither file nor variable", name, err)
		}
	}
}
