package core

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// X-Corral-Read-Your-Writes is true or false, in any case and around
// spaces; anything else, or the header twice, is a 400.
func TestReadYourWritesHeader(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
		bad    bool
	}{
		{nil, false, false},
		{[]string{"true"}, true, false},
		{[]string{"TRUE"}, true, false},
		{[]string{" True "}, true, false},
		{[]string{"false"}, false, false},
		{[]string{"False"}, false, false},
		{[]string{""}, false, true},
		{[]string{"1"}, false, true},
		{[]string{"t"}, false, true},
		{[]string{"yes"}, false, true},
		{[]string{"true", "true"}, false, true},
	} {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		for _, v := range tc.values {
			req.Header.Add(ReadYourWritesHeader, v)
		}
		got, err := readYourWrites(echo.New().NewContext(req, httptest.NewRecorder()))
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("%q: %t, %v; want %t, error %t", tc.values, got, err, tc.want, tc.bad)
		}
	}
}
