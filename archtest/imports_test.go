package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/corral-dev/corral"

type pkg struct {
	ImportPath string
	Imports    []string // direct
	Deps       []string // transitive
	GoFiles    []string
	hasCode    bool // it has files other than tests
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps,GoFiles", mod+"/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		p.hasCode = len(p.GoFiles) > 0
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")] = p
	}
	return pkgs
}

// A rule forbids, for the packages it names, direct imports of standard
// packages (I/O cannot be hidden behind a helper in the same package) and
// any path, direct or transitive, of corral's own packages and modules.
type rule struct {
	pkgs   []string // corral-relative paths; "x/..." covers x and below
	why    string
	direct []string // path prefixes, direct imports only (standard packages, modules reached through another layer)
	anyDep []string // path prefixes, transitive (corral-relative when not a domain)
	// stdOnly: the standard library and nothing else, not even corral,
	// but the corral packages allow names.
	stdOnly bool
	allow   []string // corral-relative paths; "x/..." covers x and below
}

var ioStd = []string{"net", "net/http", "net/url", "os", "os/exec", "os/signal", "syscall", "database/sql",
	"math/rand", "math/rand/v2", "crypto/rand", "log", "log/slog", "io/fs", "path/filepath"}

var modules = struct{ echo, gophercloud, memberlist, raft, prometheus string }{
	"github.com/labstack/echo", "github.com/gophercloud/gophercloud", "github.com/hashicorp/memberlist",
	"github.com/hashicorp/raft", "github.com/prometheus/client_golang"}

var rules = []rule{
	{pkgs: []string{"fsm/..."}, why: "the state machine is pure and deterministic: no I/O, clock sources aside",
		direct: ioStd,
		anyDep: []string{"cluster", "api", "ironic", "compute", "client", modules.echo, modules.gophercloud, modules.memberlist, modules.raft, modules.prometheus}},
	{pkgs: []string{"fsm/sched/..."}, why: "scheduling decisions are pure functions of their inputs",
		direct: ioStd, stdOnly: true},
	{pkgs: []string{"upgrade/..."}, why: "the migration reaches Ironic through its client and corral through its API",
		anyDep: []string{"cluster", "api", "compute", "ironic/driver", "ironic/mirror", modules.raft, modules.memberlist}},
	{pkgs: []string{"cluster/..."}, why: "the cluster knows nothing of the API or of Ironic",
		anyDep: []string{"api", "ironic", "compute", modules.echo, modules.gophercloud}},
	{pkgs: []string{"compute/..."}, why: "the manager drivers share knows no driver and no cluster; its drivers reach Neutron through interfaces",
		anyDep: []string{"api", "cluster", "ironic", "neutron", modules.gophercloud}},
	{pkgs: []string{"neutron"}, why: "the Neutron client is only a client: it speaks Neutron's terms, not the state machine's",
		anyDep: []string{"api", "cluster", "compute", "fsm", "ironic"}},
	{pkgs: []string{"neutron/..."}, why: "the port lifecycle reaches the cluster through compute.Handle, and knows no Ironic",
		anyDep: []string{"api", "cluster", "ironic"}},
	{pkgs: []string{"ironic"}, why: "the Ironic client is only a client: it speaks Ironic's terms, not the state machine's",
		anyDep: []string{"api", "cluster", "compute", "fsm", "ironic/driver", "ironic/mirror"}},
	{pkgs: []string{"ironic/driver/...", "ironic/mirror/..."}, why: "Ironic's users reach the cluster through interfaces",
		anyDep: []string{"api", "cluster"}},
	{pkgs: []string{"ironic/driver/..."}, why: "an owner's driver does not run the leader's mirror",
		anyDep: []string{"ironic/mirror"}},
	{pkgs: []string{"ironic/mirror/..."}, why: "the leader's mirror is no virt driver",
		anyDep: []string{"compute", "ironic/driver"}},
	{pkgs: []string{"neutron/reaper/..."}, why: "the leader's port reaper reaches the cluster and Neutron through interfaces",
		anyDep: []string{"api", "cluster", "compute", "ironic"}},
	{pkgs: []string{"ironic/sim/..."}, why: "the simulator stands alone",
		anyDep: []string{"fsm", "cluster", "api", "compute", "ironic/driver", "ironic/mirror"}},
	{pkgs: []string{"api/..."}, why: "the API reaches raft, gossip and Ironic only through interfaces",
		direct: []string{modules.raft, modules.memberlist, modules.gophercloud},
		anyDep: []string{"ironic/driver", "ironic/mirror"}},
	{pkgs: []string{"api/core/..."}, why: "the server core the API's surfaces share knows none of them",
		anyDep: []string{"api/nova", "api/placement", "api/admin"}},
	{pkgs: []string{"api/nova/..."}, why: "each API surface has its home: they share only the server core",
		anyDep: []string{"api/placement", "api/admin"}},
	{pkgs: []string{"api/placement/..."}, why: "each API surface has its home: they share only the server core",
		anyDep: []string{"api/nova", "api/admin"}},
	{pkgs: []string{"api/admin/..."}, why: "each API surface has its home: they share only the server core",
		anyDep: []string{"api/nova", "api/placement"}},
	{pkgs: []string{"client/...", "testkit/...", "auth/...", "glance/..."}, why: "shared by the black-box tiers: no corral internals",
		anyDep: []string{"fsm", "cluster", "api", "compute", "ironic", modules.raft, modules.memberlist}},
	{pkgs: []string{"wire/..."}, why: "the API's wire types are for every program: the standard library only",
		stdOnly: true},
	{pkgs: []string{"client/..."}, why: "the Go client is for every program: the standard library and the wire types only",
		stdOnly: true, allow: []string{"wire/..."}},
}

