package nova

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// referenceList is GET /servers as it was before the store's indexes:
// every server the state holds, sorted in the query's order, paged from
// the marker with the query's filter. It returns the servers listed,
// whether the answer links a next page, and the error.
func referenceList(c echo.Context, s *fsm.Store) ([]fsm.Server, bool, error) {
	q := c.QueryParams()
	p, err := parsePage(q, limitZeroIsEmpty)
	if err != nil {
		return nil, false, err
	}
	cl := core.CallerOf(c)
	project, err := listProject(cl, q)
	if err != nil {
		return nil, false, err
	}
	sel, err := serverFilter(c, q, project)
	if err != nil {
		return nil, false, err
	}
	order, err := serverOrder(c, q, cl.SeesEveryProject())
	if err != nil {
		return nil, false, err
	}
	servers := s.Servers()
	ptrs := make([]*fsm.Server, len(servers))
	for i := range servers {
		ptrs[i] = &servers[i]
	}
	slices.SortStableFunc(ptrs, order.cmp)
	all := make([]fsm.Server, len(ptrs))
	for i, v := range ptrs {
		all[i] = *v
	}
	listed, more, err := pageOf(all, p, func(v fsm.Server) string { return v.ID },
		func(v fsm.Server) bool { return sel.keep(&v, s.ServerNet) })
	if err != nil {
		return nil, false, err
	}
	return listed, more && len(listed) > 0, nil
}

// referenceHandler answers GET /servers (brief) from referenceList.
func referenceHandler(s *fsm.Store) echo.HandlerFunc {
	return func(c echo.Context) error {
		listed, more, err := referenceList(c, s)
		if err != nil {
			return err
		}
		out := make([]any, 0, len(listed))
		for _, v := range listed {
			out = append(out, briefServer(c, v))
		}
		resp := map[string]any{"servers": out}
		if more {
			resp["servers_links"] = nextLinks(c, listed[len(listed)-1].ID)
		}
		return c.JSON(http.StatusOK, resp)
	}
}

// referenceIDs is referenceList's ids.
func referenceIDs(c echo.Context, s *fsm.Store) ([]string, bool, error) {
	listed, more, err := referenceList(c, s)
	ids := []string{}
	for _, v := range listed {
		ids = append(ids, v.ID)
	}
	return ids, more, err
}

// randomServers fills a store, by applying commands, with servers of
// three projects created at times that tie and whose fractions are
// prefixes of one another, multiple creates (one creation time, launch
// indexes), tags, renames, status changes, deletes and purges.
func randomServers(t *testing.T, r *rand.Rand) (*applier, []string) {
	a := newApplier(t)
	a.must(&fsm.RegisterHost{Meta: fsm.Meta{At: listT0}, Name: "h1", Kind: fsm.KindHypervisor})
	a.must(&fsm.CreateFlavor{Meta: fsm.Meta{At: listT0}, Flavor: fsm.Flavor{ID: "vm", Name: "vm", VCPUs: 1, RAM: 1, Disk: 1, IsPublic: true}})
	when := func() time.Time {
		return listT0.Add(time.Duration(r.IntN(8))*250*time.Millisecond + []time.Duration{0, 0, 50 * time.Millisecond, 1}[r.IntN(4)])
	}
	var ids []string
	n := 0
	for range 10 + r.IntN(40) {
		switch k := r.IntN(10); {
		case k < 4 || len(ids) == 0:
			members := make([]fsm.SetMember, 1+r.IntN(3))
			host := []string{"h1", ""}[r.IntN(2)]
			for i := range members {
				// Ids that share long prefixes, and ones that do not.
				id := fmt.Sprintf("%08x-0000-4000-8000-%012d", r.IntN(3), n)
				n++
				members[i] = fsm.SetMember{ID: id, Host: host}
				if host == "" {
					members[i].NoValidHost = "none"
				}
			}
			var tags []string
			for _, tg := range []string{"a", "b", "c"} {
				if r.IntN(2) == 0 {
					tags = append(tags, tg)
				}
			}
			set := fsm.ServerSet{ReservationID: fmt.Sprintf("r-%d", n), MinCount: 1, Members: members,
				Server: fsm.CreateServer{Name: []string{"web", "db", "Web"}[r.IntN(3)], FlavorID: []string{"bm", "vm"}[r.IntN(2)],
					ImageRef: []string{"img", "other"}[r.IntN(2)], ProjectID: []string{"", "p1", "p2"}[r.IntN(3)], UserID: "u"},
				Fields: fsm.ServerFields{Tags: tags}}
			if err := a.apply(&fsm.CreateServerSets{Meta: fsm.Meta{At: when()}, Sets: []fsm.ServerSet{set}}); err != nil {
				t.Fatal(err)
			}
			for _, m := range members {
				ids = append(ids, m.ID)
			}
		case k < 6:
			v, _ := a.s.Server(ids[r.IntN(len(ids))])
			if v.Host != "" && v.Live() {
				st := []fsm.ServerStatus{fsm.StatusActive, fsm.StatusError, ""}[r.IntN(3)]
				if v.TaskState == fsm.TaskDeleting {
					st = fsm.StatusDeleted
				}
				_ = a.apply(&fsm.SetServerTask{Meta: fsm.Meta{At: when()}, ID: v.ID, Host: v.Host, Epoch: v.Epoch, Status: st})
			}
		case k < 7:
			name := []string{"web-9", "db", "x"}[r.IntN(3)]
			_ = a.apply(&fsm.UpdateServerFields{Meta: fsm.Meta{At: when()}, ID: ids[r.IntN(len(ids))], Name: &name})
		case k < 9:
			_ = a.apply(&fsm.DeleteServer{Meta: fsm.Meta{At: when()}, ID: ids[r.IntN(len(ids))]})
		default:
			if r.IntN(3) == 0 {
				_ = a.apply(&fsm.PurgeServers{Meta: fsm.Meta{At: when()}, Before: when(), IDs: slices.Clone(ids[:r.IntN(len(ids))])})
			}
		}
	}
	return a, append(ids, "nobody")
}

