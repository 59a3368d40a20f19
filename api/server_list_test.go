package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// listNames lists servers with query q at microversion v and returns
// their names in order.
func listNames(t *testing.T, e *env, q, v string) []string {
	t.Helper()
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/detail?"+q, adminToken, "", mv(v))
	if r.code != http.StatusOK {
		t.Fatalf("list %s: %s", q, r)
	}
	var names []string
	for _, s := range get(t, r.json(t), "servers").([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	return names
}

// The filters and sorting of GET /servers as Nova's.
func TestServerListFilters(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	e.propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "vm", Name: "vm", VCPUs: 1, RAM: 1, Disk: 1, IsPublic: true}})
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
		`{"server": {"name": "web", "flavorRef": "vm", "imageRef": "http://images/web.qcow2", "max_count": 2, "return_reservation_id": true}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	res := get(t, r.json(t), "reservation_id").(string)
	mid := time.Now().UTC()
	r = do(t, e.ts, http.MethodPut, computeBase+"/servers/"+adoptedID+"/tags", adminToken, `{"tags": ["a", "b"]}`, mv("2.26"))
	if r.code != http.StatusOK {
		t.Fatalf("tags: %s", r)
	}
	for _, tc := range []struct {
		q, v string
		want []string
	}{
		{"", "2.1", []string{"web-2", "web-1", "db-1"}},
		{"limit=0", "2.1", nil},
		{"name=^web", "2.1", []string{"web-2", "web-1"}},
		{"name=eb-", "2.1", []string{"web-2", "web-1"}},
		{"name=1$", "2.1", []string{"web-1", "db-1"}},
		{"flavor=vm", "2.1", []string{"web-2", "web-1"}},
		{"image=http://images/db.qcow2", "2.1", []string{"db-1"}},
		{"reservation_id=" + res, "2.1", []string{"web-2", "web-1"}},
		{"status=active", "2.1", []string{"db-1"}},
		{"status=BOGUS", "2.1", nil},
		{"ip=10.", "2.1", nil},
		{"sort_key=display_name&sort_dir=asc", "2.1", []string{"db-1", "web-1", "web-2"}},
		{"sort_key=display_name&sort_key=uuid&sort_dir=desc", "2.1", []string{"web-2", "web-1", "db-1"}},
		{"sort_key=deleted&sort_dir=asc", "2.1", []string{"web-2", "web-1", "db-1"}}, // ignored, as Nova
		{"tags=a,b", "2.26", []string{"db-1"}},
		{"tags=a,c", "2.26", nil},
		{"tags-any=c,b", "2.26", []string{"db-1"}},
		{"not-tags=a,b", "2.26", []string{"web-2", "web-1"}},
		{"not-tags-any=b", "2.26", []string{"web-2", "web-1"}},
		{"changes-since=" + url.QueryEscape(mid.Format(time.RFC3339Nano)), "2.1", []string{"db-1"}},
	} {
		if got := listNames(t, e, tc.q, tc.v); !slices.Equal(got, tc.want) {
			t.Errorf("%s at %s: %v, want %v", tc.q, tc.v, got, tc.want)
		}
	}
	// changes-since shows the servers deleted since, as Nova.
	var web1 fsm.Server
	for _, s := range e.peer.Node.Store().Servers() {
		if s.Name == "web-1" {
			web1 = s
		}
	}
	e.propose(&fsm.SetServerTask{ID: web1.ID, Host: web1.Host, Epoch: web1.Epoch, Status: fsm.StatusDeleted})
	since := "changes-since=" + url.QueryEscape(mid.Format(time.RFC3339Nano))
	if got := listNames(t, e, since, "2.1"); !slices.Equal(got, []string{"web-1", "db-1"}) {
		t.Errorf("changes-since with the deleted server: %v", got)
	}
	if got := listNames(t, e, since+"&deleted=false", "2.1"); !slices.Equal(got, []string{"db-1"}) {
		t.Errorf("changes-since, deleted=false: %v", got)
	}
	if got := listNames(t, e, "", "2.1"); slices.Contains(got, "web-1") {
		t.Errorf("a deleted server listed: %v", got)
	}
	// deleted=true (oslo's boolean words) lists the deleted servers only, as
	// Nova's database filter; any other value the live ones.
	for _, q := range []string{"deleted=true", "deleted=True", "deleted=1", "deleted=yes"} {
		if got := listNames(t, e, q, "2.1"); !slices.Equal(got, []string{"web-1"}) {
			t.Errorf("%s: %v, want only the deleted server", q, got)
		}
	}
	for _, q := range []string{"deleted=false", "deleted=0", "deleted=bogus"} {
		if got := listNames(t, e, q, "2.1"); !slices.Equal(got, []string{"web-2", "db-1"}) {
			t.Errorf("%s: %v, want the live servers", q, got)
		}
	}
	for q, code := range map[string]int{
		"sort_key=bogus":                    http.StatusBadRequest,
		"sort_key=display_name&sort_dir=up": http.StatusBadRequest,
		"name=" + url.QueryEscape("("):      http.StatusBadRequest,
		"changes-since=yesterday":           http.StatusBadRequest,
		"limit=-1":                          http.StatusBadRequest,
	} {
		if r := do(t, e.ts, http.MethodGet, computeBase+"/servers?"+q, adminToken, "", nil); r.code != code {
			t.Errorf("list %s: %s, want %d", q, r, code)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/servers?sort_key=deleted", adminToken, "", mv("2.75")); r.code != http.StatusBadRequest {
		t.Errorf("an ignored sort key at 2.75: %s", r)
	}
}
