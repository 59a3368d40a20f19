package api_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

func ptr[T any](v T) *T { return &v }

func TestGophercloudFlavorLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	cl := e.compute(adminToken)
	cl.Microversion = "2.61" // a flavor's description (2.55) and extra specs (2.61)

	res := flavors.Create(ctx, cl, flavors.CreateOpts{
		ID: "bm.gold", Name: "baremetal-gold", RAM: 262144, VCPUs: 64, Disk: ptr(960),
		Swap: ptr(4096), Ephemeral: ptr(100), RxTxFactor: 2.5, IsPublic: ptr(false),
		Description: "gold bare-metal nodes",
	})
	gold, err := res.Extract()
	if err != nil {
		t.Fatalf("create with explicit id: %v", err)
	}
	if rid := res.Header.Get("X-OpenStack-Request-Id"); !requestIDRE.MatchString(rid) {
		t.Errorf("create response request id = %q", rid)
	}
	want := flavors.Flavor{ID: "bm.gold", Name: "baremetal-gold", RAM: 262144, VCPUs: 64, Disk: 960,
		Swap: 4096, Ephemeral: 100, RxTxFactor: 2.5, IsPublic: false, Description: "gold bare-metal nodes",
		ExtraSpecs: map[string]string{}}
	checkFlavor(t, "created", *gold, want)

	small, err := flavors.Create(ctx, cl, flavors.CreateOpts{Name: "small", RAM: 512, VCPUs: 1, Disk: ptr(0)}).Extract()
	if err != nil {
		t.Fatalf("create without id: %v", err)
	}
	if _, err := uuid.Parse(small.ID); err != nil {
		t.Errorf("generated id %q is not a UUID: %v", small.ID, err)
	}
	checkFlavor(t, "created with defaults", *small, flavors.Flavor{ID: small.ID, Name: "small", RAM: 512, VCPUs: 1,
		RxTxFactor: 1, IsPublic: true, ExtraSpecs: map[string]string{}})

	for _, f := range []flavors.Flavor{want, *small} {
		got, err := flavors.Get(ctx, cl, f.ID).Extract()
		if err != nil {
			t.Fatalf("get %s: %v", f.ID, err)
		}
		checkFlavor(t, "get "+f.ID, *got, f)
		stored, err := e.peer.Node.Store().Flavor(f.ID)
		if err != nil || stored.Name != f.Name {
			t.Errorf("store has %+v, %v; want flavor %s named %s", stored, err, f.ID, f.Name)
		}
	}

	// A reader may read but not delete.
	if _, err := flavors.Get(ctx, e.compute(readerToken), small.ID).Extract(); err != nil {
		t.Errorf("reader get: %v", err)
	}
	if err := flavors.Delete(ctx, e.compute(readerToken), small.ID).ExtractErr(); !gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		t.Errorf("reader delete: got %v, want 403", err)
	}

	if err := flavors.Delete(ctx, cl, small.ID).ExtractErr(); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := flavors.Get(ctx, cl, small.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("get after delete: got %v, want 404", err)
	}
	if err := flavors.Delete(ctx, cl, small.ID).ExtractErr(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("second delete: got %v, want 404", err)
	}
	// The name is free again.
	if _, err := flavors.Create(ctx, cl, flavors.CreateOpts{Name: "small", RAM: 256, VCPUs: 1, Disk: ptr(1)}).Extract(); err != nil {
		t.Fatalf("re-create a deleted flavor's name: %v", err)
	}
	if _, err := flavors.Get(ctx, cl, "bm.gold").Extract(); err != nil {
		t.Fatalf("other flavor disappeared: %v", err)
	}
}

