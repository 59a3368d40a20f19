package nova

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/benchrow"
)

// storeCluster is a core.Cluster over a bare store: reads only.
type storeCluster struct{ s *fsm.Store }

func (c storeCluster) Name() string            { return "bench" }
func (c storeCluster) Store() *fsm.Store       { return c.s }
func (storeCluster) Members() []cluster.Member { return nil }
func (storeCluster) RaftStatus() cluster.RaftStatus {
	return cluster.RaftStatus{}
}
func (storeCluster) Ready() []cluster.Check { return nil }
func (storeCluster) ProposeCommitted(context.Context, fsm.Command) (uint64, error) {
	return 0, fmt.Errorf("read-only")
}
func (storeCluster) AwaitApplied(context.Context, uint64) error { return nil }
func (storeCluster) ApplyForwarded(context.Context, []byte) (uint64, error) {
	return 0, fmt.Errorf("read-only")
}
func (storeCluster) ReadIndex(context.Context, bool) (uint64, error)        { return 0, nil }
func (storeCluster) ReadBarrier(context.Context, cluster.Consistency) error { return nil }

// listStates are the stores of the list benchmark, built once per size.
var listStates sync.Map // listSize -> *listState

type listSize struct{ live, deleted int }

type listState struct {
	s     *fsm.Store
	since time.Time // changes-since of about the last 1,000 servers created
	third string    // the id of a server about a tenth into the default order
}

// listProjects is the number of projects the benchmark's servers share.
const listProjects = 10

var listT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// listStore builds, by applying commands, a store with live servers and
// deleted ones retained, spread over listProjects projects and created
// 10 ms apart in one sequence, the deleted ones deleted 1 s after their
// creation (each of them a server no host took: nothing to release).
func listStore(b *testing.B, size listSize) *listState {
	if v, ok := listStates.Load(size); ok {
		return v.(*listState)
	}
	s := fsm.New()
	idx := uint64(0)
	apply := func(c fsm.Command) {
		idx++
		data, err := fsm.Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		if r := s.Apply(idx, data); r.Err != nil {
			b.Fatalf("%T: %v", c, r.Err)
		}
	}
	apply(&fsm.CreateFlavor{Meta: fsm.Meta{At: listT0}, Flavor: fsm.Flavor{ID: "bm", Name: "bm", VCPUs: 1, RAM: 1, Disk: 1, IsPublic: true}})
	total := size.live + size.deleted
	st := &listState{s: s}
	for i := range total {
		at := listT0.Add(time.Duration(i) * 10 * time.Millisecond)
		id := fmt.Sprintf("20000000-0000-4000-8000-%012d", i)
		apply(&fsm.CreateServer{Meta: fsm.Meta{At: at}, ID: id, Name: fmt.Sprintf("server-%d", i), FlavorID: "bm",
			ImageRef: "img", NoValidHost: "none", ProjectID: fmt.Sprintf("project-%d", i%listProjects)})
		// The deleted ones spread evenly among the live ones.
		if size.deleted > 0 && (i+1)*size.deleted/total != i*size.deleted/total {
			apply(&fsm.DeleteServer{Meta: fsm.Meta{At: at.Add(time.Second)}, ID: id})
		}
		if i == total-1000 {
			st.since = at
		}
		if i == total-total/10 {
			st.third = id
		}
	}
	listStates.Store(size, st)
	return st
}

// BenchmarkServerList is GET /servers as a user pays it, against live
// servers and deleted ones retained for deleted_retention: the first page
// of 1,000 in the default order (every project, as an admin; one
// project's, as its member), the next page after a marker, changes-since
// of the last 1,000 servers changed, and another sort key. Sizes: 10^3
// live, 0 or 10^4 deleted; with CORRAL_BENCH=1, 10^4 live, 0 or 10^5
// deleted. Each is measured twice in the same run: "index", the handler
// as it is (pages from the store's indexes), and "sort", the reference
// the differential test holds it to (sorts every server the state holds,
// as the handler did before the indexes). With CORRAL_BENCH=1 the ratio
// of the two for the default order with the deleted servers is a row of
// make bench's table (testkit/benchrow); CORRAL_BENCH_SIZE=small keeps the
// smaller sizes.
func BenchmarkServerList(b *testing.B) {
	live, deleted := 1_000, 10_000
	if os.Getenv("CORRAL_BENCH") == "1" && benchrow.Size(b) == benchrow.Full {
		live, deleted = 10_000, 100_000
	}
	perList := map[string]time.Duration{} // sub-benchmark → CPU (else wall) per list
	admin := core.Caller{Role: core.RoleAdmin, Static: true}
	member := core.Caller{Role: core.RoleMember, Project: "project-3", User: "u"}
	for _, d := range []int{0, deleted} {
		for _, q := range []struct {
			name  string
			query func(st *listState) string
			cl    core.Caller
		}{
			{"default", func(*listState) string { return "limit=1000" }, admin},
			{"project", func(*listState) string { return "limit=1000" }, member},
			{"marker", func(st *listState) string { return "limit=1000&marker=" + st.third }, admin},
			{"changes-since", func(st *listState) string {
				return "limit=1000&changes-since=" + st.since.Format(time.RFC3339Nano)
			}, admin},
			{"sort-name", func(*listState) string { return "limit=1000&sort_key=display_name&sort_dir=asc" }, admin},
		} {
			for _, impl := range []string{"sort", "index"} {
				b.Run(fmt.Sprintf("live=%d/deleted=%d/%s/%s", live, d, q.name, impl), func(b *testing.B) {
					st := listStore(b, listSize{live, d})
					list := referenceHandler(st.s)
					if impl == "index" {
						list = New(&core.State{Cluster: storeCluster{st.s}}, Config{}).ListServers(false)
					}
					e := echo.New()
					target := "/servers?" + q.query(st)
					b.ReportAllocs()
					b.ResetTimer()
					cpu := testkit.ProcessCPU()
					for b.Loop() {
						rec := httptest.NewRecorder()
						c := e.NewContext(httptest.NewRequest(http.MethodGet, target, nil), rec)
						c.Set(ctxMicroversion, core.Microversion{Major: 2, Minor: 1})
						core.SetCaller(c, q.cl)
						if err := list(c); err != nil || rec.Code != http.StatusOK {
							b.Fatalf("%s: %v %d %s", target, err, rec.Code, rec.Body)
						}
					}
					perList[b.Name()] = b.Elapsed() / time.Duration(b.N)
					if now := testkit.ProcessCPU(); now > 0 {
						// The process's CPU per list (the garbage collector's
						// included): on a shared machine it varies less than
						// the wall time.
						b.ReportMetric(float64((now-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
						perList[b.Name()] = (now - cpu) / time.Duration(b.N)
					}
				})
			}
		}
	}
	if os.Getenv("CORRAL_BENCH") == "1" {
		// make bench's row: the default order, every project, with the
		// deleted servers retained.
		name := fmt.Sprintf("%s/live=%d/deleted=%d/default/", b.Name(), live, deleted)
		index, sort := perList[name+"index"], perList[name+"sort"]
		if index <= 0 || sort <= 0 {
			b.Fatalf("no measure of %sindex or %ssort: %v", name, name, perList)
		}
		benchrow.Emit(b, benchrow.Row{Row: "server-list-index-per-sort", Value: index.Seconds() / sort.Seconds(), Unit: "× sort",
			Scale: fmt.Sprintf("%d live + %d deleted, first page of 1,000: %s → %s per list", live, deleted,
				sort.Round(100*time.Microsecond), index.Round(100*time.Microsecond))})
	}
}
