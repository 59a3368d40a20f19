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

// fakeSource hands out svc-1, svc-2, ... and records refusals.
type fakeSource struct {
	n       int
	refused []string
	err     error
}

func (f *fakeSource) Token(context.Context) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	if f.n == 0 || (len(f.refused) > 0 && f.refused[len(f.refused)-1] == fmt.Sprintf("svc-%d", f.n)) {
		f.n++
	}
	return fmt.Sprintf("svc-%d", f.n), nil
}

func (f *fakeSource) Refused(tok string) { f.refused = append(f.refused, tok) }

// TestImageServiceToken: a lookup without the caller's token is made with
// the service user's token (a new one once if Glance refuses it); with the
// caller's token, the service token is never used; without a source, no
// token is sent at all.
func TestImageServiceToken(t *testing.T) {
	var got []string
	accept := "svc-2"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, sent := r.Header["X-Auth-Token"]
		if !sent {
			tok = []string{"<none>"}
		}
		got = append(got, tok[0])
		if tok[0] != accept && tok[0] != "user" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"id": "good", "name": "ubuntu", "status": "active"}`)
	}))
	defer ts.Close()
	src := &fakeSource{}
	c, err := New(ts.URL, nil, WithServiceToken(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Image(ctx, "", "good"); err != nil {
		t.Fatalf("lookup as the service user: %v", err)
	}
	if want := []string{"svc-1", "svc-2"}; fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(src.refused) != "[svc-1]" {
		t.Fatalf("Glance saw %q, the source was told of %q; want %q and [svc-1]", got, src.refused, want)
	}
	got = nil
	if _, err := c.Image(ctx, "user", "good"); err != nil || fmt.Sprint(got) != "[user]" {
		t.Fatalf("lookup with the caller's token: %v, Glance saw %q", err, got)
	}
	accept, got = "svc-9", nil
	if _, err := c.Image(ctx, "", "good"); !errors.Is(err, ErrUnauthorized) || len(got) != 2 {
		t.Fatalf("service token refused twice: %v after %d requests, want ErrUnauthorized after 2", err, len(got))
	}
	src.err = errors.New("keystone down")
	if _, err := c.Image(ctx, "", "good"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no service token: %v, want ErrUnavailable", err)
	}
	plain, err := New(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if _, err := plain.Image(ctx, "", "good"); !errors.Is(err, ErrUnauthorized) || fmt.Sprint(got) != "[<none>]" {
		t.Fatalf("without a source: %v, Glance saw %q, want no token", err, got)
	}
}
