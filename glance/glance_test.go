package glance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestImage(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Auth-Token") != "tok":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/v2/images/good":
			fmt.Fprint(w, `{"id": "good", "name": "ubuntu", "status": "active"}`)
		case r.URL.Path == "/v2/images/broken":
			fmt.Fprint(w, `<html>`)
		case r.URL.Path == "/v2/images/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	c, err := New(ts.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	im, err := c.Image(ctx, "tok", "good")
	if err != nil || im.Status != "active" || im.Name != "ubuntu" {
		t.Fatalf("good image: %+v, %v", im, err)
	}
	for _, tc := range []struct {
		token, id string
		want      error
	}{
		{"tok", "nope", ErrNotFound},
		{"other", "good", ErrUnauthorized},
		{"tok", "broken", ErrUnavailable},
		{"tok", "busy", ErrUnavailable},
	} {
		if _, err := c.Image(ctx, tc.token, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("image %s with token %s: %v, want %v", tc.id, tc.token, err, tc.want)
		}
	}
	ts.Close()
	if _, err := c.Image(ctx, "tok", "good"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("closed server: %v", err)
	}
	for _, bad := range []string{"", "ftp://x", "127.0.0.1:9292"} {
		if _, err := New(bad, nil); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}