// randomListQuery draws a GET /servers query, its caller and microversion.
func randomListQuery(r *rand.Rand, ids []string) (string, core.Caller, core.Microversion) {
	q := url.Values{}
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	maybe := func(p int) bool { return r.IntN(100) < p }
	if maybe(60) {
		q.Set("limit", pick("0", "1", "2", "3", "5", "1000"))
	}
	if maybe(40) {
		q.Set("marker", ids[r.IntN(len(ids))])
	}
	for range r.IntN(3) {
		q.Add("sort_key", pick("created_at", "created_at", "display_name", "uuid", "updated_at", "launch_index",
			"availability_zone", "deleted", "locked", "project_id", "vm_state", "task_state", "host"))
	}
	for range r.IntN(3) {
		q.Add("sort_dir", pick("asc", "desc"))
	}
	if maybe(20) {
		q.Set("changes-since", listT0.Add(time.Duration(r.IntN(8))*250*time.Millisecond+time.Duration(r.IntN(2))*50*time.Millisecond).Format(time.RFC3339Nano))
	}
	if maybe(20) {
		q.Set("deleted", pick("true", "false"))
	}
	if maybe(15) {
		q.Set("name", pick("^web", "b-", "x", "9$"))
	}
	if maybe(15) {
		q.Add("status", pick("ERROR", "active", "BUILD", "DELETED"))
	}
	if maybe(10) {
		q.Set("tags", pick("a", "a,b"))
	}
	if maybe(10) {
		q.Set("not-tags-any", pick("c", "b,c"))
	}
	if maybe(10) {
		q.Set("image", "other")
	}
	if maybe(10) {
		q.Set("flavor", "vm")
	}
	if maybe(5) {
		q.Set("ip", "10.")
	}
	if maybe(5) {
		q.Set("reservation_id", fmt.Sprintf("r-%d", r.IntN(10)))
	}
	cl := pick("static", "admin", "member")
	caller := map[string]core.Caller{
		"static": {Role: core.RoleAdmin, Static: true},
		"admin":  {Role: core.RoleAdmin, Project: "p1", User: "u"},
		"member": {Role: core.RoleMember, Project: pick("p1", "p2", "admin"), User: "u"},
	}[cl]
	if maybe(30) && cl != "member" {
		q.Set("all_tenants", "1")
	}
	if maybe(30) {
		q.Set("project_id", pick("p1", "p2", "admin"))
	}
	mv := []core.Microversion{{Major: 2, Minor: 1}, {Major: 2, Minor: 26}, {Major: 2, Minor: 73}, {Major: 2, Minor: 75}}[r.IntN(4)]
	return q.Encode(), caller, mv
}

// GET /servers lists exactly what the reference lists, sorting every
// server, for every filter, sort, marker and limit, over random states,
// and the same again after the store is restored from its snapshot (the
// indexes rebuilt rather than kept).
func TestServerListMatchesReference(t *testing.T) {
	queries, nonEmpty, errs := 0, 0, 0
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		a, ids := randomServers(t, r)
		restored := fsm.New()
		var buf bytes.Buffer
		if _, err := a.s.Snapshot().WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if err := restored.Restore(&buf); err != nil {
			t.Fatal(err)
		}
		for range 150 {
			query, cl, mv := randomListQuery(r, ids)
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/servers?"+query, nil), httptest.NewRecorder())
			c.Set(ctxMicroversion, mv)
			core.SetCaller(c, cl)
			want, wantMore, wantErr := referenceIDs(c, a.s)
			for name, s := range map[string]*fsm.Store{"applied": a.s, "restored": restored} {
				got, more, err := listed(t, s, cl, mv, query)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || !slices.Equal(got, want) || more != wantMore {
					t.Fatalf("seed %d, %s store, %s as %+v at %s:\n got %v (next %v), %v\nwant %v (next %v), %v",
						seed, name, query, cl, mv, got, more, err, want, wantMore, wantErr)
				}
			}
			queries++
			if len(want) > 0 {
				nonEmpty++
			}
			if wantErr != nil {
				errs++
			}
		}
	}
	// The queries must have listed something, and tried the errors too.
	if nonEmpty < queries/3 || errs == 0 || errs > queries/3 {
		t.Fatalf("%d queries: %d listed servers, %d errors", queries, nonEmpty, errs)
	}
	t.Logf("%d queries: %d listed servers, %d errors", queries, nonEmpty, errs)
}