func checkFlavor(t *testing.T, what string, got, want flavors.Flavor) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.RAM != want.RAM || got.VCPUs != want.VCPUs ||
		got.Disk != want.Disk || got.Swap != want.Swap || got.Ephemeral != want.Ephemeral ||
		got.RxTxFactor != want.RxTxFactor || got.IsPublic != want.IsPublic || got.Description != want.Description ||
		!maps.Equal(got.ExtraSpecs, want.ExtraSpecs) {
		t.Errorf("%s flavor:\n got %+v\nwant %+v", what, got, want)
	}
}

// seedFlavors creates p01..p05 (public) and q06..q07 (private); flavor i
// has i*512 MiB of RAM and i*10 GiB of disk.
func seedFlavors(t *testing.T, cl *gophercloud.ServiceClient) {
	t.Helper()
	for i := 1; i <= 7; i++ {
		id, public := fmt.Sprintf("p%02d", i), true
		if i > 5 {
			id, public = fmt.Sprintf("q%02d", i), false
		}
		_, err := flavors.Create(context.Background(), cl, flavors.CreateOpts{ID: id, Name: "name-" + id,
			RAM: i * 512, VCPUs: 1, Disk: ptr(i * 10), IsPublic: ptr(public)}).Extract()
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
}

// collect pages through a listing, returning the ids and the page sizes.
func collect(t *testing.T, pager pagination.Pager) (ids []string, pages []int) {
	t.Helper()
	err := pager.EachPage(context.Background(), func(_ context.Context, p pagination.Page) (bool, error) {
		fl, err := flavors.ExtractFlavors(p)
		if err != nil {
			return false, err
		}
		for _, f := range fl {
			ids = append(ids, f.ID)
		}
		pages = append(pages, len(fl))
		return true, nil
	})
	if err != nil {
		t.Fatalf("paging: %v", err)
	}
	return ids, pages
}

func TestGophercloudFlavorListing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cl := e.compute(adminToken)
	seedFlavors(t, cl)
	public := []string{"p01", "p02", "p03", "p04", "p05"}

	cases := []struct {
		name  string
		opts  flavors.ListOpts
		ids   []string
		pages []int
	}{
		{"default is public only", flavors.ListOpts{}, public, []int{5}},
		{"limit pages", flavors.ListOpts{Limit: 2}, public, []int{2, 2, 1}},
		{"limit equal to the count gives one page", flavors.ListOpts{Limit: 5}, public, []int{5}},
		{"marker", flavors.ListOpts{Marker: "p02"}, []string{"p03", "p04", "p05"}, []int{3}},
		{"marker and limit", flavors.ListOpts{Marker: "p01", Limit: 3}, []string{"p02", "p03", "p04", "p05"}, []int{3, 1}},
		{"min ram", flavors.ListOpts{MinRAM: 2048}, []string{"p04", "p05"}, []int{2}},
		{"min disk", flavors.ListOpts{MinDisk: 30}, []string{"p03", "p04", "p05"}, []int{3}},
		{"min ram and disk", flavors.ListOpts{MinRAM: 1024, MinDisk: 40}, []string{"p04", "p05"}, []int{2}},
		{"public", flavors.ListOpts{AccessType: flavors.PublicAccess}, public, []int{5}},
		{"private", flavors.ListOpts{AccessType: flavors.PrivateAccess}, []string{"q06", "q07"}, []int{2}},
		{"all", flavors.ListOpts{AccessType: flavors.AllAccess}, append(slices.Clone(public), "q06", "q07"), []int{7}},
		{"all paged", flavors.ListOpts{AccessType: flavors.AllAccess, Limit: 3}, append(slices.Clone(public), "q06", "q07"), []int{3, 3, 1}},
		{"private min ram", flavors.ListOpts{AccessType: flavors.PrivateAccess, MinRAM: 3584}, []string{"q07"}, []int{1}},
		{"nothing matches", flavors.ListOpts{MinRAM: 1 << 20}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids, pages := collect(t, flavors.ListDetail(cl, c.opts))
			if !slices.Equal(ids, c.ids) || !slices.Equal(pages, c.pages) {
				t.Errorf("detail: ids %v in pages %v; want %v in %v", ids, pages, c.ids, c.pages)
			}
			q, err := c.opts.ToFlavorListQuery()
			if err != nil {
				t.Fatal(err)
			}
			brief := pagination.NewPager(cl, cl.ServiceURL("flavors")+q, func(r pagination.PageResult) pagination.Page {
				return flavors.FlavorPage{LinkedPageBase: pagination.LinkedPageBase{PageResult: r}}
			})
			ids, pages = collect(t, brief)
			if !slices.Equal(ids, c.ids) || !slices.Equal(pages, c.pages) {
				t.Errorf("brief: ids %v in pages %v; want %v in %v", ids, pages, c.ids, c.pages)
			}
		})
	}

	t.Run("all pages", func(t *testing.T) {
		page, err := flavors.ListDetail(cl, flavors.ListOpts{Limit: 2, AccessType: flavors.AllAccess}).AllPages(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all, err := flavors.ExtractFlavors(page)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 7 {
			t.Fatalf("AllPages gave %d flavors, want 7", len(all))
		}
		for i, f := range all {
			if f.RAM != (i+1)*512 || f.Disk != (i+1)*10 || f.IsPublic != (i < 5) || f.Name != "name-"+f.ID {
				t.Errorf("flavor %d: %+v", i, f)
			}
		}
	})

	t.Run("brief entries carry only id, name and links", func(t *testing.T) {
		r := do(t, e.ts, "GET", computeBase+"/flavors?limit=1", adminToken, "", nil)
		f := get(t, r.json(t), "flavors", 0).(map[string]any)
		for _, k := range []string{"ram", "vcpus", "disk", "extra_specs"} {
			if _, ok := f[k]; ok {
				t.Errorf("brief flavor has %q: %v", k, f)
			}
		}
		if href := get(t, f, "links", 0, "href"); href != e.ts.URL+computeBase+"/flavors/p01" {
			t.Errorf("self link = %v", href)
		}
		next := get(t, r.json(t), "flavors_links", 0).(map[string]any)
		if next["rel"] != "next" || next["href"] != e.ts.URL+computeBase+"/flavors?limit=1&marker=p01" {
			t.Errorf("next link = %v", next)
		}
	})

	t.Run("last page has no next link", func(t *testing.T) {
		r := do(t, e.ts, "GET", computeBase+"/flavors/detail?limit=5", adminToken, "", nil)
		if _, ok := r.json(t)["flavors_links"]; ok {
			t.Errorf("a listing that fits in the limit has a next link: %s", r.body)
		}
	})
}

