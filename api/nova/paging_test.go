package nova

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

// TestParsePage holds the two dialects of Nova's limit: servers and
// flavors take 0 as no limit, key pairs and hypervisors as an empty page,
// and each words a bad limit its own way.
func TestParsePage(t *testing.T) {
	for _, c := range []struct {
		query     string
		zeroIsAll bool
		limit     int
		marker    string
		err       string
	}{
		{"", limitZeroIsAll, -1, "", ""},
		{"limit=0", limitZeroIsAll, -1, "", ""},
		{"limit=0", limitZeroIsEmpty, 0, "", ""},
		{"limit=3&marker=m", limitZeroIsAll, 3, "m", ""},
		{"marker=m", limitZeroIsEmpty, -1, "m", ""},
		{"limit=-1", limitZeroIsAll, 0, "", `bad request: limit "-1" must be a non-negative integer`},
		{"limit=x", limitZeroIsEmpty, 0, "", "bad request: Invalid input for query parameters limit. Value: x. Expected a non-negative integer."},
	} {
		q, _ := url.ParseQuery(c.query)
		p, err := parsePage(q, c.zeroIsAll)
		switch {
		case c.err != "":
			if err == nil || err.Error() != c.err || !errors.Is(err, core.ErrBadRequest) {
				t.Errorf("%q: %v, want %s", c.query, err, c.err)
			}
		case err != nil || p.limit != c.limit || p.marker != c.marker:
			t.Errorf("%q (zero is all %v): %+v, %v; want limit %d marker %q", c.query, c.zeroIsAll, p, err, c.limit, c.marker)
		}
	}
}

func TestPageOf(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	id := func(s string) string { return s }
	notC := func(s string) bool { return s != "c" }
	for _, c := range []struct {
		p    page
		keep func(string) bool
		want []string
		more bool
	}{
		{page{limit: -1}, nil, all, false},
		{page{limit: 2}, nil, []string{"a", "b"}, true},
		{page{limit: 2, marker: "b"}, notC, []string{"d", "e"}, false},
		{page{limit: 1, marker: "b"}, notC, []string{"d"}, true},
		{page{limit: 0}, nil, nil, true},
		{page{limit: 5}, nil, all, false},
		{page{limit: -1, marker: "e"}, nil, nil, false},
	} {
		got, more, err := pageOf(all, c.p, id, c.keep)
		if err != nil || !slices.Equal(got, c.want) || more != c.more {
			t.Errorf("%+v: %v more=%v err=%v; want %v more=%v", c.p, got, more, err, c.want, c.more)
		}
	}
	if _, _, err := pageOf(all, page{limit: -1, marker: "zz"}, id, nil); err == nil || err.Error() != "bad request: marker [zz] not found" {
		t.Errorf("unknown marker: %v", err)
	}
}

// TestNextLinks: the next page is the same request from after the last
// item, every other query parameter kept.
func TestNextLinks(t *testing.T) {
	e := echo.New()
	req := httptest.NewRequest("GET", "http://corral:7480/compute/v2.1/flavors/detail?limit=2&minRam=1&marker=old", nil)
	c := e.NewContext(req, httptest.NewRecorder())
	got := nextLinks(c, "f2")
	want := "http://corral:7480/compute/v2.1/flavors/detail?limit=2&marker=f2&minRam=1"
	if len(got) != 1 || got[0].Rel != "next" || got[0].Href != want {
		t.Fatalf("nextLinks = %+v, want %s", got, want)
	}
}
