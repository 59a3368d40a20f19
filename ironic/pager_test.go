package ironic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// pagedIronic serves GET / and a collection of ports page by page, with a
// next link on each full page as serve builds it; it records each query.
type pagedIronic struct {
	mu      sync.Mutex
	queries []url.Values
	ports   []string // UUIDs, in order
	// next returns the next link of a full page ending at last.
	next func(r *http.Request, last string) string
}

func (s *pagedIronic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/" {
		fmt.Fprint(w, `{"default_version": {"id": "v1", "version": "1.82", "min_version": "1.1"}}`)
		return
	}
	q := r.URL.Query()
	s.mu.Lock()
	s.queries = append(s.queries, q)
	s.mu.Unlock()
	limit, _ := strconv.Atoi(q.Get("limit"))
	from := 0
	if m := q.Get("marker"); m != "" {
		for i, id := range s.ports {
			if id == m {
				from = i + 1
			}
		}
	}
	end := min(from+limit, len(s.ports))
	var items []map[string]string
	for _, id := range s.ports[from:end] {
		items = append(items, map[string]string{"uuid": id, "address": "52:54:00:00:00:" + id[len(id)-2:]})
	}
	body := map[string]any{"ports": items}
	if len(items) == limit {
		body["next"] = s.next(r, s.ports[end-1])
	}
	w.Header().Set("Date", time.Date(2026, 12, 1, 10, 0, len(s.queries), 0, time.UTC).Format(http.TimeFormat))
	_ = json.NewEncoder(w).Encode(body)
}

func (s *pagedIronic) seen() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.queries...)
}

func pagedClient(t *testing.T, s *pagedIronic, pageSize int) *Client {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return pvClient(t, ts.URL, Options{Logger: pvQuiet, pageSize: pageSize})
}

func portIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i)
	}
	return out
}

func portPages(t *testing.T, c *Client, l listing, visit func(*portJSON) bool) ([]string, time.Time, error) {
	t.Helper()
	var got []string
	asOf, err := listPages[portPage](pvCtx(t, 10*time.Second), c, l, func(p *portJSON) bool {
		if !visit(p) {
			return false
		}
		got = append(got, p.UUID)
		return true
	})
	return got, asOf, err
}

func all(*portJSON) bool { return true }

// The pager reads every page with its own URL and filters, taking only
// the marker of Ironic's next link (built for another host, without the
// filters), and returns the clock of the first answer.
func TestPagerFollowsTheMarkerOnly(t *testing.T) {
	s := &pagedIronic{ports: portIDs(5), next: func(r *http.Request, last string) string {
		return "http://elsewhere:6385/v1/ports/detail?limit=" + r.URL.Query().Get("limit") + "&marker=" + last
	}}
	c := pagedClient(t, s, 2)
	got, asOf, err := portPages(t, c, listing{call: "ListPorts", base: c.sc.ServiceURL("ports", "detail"),
		query: url.Values{"node": {"n1"}}}, all)
	pvNoErr(t, err)
	if fmt.Sprint(got) != fmt.Sprint(s.ports) {
		t.Fatalf("listed %v, want %v", got, s.ports)
	}
	if want := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC); !asOf.Equal(want) {
		t.Errorf("asOf %s, want the first page's Date %s", asOf, want)
	}
	qs := s.seen()
	if len(qs) != 3 {
		t.Fatalf("%d requests, want 3 (pages of 2, 2 and 1)", len(qs))
	}
	for i, q := range qs {
		wantMarker := ""
		if i > 0 {
			wantMarker = s.ports[2*i-1]
		}
		if q.Get("node") != "n1" || q.Get("limit") != "2" || q.Get("marker") != wantMarker {
			t.Errorf("request %d: %v, want node=n1, limit=2, marker=%q", i+1, q, wantMarker)
		}
	}
}

// A listing's own limit and marker are used, the limit no larger than
// the client's page size; visit returning false reads no further page.
func TestPagerLimitMarkerAndStop(t *testing.T) {
	s := &pagedIronic{ports: portIDs(9), next: func(r *http.Request, last string) string {
		return "/v1/ports/detail?marker=" + last
	}}
	c := pagedClient(t, s, 4)
	l := listing{call: "ListPorts", base: c.sc.ServiceURL("ports", "detail"), limit: 3, marker: s.ports[0]}
	got, _, err := portPages(t, c, l, func(p *portJSON) bool { return p.UUID != s.ports[5] })
	pvNoErr(t, err)
	if want := s.ports[1:5]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if qs := s.seen(); len(qs) != 2 || qs[0].Get("limit") != "3" || qs[0].Get("marker") != s.ports[0] {
		t.Fatalf("requests %v, want 2, the first with limit=3 and the listing's marker", qs)
	}
	l.limit = 100
	_, _, err = portPages(t, c, l, all)
	pvNoErr(t, err)
	if qs := s.seen(); qs[2].Get("limit") != "4" {
		t.Fatalf("limit %s, want the client's page size 4", qs[2].Get("limit"))
	}
}

// A next link that leads back to a page already read is an error, not an
// endless listing.
func TestPagerStopsALoop(t *testing.T) {
	s := &pagedIronic{ports: portIDs(6)}
	s.next = func(*http.Request, string) string { return "/v1/ports/detail?marker=" + s.ports[1] }
	c := pagedClient(t, s, 2)
	_, _, err := portPages(t, c, listing{call: "ListPorts", base: c.sc.ServiceURL("ports", "detail")}, all)
	var e *Error
	if !errors.As(err, &e) || e.Call != "ListPorts" || e.Fault != "pagination loops at marker "+s.ports[1] {
		t.Fatalf("err %v, want the loop named", err)
	}
	if n := len(s.seen()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}
