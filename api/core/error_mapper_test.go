package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// A request the leader never received (it was killed, an election is
// under way) applied nothing: the client is told to retry (503), not that
// the server failed (500).
func TestNotDeliveredIsServiceUnavailable(t *testing.T) {
	err := fmt.Errorf("default read: %w: dial tcp 127.0.0.3:7480: connect: connection refused", forward.ErrNotDelivered)
	if code, kind := Classify(err); code != http.StatusServiceUnavailable || kind != wire.KindNoLeader {
		t.Fatalf("Classify(not delivered) = %d %s, want 503 %s", code, kind, wire.KindNoLeader)
	}
}

// Every status the compute API answers has Nova's key (its Fault's
// names); a 406 is a computeFault, as in Nova.
func TestNovaErrorKey(t *testing.T) {
	for code, want := range map[int]string{400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
		405: "badMethod", 406: "computeFault", 409: "conflictingRequest", 413: "overLimit", 415: "badMediaType",
		429: "overLimit", 500: "computeFault", 501: "notImplemented", 503: "serviceUnavailable", 504: "computeFault"} {
		if got := novaErrorKey(code); got != want {
			t.Errorf("novaErrorKey(%d) = %q, want %q", code, got, want)
		}
		if !slices.Contains(NovaErrorKeys, want) {
			t.Errorf("NovaErrorKeys lacks %q", want)
		}
	}
}

// A 501 answers what corral does not do (a hypervisor's uptime): it is
// no failure and is not logged as an error; a 500 is.
func TestNotImplementedIsNotLoggedAsError(t *testing.T) {
	var mu sync.Mutex
	levels := map[int][]slog.Level{}
	h := &recordHandler{record: func(r slog.Record) {
		if r.Message != "request failed" {
			return
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "status" {
				mu.Lock()
				levels[int(a.Value.Int64())] = append(levels[int(a.Value.Int64())], r.Level)
				mu.Unlock()
			}
			return true
		})
	}}
	s, err := NewServer(Config{Logger: slog.New(h)}, func() *fsm.Store { return fsm.New() })
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{501, 500} {
		s.Route(http.MethodGet, fmt.Sprintf("/%d", code), RolePublic, func(echo.Context) error { return echo.NewHTTPError(code, "no") })
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, fmt.Sprintf("/%d", code), nil))
		if rec.Code != code {
			t.Fatalf("GET /%d: %d", code, rec.Code)
		}
	}
	if l := levels[501]; len(l) != 1 || l[0] >= slog.LevelWarn {
		t.Errorf("a 501 is logged at %v, want below warning", l)
	}
	if l := levels[500]; len(l) != 1 || l[0] != slog.LevelError {
		t.Errorf("a 500 is logged at %v, want error", l)
	}
}

type recordHandler struct{ record func(slog.Record) }

func (h *recordHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error { h.record(r); return nil }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h *recordHandler) WithGroup(string) slog.Handler                 { return h }

// Nova's messages are its own words, without the sentinels' in front.
func TestNovaMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{BadRequest("Invalid key_name provided."), "Invalid key_name provided."},
		{fmt.Errorf("%w: %w", ErrBadRequest, fmt.Errorf("%w: Keypair data is invalid", fsm.ErrInvalid)), "Keypair data is invalid"},
		{fmt.Errorf("%w: flavor f does not exist", fsm.ErrNotFound), "flavor f does not exist"},
		{errors.New("bad request: not a sentinel"), "bad request: not a sentinel"},
		{echo.ErrNotFound, "The resource could not be found."},
		{echo.ErrMethodNotAllowed, "The method PATCH is not allowed for this resource."},
	} {
		if got := novaMessage(c.err, c.err.Error(), "PATCH"); got != c.want {
			t.Errorf("novaMessage(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