func covers(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// pureStd are packages under a forbidden prefix that do no I/O: net/netip
// only parses and compares addresses.
var pureStd = []string{"net/netip"}

func forbidden(prefix, dep string) bool {
	if slices.Contains(pureStd, dep) {
		return false
	}
	if !strings.Contains(prefix, ".") && !isStd(prefix) { // corral-relative
		prefix = mod + "/" + prefix
	}
	return dep == prefix || strings.HasPrefix(dep, prefix+"/")
}

func TestForbiddenImports(t *testing.T) {
	pkgs := listPackages(t)
	for _, r := range rules {
		matched := 0
		for path, p := range pkgs {
			if !slicesAny(r.pkgs, func(pat string) bool { return covers(pat, path) }) {
				continue
			}
			matched++
			for _, imp := range p.Imports {
				for _, f := range r.direct {
					if forbidden(f, imp) {
						t.Errorf("%s imports %s: %s", path, imp, r.why)
					}
				}
			}
			for _, dep := range p.Deps {
				allowed := slicesAny(r.allow, func(pat string) bool { return covers(pat, strings.TrimPrefix(dep, mod+"/")) })
				if first, _, _ := strings.Cut(dep, "/"); r.stdOnly && strings.Contains(first, ".") && !allowed {
					t.Errorf("%s depends on %s: %s", path, dep, r.why)
				}
				for _, f := range r.anyDep {
					if forbidden(f, dep) && !covers(path+"/...", strings.TrimPrefix(dep, mod+"/")) {
						t.Errorf("%s depends on %s: %s", path, dep, r.why)
					}
				}
			}
		}
		if matched == 0 {
			t.Errorf("rule for %v matches no package: the layout changed, update the rule and docs/architecture.md", r.pkgs)
		}
	}
}

// Nothing imports the command.
func TestNothingImportsCmd(t *testing.T) {
	for path, p := range listPackages(t) {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, mod+"/cmd/") {
				t.Errorf("%s imports %s: cmd/ is wiring, nothing imports it", path, imp)
			}
		}
	}
}

// Every package says what it owns in a package comment.
func TestEveryPackageHasADocComment(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{len .GoFiles}}\t{{.Doc}}", mod+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, rest, _ := strings.Cut(line, "\t")
		files, doc, _ := strings.Cut(rest, "\t")
		if files == "0" {
			continue // tests only: the comment is on the test files
		}
		if strings.TrimSpace(doc) == "" {
			t.Errorf("%s has no package comment: say what it owns and what it must never import", path)
		}
	}
}

func slicesAny(xs []string, f func(string) bool) bool {
	for _, x := range xs {
		if f(x) {
			return true
		}
	}
	return false
}

// isStd tells the standard packages named in the rules from corral's own.
func isStd(p string) bool {
	for _, s := range ioStd {
		if p == s {
			return true
		}
	}
	return false
}
