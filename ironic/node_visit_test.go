package ironic

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
)

// failAfter serves the simulator, answering 400 to a node listing's page
// that starts after the node marker, once marker is set.
type failAfter struct {
	h      http.Handler
	marker atomic.Value // string
	pages  atomic.Int64 // node listing pages asked for
}

func (f *failAfter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/nodes" || r.URL.Path == "/v1/nodes/detail" {
		f.pages.Add(1)
		if m, _ := f.marker.Load().(string); m != "" && r.URL.Query().Get("marker") == m {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error_message": "{\"faultstring\": \"page refused by the test\"}"}`))
			return
		}
	}
	f.h.ServeHTTP(w, r)
}

func visitClient(t *testing.T) (*sim.Server, *failAfter, *Client) {
	t.Helper()
	s := sim.New(sim.Options{})
	f := &failAfter{h: s}
	ts := httptest.NewServer(f)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, f, pvClient(t, ts.URL, Options{Logger: pvQuiet, pageSize: 3})
}

// A listing visited node by node gives the nodes of the listing returned
// whole, in its order, for every kind of listing the node sync makes.
func TestVisitNodesIsTheListing(t *testing.T) {
	s, _, c := visitClient(t)
	ids := s.SeedNodes(8, "gold", "CUSTOM_X")
	ctx := pvCtx(t, 10*time.Second)
	a, err := c.CreateAllocation(ctx, AllocationRequest{Name: "visit", ResourceClass: "gold", CandidateNodes: []string{ids[2]}})
	pvNoErr(t, err)
	_, err = c.WaitAllocation(ctx, a.UUID)
	pvNoErr(t, err)
	pvNoErr(t, c.ReserveNode(ctx, ids[5], "0b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"))
	collect := func(visit func(func(Node) error) (time.Time, error)) []Node {
		var got []Node
		asOf, err := visit(func(n Node) error { got = append(got, n); return nil })
		pvNoErr(t, err)
		if asOf.IsZero() {
			t.Fatal("a visited listing has no asOf")
		}
		return got
	}
	for _, opts := range []ListOptions{{}, {SortKey: SortByCreatedAt, SortDir: SortDesc},
		{SortKey: SortByUpdatedAt, SortDir: SortDesc, Limit: 2, Until: func(n Node) bool { return n.UpdatedAt.IsZero() }}} {
		want, _, err := c.ListNodesSorted(ctx, opts)
		pvNoErr(t, err)
		got := collect(func(v func(Node) error) (time.Time, error) { return c.VisitNodes(ctx, opts, v) })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: visited %d nodes, listed %d:\n%+v\n%+v", opts, len(got), len(want), got, want)
		}
	}
	want, _, err := c.ListNodesBrief(ctx)
	pvNoErr(t, err)
	got := collect(func(v func(Node) error) (time.Time, error) { return c.VisitNodesBrief(ctx, v) })
	if !reflect.DeepEqual(got, want) || len(got) != len(ids) || got[2].AllocationUUID != a.UUID {
		t.Fatalf("brief: visited %+v, listed %+v", got, want)
	}
}

// An error ends a visited listing and is returned: visit's own, as it
// is, with no page read after it; a page Ironic refuses after others were
// visited, as the listing returned whole does.
func TestVisitNodesStopsAtAnError(t *testing.T) {
	s, f, c := visitClient(t)
	ids := s.SeedNodes(8, "gold")
	ctx := pvCtx(t, 10*time.Second)

	stop := errors.New("stop")
	var visited []string
	pages := f.pages.Load()
	_, err := c.VisitNodes(ctx, ListOptions{}, func(n Node) error {
		visited = append(visited, n.UUID)
		if len(visited) == 4 {
			return stop
		}
		return nil
	})
	if err != stop || !reflect.DeepEqual(visited, ids[:4]) || f.pages.Load()-pages != 2 {
		t.Fatalf("visit's error: %v after %v in %d pages, want it as is after %v in 2", err, visited, f.pages.Load()-pages, ids[:4])
	}

	f.marker.Store(ids[5]) // the third page of 3
	for _, brief := range []bool{false, true} {
		visited = nil
		visit := func(n Node) error { visited = append(visited, n.UUID); return nil }
		var err error
		if brief {
			_, err = c.VisitNodesBrief(ctx, visit)
		} else {
			_, err = c.VisitNodes(ctx, ListOptions{}, visit)
		}
		if !errors.Is(err, ErrInvalid) || !reflect.DeepEqual(visited, ids[:6]) {
			t.Fatalf("brief %v: a refused page: %v after %v, want ErrInvalid after %v", brief, err, visited, ids[:6])
		}
	}
	if nodes, _, err := c.ListNodesSorted(ctx, ListOptions{}); !errors.Is(err, ErrInvalid) || nodes != nil {
		t.Fatalf("the listing returned whole: %d nodes, %v; want none and the error", len(nodes), err)
	}
}

// A page read item by item is the page decoded whole, whatever the order
// and the other keys of its document; a document of another shape is the
// same decoding error, not a transient one.
func TestPageDecodedItemByItem(t *testing.T) {
	for _, doc := range []string{
		`{"nodes": [{"uuid": "a", "properties": {"cpus": 8, "big": 18446744073709551615, "caps": {"x": [1, 2]}}}, {"uuid": "b", "name": null}], "next": "http://x/v1/nodes?marker=b"}`,
		`{"next": null, "extra": {"nodes": [1]}, "nodes": [{"uuid": "c", "traits": ["T1"], "instance_info": {"root_gb": 10}}]}`,
		`{"nodes": null}`, `{}`, `null`, " {\"nodes\": []} \n",
	} {
		var whole nodePage
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		if err := dec.Decode(&whole); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		var streamed nodePage
		dec = json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		if err := streamed.decode(dec); err != nil {
			t.Fatalf("%s: streamed: %v", doc, err)
		}
		if !reflect.DeepEqual(streamed.Nodes, whole.Nodes) && !(len(streamed.Nodes) == 0 && len(whole.Nodes) == 0) ||
			streamed.Next != whole.Next {
			t.Fatalf("%s:\nstreamed %+v\nwhole    %+v", doc, streamed, whole)
		}
	}
	for _, doc := range []string{`[]`, `{"nodes": {"uuid": "a"}}`, `{"nodes": [{"uuid": 1}]}`, `{"nodes": [{"uuid": "a"}`} {
		var pg nodePage
		dec := json.NewDecoder(strings.NewReader(doc))
		err := pg.decode(dec)
		if err == nil {
			t.Fatalf("%s: decoded", doc)
		}
		if e := classifyError("ListNodes", err); doc != `{"nodes": [{"uuid": "a"}` && errors.Is(e, ErrUnavailable) {
			t.Fatalf("%s: a malformed page is taken for a transient error: %v", doc, err)
		}
	}
}

// cutOnce serves the simulator but cuts the answer to the first request
// for a page starting after marker halfway through its body.
type cutOnce struct {
	h      http.Handler
	marker string
	cut    atomic.Bool
}

func (c *cutOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("marker") != c.marker || !c.cut.CompareAndSwap(false, true) {
		c.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	body := rec.Body.Bytes()
	_, _ = w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// A page whose answer is cut midway is read again, and its nodes are
// visited once.
func TestPageCutMidwayIsReadAgain(t *testing.T) {
	s := sim.New(sim.Options{})
	ids := s.SeedNodes(7, "gold")
	cut := &cutOnce{h: s, marker: ids[2]}
	ts := httptest.NewServer(cut)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	c := pvClient(t, ts.URL, Options{Logger: pvQuiet, pageSize: 3})
	var visited []string
	_, err := c.VisitNodes(pvCtx(t, 10*time.Second), ListOptions{}, func(n Node) error {
		visited = append(visited, n.UUID)
		return nil
	})
	if err != nil || !reflect.DeepEqual(visited, ids) || !cut.cut.Load() {
		t.Fatalf("visited %v (%v), want %v once each; cut %v", visited, err, ids, cut.cut.Load())
	}
}
