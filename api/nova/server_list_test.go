package nova

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// applier applies commands to a store as the log would.
type applier struct {
	tb  testing.TB
	s   *fsm.Store
	idx uint64
}

func newApplier(tb testing.TB) *applier {
	a := &applier{tb: tb, s: fsm.New()}
	a.apply(&fsm.CreateFlavor{Meta: fsm.Meta{At: listT0}, Flavor: fsm.Flavor{ID: "bm", Name: "bm", VCPUs: 1, RAM: 1, Disk: 1, IsPublic: true}})
	return a
}

// apply applies c and returns its error (nil when Apply took it).
func (a *applier) apply(c fsm.Command) error {
	a.tb.Helper()
	a.idx++
	data, err := fsm.Encode(c)
	if err != nil {
		a.tb.Fatal(err)
	}
	return a.s.Apply(a.idx, data).Err
}

func (a *applier) must(c fsm.Command) {
	a.tb.Helper()
	if err := a.apply(c); err != nil {
		a.tb.Fatalf("%T: %v", c, err)
	}
}

// listed answers GET /servers?query as cl at microversion mv: the ids
// listed, or the error (and a nil list).
func listed(tb testing.TB, s *fsm.Store, cl core.Caller, mv core.Microversion, query string) ([]string, bool, error) {
	tb.Helper()
	h := New(&core.State{Cluster: storeCluster{s}}, Config{})
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/servers?"+query, nil), rec)
	c.Set(ctxMicroversion, mv)
	core.SetCaller(c, cl)
	if err := h.ListServers(false)(c); err != nil {
		return nil, false, err
	}
	if rec.Code != http.StatusOK {
		tb.Fatalf("%s: %d %s", query, rec.Code, rec.Body)
	}
	var resp struct {
		Servers []struct {
			ID string `json:"id"`
		} `json:"servers"`
		Links []any `json:"servers_links"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		tb.Fatal(err)
	}
	ids := []string{}
	for _, v := range resp.Servers {
		ids = append(ids, v.ID)
	}
	return ids, len(resp.Links) > 0, nil
}

var (
	staticAdmin = core.Caller{Role: core.RoleAdmin, Static: true}
	mv21        = core.Microversion{Major: 2, Minor: 1}
)

// created_at and updated_at sort in time, as Nova's database does: a time
// on the second, and fractions of different lengths, are not compared as
// text.
func TestServerListSortsTimesInTime(t *testing.T) {
	a := newApplier(t)
	for _, s := range []struct {
		id string
		at time.Duration
	}{{"a", 0}, {"b", 500 * time.Millisecond}, {"c", 550 * time.Millisecond}} {
		a.must(&fsm.CreateServer{Meta: fsm.Meta{At: listT0.Add(s.at)}, ID: s.id, Name: s.id, FlavorID: "bm", ImageRef: "img", NoValidHost: "none"})
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"c", "b", "a"}},
		{"sort_key=created_at&sort_dir=asc", []string{"a", "b", "c"}},
		{"sort_key=updated_at&sort_dir=asc", []string{"a", "b", "c"}},
		{"sort_key=updated_at&sort_dir=desc", []string{"c", "b", "a"}},
	} {
		got, _, err := listed(t, a.s, staticAdmin, mv21, c.query)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.query, got, err, c.want)
		}
	}
}