func TestGophercloudExtraSpecs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	cl := e.compute(adminToken)
	cl.Microversion = "2.61" // a flavor's extra specs
	if _, err := flavors.Create(ctx, cl, flavors.CreateOpts{ID: "es", Name: "es", RAM: 1024, VCPUs: 2, Disk: ptr(10)}).Extract(); err != nil {
		t.Fatal(err)
	}

	specs, err := flavors.ListExtraSpecs(ctx, cl, "es").Extract()
	if err != nil || len(specs) != 0 {
		t.Fatalf("new flavor extra specs = %v, %v; want empty", specs, err)
	}
	in := map[string]string{"capabilities:boot_mode": "uefi", "resources:CUSTOM_GOLD": "1", "trait:HW_CPU_X86_AVX2": "required"}
	got, err := flavors.CreateExtraSpecs(ctx, cl, "es", flavors.ExtraSpecsOpts(in)).Extract()
	if err != nil || !maps.Equal(got, in) {
		t.Fatalf("create extra specs = %v, %v; want %v", got, err, in)
	}
	one, err := flavors.GetExtraSpec(ctx, cl, "es", "capabilities:boot_mode").Extract()
	if err != nil || !maps.Equal(one, map[string]string{"capabilities:boot_mode": "uefi"}) {
		t.Fatalf("get extra spec = %v, %v", one, err)
	}
	up, err := flavors.UpdateExtraSpec(ctx, cl, "es", flavors.ExtraSpecsOpts{"capabilities:boot_mode": "bios"}).Extract()
	if err != nil || !maps.Equal(up, map[string]string{"capabilities:boot_mode": "bios"}) {
		t.Fatalf("update extra spec = %v, %v", up, err)
	}
	// Setting more keys merges them with the existing ones.
	if _, err := flavors.CreateExtraSpecs(ctx, cl, "es", flavors.ExtraSpecsOpts{"hw:cpu_policy": "dedicated"}).Extract(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"capabilities:boot_mode": "bios", "resources:CUSTOM_GOLD": "1",
		"trait:HW_CPU_X86_AVX2": "required", "hw:cpu_policy": "dedicated"}
	specs, err = flavors.ListExtraSpecs(ctx, cl, "es").Extract()
	if err != nil || !maps.Equal(specs, want) {
		t.Fatalf("extra specs = %v, %v; want %v", specs, err, want)
	}
	f, err := flavors.Get(ctx, cl, "es").Extract()
	if err != nil || !maps.Equal(f.ExtraSpecs, want) {
		t.Fatalf("flavor extra_specs = %v, %v; want %v", f.ExtraSpecs, err, want)
	}

	if err := flavors.DeleteExtraSpec(ctx, cl, "es", "resources:CUSTOM_GOLD").ExtractErr(); err != nil {
		t.Fatalf("delete extra spec: %v", err)
	}
	delete(want, "resources:CUSTOM_GOLD")
	if _, err := flavors.GetExtraSpec(ctx, cl, "es", "resources:CUSTOM_GOLD").Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("get deleted extra spec: got %v, want 404", err)
	}
	if err := flavors.DeleteExtraSpec(ctx, cl, "es", "resources:CUSTOM_GOLD").ExtractErr(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("delete deleted extra spec: got %v, want 404", err)
	}

	reader := e.compute(readerToken)
	specs, err = flavors.ListExtraSpecs(ctx, reader, "es").Extract()
	if err != nil || !maps.Equal(specs, want) {
		t.Fatalf("reader lists extra specs = %v, %v; want %v", specs, err, want)
	}
	if _, err := flavors.CreateExtraSpecs(ctx, reader, "es", flavors.ExtraSpecsOpts{"a": "b"}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		t.Fatalf("reader sets extra spec: got %v, want 403", err)
	}
	if err := flavors.DeleteExtraSpec(ctx, reader, "es", "hw:cpu_policy").ExtractErr(); !gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		t.Fatalf("reader deletes extra spec: got %v, want 403", err)
	}
	if specs, _ := flavors.ListExtraSpecs(ctx, cl, "es").Extract(); !maps.Equal(specs, want) {
		t.Fatalf("extra specs after forbidden writes = %v, want %v", specs, want)
	}
}

func TestGophercloudMicroversion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cl := e.compute(adminToken)
	cl.Microversion = "2.61"
	res := flavors.Create(context.Background(), cl, flavors.CreateOpts{Name: "mv", RAM: 128, VCPUs: 1, Disk: ptr(1)})
	if _, err := res.Extract(); err != nil {
		t.Fatal(err)
	}
	if got := res.Header.Get("OpenStack-API-Version"); got != "compute 2.61" {
		t.Errorf("OpenStack-API-Version = %q, want compute 2.61", got)
	}
	if got := res.Header.Get("X-OpenStack-Nova-API-Version"); got != "2.61" {
		t.Errorf("X-OpenStack-Nova-API-Version = %q, want 2.61", got)
	}
	cl.Microversion = "3.0"
	_, err := flavors.ListDetail(cl, nil).AllPages(context.Background())
	if !gophercloud.ResponseCodeIs(err, http.StatusNotAcceptable) {
		t.Fatalf("unsupported microversion: got %v, want 406", err)
	}
}
