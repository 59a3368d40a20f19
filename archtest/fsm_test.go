package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// fsm holds no lock, queue or context of the leader: the leader's
// decisions are cluster's (cluster/decide.go), and fsm only schedules
// (Store.Schedule, a read of the state). Its sync primitives are the
// state's read/write lock and what WaitApplied needs, plus wait groups
// local to one call (parallel snapshot work); its one context is
// WaitApplied's.
func TestFSMHoldsNothingOfTheLeader(t *testing.T) {
	allowed := map[string]bool{
		"Store.mu sync.RWMutex":             true, // the state's read/write lock
		"Store.applied atomic.Uint64":       true, // AppliedIndex, read without the lock
		"Store.waitMu sync.Mutex":           true, // WaitApplied
		"Store.WaitApplied context.Context": true,
		"recordLoads.wg sync.WaitGroup":     true, // one restore's parallel loads
	}
	storeFields := map[string]bool{"mu": true, "st": true, "applied": true, "waitMu": true, "waitCh": true}
	var got []string
	err := filepath.WalkDir("../fsm", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := map[string]string{} // local name → watched import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != "sync" && p != "sync/atomic" && p != "context" {
				continue
			}
			name := filepath.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = filepath.Base(p)
		}
		uses := func(owner string, n ast.Node, local bool) {
			ast.Inspect(n, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok || names[id.Name] == "" {
					return true
				}
				use := owner + " " + names[id.Name] + "." + sel.Sel.Name
				if !allowed[use] && !(local && names[id.Name] == "sync" && sel.Sel.Name == "WaitGroup") {
					got = append(got, fset.Position(sel.Pos()).String()+": "+use)
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				owner := decl.Name.Name
				if decl.Recv != nil && len(decl.Recv.List) == 1 {
					owner = recvName(decl.Recv.List[0].Type) + "." + owner
				}
				uses(owner, decl.Type, false)
				if decl.Body != nil {
					uses(owner, decl.Body, true)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						uses("var", spec, false)
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						uses(ts.Name.Name, ts.Type, false)
						continue
					}
					for _, field := range st.Fields.List {
						for _, n := range field.Names {
							if ts.Name.Name == "Store" && filepath.Dir(path) == filepath.Clean("../fsm") && !storeFields[n.Name] {
								got = append(got, fset.Position(n.Pos()).String()+": Store."+n.Name+": fsm.Store holds the state, its lock and WaitApplied's, nothing of the leader")
							}
							uses(ts.Name.Name+"."+n.Name, field.Type, false)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	for _, g := range got {
		t.Errorf("%s: fsm holds no lock, queue or context of the leader (cluster/decide.go holds them)", g)
	}
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
