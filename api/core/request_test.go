package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestCheckText(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"name": "plain"}`:                           true,
		`{"name": "caf\u00e9 \ud83d\ude80"}`:          true, // é and a rocket (a surrogate pair)
		`{"name": "a\\ud800"}`:                        true, // an escaped backslash, then text
		`{"name": "\\\ud83d\ude80"}`:                  true,
		"{\"name\": \"\xef\xbf\xbd\"}":                true, // U+FFFD itself is a character
		`{"name": "\ud800"}`:                          false,
		`{"name": "\udc00"}`:                          false,
		`{"name": "\ud800\u0041"}`:                    false,
		`{"name": "\ud800\ud800"}`:                    false,
		`{"name": "x\ud83d"}`:                         false,
		`{"\udfff": "key"}`:                           false,
		"{\"name\": \"\xff\"}":                        false,
		"{\"name\": \"\xed\xa0\x80\"}":                false, // a surrogate encoded as UTF-8
		`{"name": "\u12"}`:                            true,  // not an escape: the decoder refuses it
		`{"name": "\\\\\ud800"}`:                      false, // two backslashes, then a lone surrogate
		`{"name": "` + strings.Repeat(`\\`, 9) + `"}`: true,
	} {
		if err := CheckText([]byte(body)); (err == nil) != ok || err != nil && !errors.Is(err, ErrBadRequest) {
			t.Errorf("CheckText(%s) = %v, want ok=%t", body, err, ok)
		}
	}
}

// FuzzCheckText: a body CheckText lets through never decodes to a
// replacement character the client did not send.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`{"a": "\ud800"}`, `{"a": "\ud83d\ude80"}`, `["\\ud800"]`, "\"\xff\"", `"\ufffd"`, `"\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if CheckText(body) != nil || !json.Valid(body) {
			return
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return
		}
		sent := bytes.Count(body, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(body), []byte(`\ufffd`))
		if got := countReplacement(v); got > sent {
			t.Fatalf("%q decodes to %d U+FFFD, %d sent", body, got, sent)
		}
	})
}

func countReplacement(v any) int {
	n := 0
	switch x := v.(type) {
	case string:
		n += strings.Count(x, "\uFFFD")
	case []any:
		for _, e := range x {
			n += countReplacement(e)
		}
	case map[string]any:
		for k, e := range x {
			n += strings.Count(k, "\uFFFD") + countReplacement(e)
		}
	}
	return n
}

func TestCheckContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"": true, "application/json": true, "application/json; charset=UTF-8": true, "Application/JSON": true,
		"application/vnd.openstack.compute+json": true, "text/plain": true, " ": true,
		"application/xml": false, "text/html": false, "application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x": false, "json": false, ";;": false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		r.Header.Set("Content-Type", ct)
		err := CheckContentType(r)
		var he *echo.HTTPError
		if (err == nil) != ok || err != nil && (!errors.As(err, &he) || he.Code != http.StatusUnsupportedMediaType) {
			t.Errorf("Content-Type %q: %v, want ok=%t", ct, err, ok)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	if err := CheckContentType(r); err != nil {
		t.Errorf("no Content-Type: %v", err)
	}
}
