package keystone

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidateNamesTheOption(t *testing.T) {
	good := Options{AuthURL: "http://127.0.0.1:5000/v3", Username: "corral", Password: "pw", ProjectName: "service"}
	if err := good.Validate(); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(*Options)
		want []string
	}{
		"no auth_url":       {func(o *Options) { o.AuthURL = "" }, []string{"auth_url is not set"}},
		"blank auth_url":    {func(o *Options) { o.AuthURL = "  " }, []string{"auth_url is not set"}},
		"relative auth_url": {func(o *Options) { o.AuthURL = "127.0.0.1:5000" }, []string{"auth_url"}},
		"v2 auth_url":       {func(o *Options) { o.AuthURL = "http://k:5000/v2.0/" }, []string{"auth_url", "v2.0"}},
		"bad www":           {func(o *Options) { o.WWWAuthenticateURI = "ftp://k" }, []string{"www_authenticate_uri"}},
		"no username":       {func(o *Options) { o.Username = "" }, []string{"username is not set"}},
		"no password":       {func(o *Options) { o.Password = "" }, []string{"password is not set"}},
		"no project":        {func(o *Options) { o.ProjectName = "" }, []string{"project_name is not set"}},
		"negative timeout":  {func(o *Options) { o.HTTPConnectTimeout = -time.Second }, []string{"http_connect_timeout"}},
		"several": {func(o *Options) { o.AuthURL, o.Password = "", "" },
			[]string{"auth_url is not set", "password is not set"}},
	} {
		o := good
		c.edit(&o)
		err := o.Validate()
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", name, err, w)
			}
		}
		if _, nerr := New(o, nil); nerr == nil {
			t.Errorf("%s: New accepted options that Validate refuses", name)
		}
	}
}

func TestOptionsSetTakesOperatorNames(t *testing.T) {
	var o Options
	for _, kv := range [][2]string{
		{"auth_url", "http://127.0.0.1:5000"}, {"www_authenticate_uri", "http://keystone.example:5000"},
		{"username", "corral"}, {"password", "pw"}, {"project_name", "service"},
		{"user_domain_name", "Users"}, {"project_domain_name", "Projects"},
		{"token_cache_time", "600"}, {"http_connect_timeout", "2s"}, {"http_request_timeout", "30"},
	} {
		if err := o.Set(kv[0], kv[1]); err != nil {
			t.Fatalf("Set(%s): %v", kv[0], err)
		}
	}
	want := Options{AuthURL: "http://127.0.0.1:5000", WWWAuthenticateURI: "http://keystone.example:5000",
		Username: "corral", Password: "pw", ProjectName: "service", UserDomainName: "Users",
		ProjectDomainName: "Projects", TokenCacheTime: 10 * time.Minute, HTTPConnectTimeout: 2 * time.Second,
		HTTPRequestTimeout: 30 * time.Second}
	if o != want {
		t.Fatalf("got %+v\nwant %+v", o, want)
	}
	if err := o.Set("token_cache_time", "-1"); err != nil || o.TokenCacheTime != -time.Second {
		t.Fatalf("token_cache_time -1: %v, %v", err, o.TokenCacheTime)
	}
	if err := o.Set("token_cache_time", "soon"); err == nil || !strings.Contains(err.Error(), "token_cache_time") {
		t.Fatalf("bad token_cache_time: %v", err)
	}
	if err := o.Set("auth_uri", "x"); err == nil || !strings.Contains(err.Error(), `"auth_uri"`) {
		t.Fatalf("unknown option: %v", err)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{AuthURL: "http://127.0.0.1:5000/v3/", Username: "u", Password: "p", ProjectName: "s"}.withDefaults()
	if o.UserDomainName != "Default" || o.ProjectDomainName != "Default" || o.TokenCacheTime != 300*time.Second ||
		o.WWWAuthenticateURI != o.AuthURL {
		t.Fatalf("defaults %+v", o)
	}
	if got := o.identityV3(); got != "http://127.0.0.1:5000/v3" {
		t.Fatalf("identityV3 %q", got)
	}
	v, err := New(Options{AuthURL: "http://127.0.0.1:5000", WWWAuthenticateURI: "http://public:5000",
		Username: "u", Password: "p", ProjectName: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.WWWAuthenticate(); got != `Keystone uri="http://public:5000"` {
		t.Fatalf("WWWAuthenticate %q", got)
	}
}
