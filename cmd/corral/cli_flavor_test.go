package main

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParseProperties(t *testing.T) {
	good := []struct {
		in   []string
		want map[string]string
	}{
		{nil, map[string]string{}},
		{[]string{"capabilities:boot_mode=uefi"}, map[string]string{"capabilities:boot_mode": "uefi"}},
		{[]string{"a=1", "b=", "c=x=y", "a=2"}, map[string]string{"a": "2", "b": "", "c": "x=y"}},
		{[]string{"resources:CUSTOM_GOLD=1", "trait:HW_CPU_X86_AVX2=required"},
			map[string]string{"resources:CUSTOM_GOLD": "1", "trait:HW_CPU_X86_AVX2": "required"}},
	}
	for _, g := range good {
		got, err := parseProperties(g.in)
		if err != nil || !maps.Equal(got, g.want) {
			t.Errorf("parseProperties(%q) = %v, %v; want %v", g.in, got, err, g.want)
		}
	}

	bad := []struct {
		in   []string
		want string
	}{
		{[]string{"novalue"}, `property "novalue" is not KEY=VALUE`},
		{[]string{"ok=1", "=v"}, `property "=v" is not KEY=VALUE`},
		{[]string{"bad/key=v"}, `"bad/key"`},
		{[]string{"k=" + strings.Repeat("v", 256)}, "256 characters"},
	}
	for _, b := range bad {
		_, err := parseProperties(b.in)
		if err == nil {
			t.Errorf("parseProperties(%q) accepted", b.in)
			continue
		}
		if code := exitCode(err); code != 2 {
			t.Errorf("parseProperties(%q): exit code %d, want 2", b.in, code)
		}
		if !strings.Contains(err.Error(), b.want) {
			t.Errorf("parseProperties(%q): %v; want it to mention %s", b.in, err, b.want)
		}
	}
}

// TestFlavorCommandsRejectBadProperties checks that bad arguments fail
// with exit code 2 before any request is sent.
func TestFlavorCommandsRejectBadProperties(t *testing.T) {
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, `{"error": {"code": 500, "message": "unexpected"}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(ts.Close)
	addr := ts.URL

	for _, args := range [][]string{
		{"flavor", "create", "f1", "--property", "novalue"},
		{"flavor", "create", "f1", "--property", "a=1", "--property", "bad/key=v"},
		{"flavor", "set", "f1", "--property", "=v"},
		{"flavor", "set", "f1"},
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append(args, "--addr", addr, "--token", "admin-token-1"))
		err := root.Execute()
		if err == nil {
			t.Errorf("corral %s succeeded", strings.Join(args, " "))
			continue
		}
		if code := exitCode(err); code != 2 {
			t.Errorf("corral %s: exit code %d (%v), want 2", strings.Join(args, " "), code, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the API, want none", n)
	}
}
