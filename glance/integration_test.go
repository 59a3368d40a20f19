package glance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// realGlance reads OPENSTACK_ENV (scripts/openstack-up.sh, which CI sets).
// Without it, it says so loudly and skips: the client is then tested
// against the fakes only.
func realGlance(t *testing.T) map[string]string {
	t.Helper()
	path := os.Getenv("OPENSTACK_ENV")
	if path == "" {
		const loud = "OPENSTACK_ENV IS NOT SET: THE GLANCE CLIENT IS NOT TESTED AGAINST A REAL GLANCE " +
			"(export OPENSTACK_ENV=$(scripts/openstack-up.sh), as CI does)"
		fmt.Fprintln(os.Stderr, "glance: "+loud)
		t.Skip(loud)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = strings.Trim(v, `'"`)
		}
	}
	for _, k := range []string{"OS_AUTH_URL", "GLANCE_URL", "ALICE_USERNAME", "ALICE_PASSWORD", "ALICE_PROJECT", "BOB_USERNAME"} {
		if env[k] == "" {
			t.Fatalf("%s is not in %s", k, path)
		}
	}
	return env
}

// keystoneToken logs a user in to its project, as the user's client would.
func keystoneToken(t *testing.T, env map[string]string, who string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
			"name": env[who+"_USERNAME"], "password": env[who+"_PASSWORD"], "domain": map[string]string{"name": "Default"}}}},
		"scope": map[string]any{"project": map[string]any{"name": env[who+"_PROJECT"], "domain": map[string]string{"name": "Default"}}},
	}})
	resp, err := http.Post(strings.TrimRight(env["OS_AUTH_URL"], "/")+"/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tok := resp.Header.Get("X-Subject-Token")
	if resp.StatusCode != http.StatusCreated || tok == "" {
		t.Fatalf("login %s: %s", who, resp.Status)
	}
	return tok
}

// Against the control plane's Glance: a user's private image listed by
// name, its properties added and removed by JSON patch, its schema's own
// attributes told from properties, hidden from another project, deleted.
func TestImagesAgainstGlance(t *testing.T) {
	env := realGlance(t)
	alice, bob := keystoneToken(t, env, "ALICE"), keystoneToken(t, env, "BOB")
	c, err := New(env["GLANCE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "corral-glance-test-" + rand.Text()[:10]
	body, _ := json.Marshal(map[string]string{"name": name, "container_format": "bare", "disk_format": "raw", "visibility": "private"})
	out, err := c.call(ctx, alice, http.MethodPost, "/v2/images", "application/json", body)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	created, err := imageDoc(out, c.base, name)
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID()
	t.Cleanup(func() { _ = c.DeleteImage(context.Background(), alice, id) })

	list, err := c.ListImages(ctx, alice, url.Values{"name": {name}}, 0)
	if err != nil || len(list) != 1 || list[0].ID() != id || list[0]["status"] != "queued" {
		t.Fatalf("list by name: %v, %v", list, err)
	}
	base, err := c.BaseAttributes(ctx, alice)
	if err != nil || !base["id"] || !base["min_ram"] || !base["visibility"] || base["os_distro"] || base["kernel_id"] {
		t.Fatalf("base attributes %v, %v", base, err)
	}
	debian, raw := "debian", "corral:a/b~c" // escaped in the patch
	d, err := c.PatchImage(ctx, alice, id, []PatchOp{{Op: "add", Path: PropertyPath("os_distro"), Value: &debian},
		{Op: "add", Path: PropertyPath(raw), Value: &debian}})
	if err != nil || d["os_distro"] != "debian" || d[raw] != "debian" {
		t.Fatalf("add properties: %v, %v", d, err)
	}
	d, err = c.PatchImage(ctx, alice, id, []PatchOp{{Op: "remove", Path: PropertyPath("os_distro")}})
	if _, still := d["os_distro"]; err != nil || still || d[raw] != "debian" {
		t.Fatalf("remove a property: %v, %v", d, err)
	}
	if _, err := c.PatchImage(ctx, alice, id, []PatchOp{{Op: "replace", Path: "/status", Value: &debian}}); !errors.Is(err, ErrUnauthorized) && !errors.Is(err, ErrInvalid) {
		t.Fatalf("a change of a read-only attribute: %v", err)
	}
	if _, err := c.ImageDoc(ctx, bob, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another project reads a private image: %v", err)
	}
	if err := c.DeleteImage(ctx, bob, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another project deletes a private image: %v", err)
	}
	if err := c.DeleteImage(ctx, alice, id); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := c.ImageDoc(ctx, alice, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted image: %v", err)
	}
}
