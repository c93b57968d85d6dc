package result

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// TestLoadKindsListsEveryKind: LoadKinds, the list the report schema's enum
// is generated from, holds every LoadKind constant load.go declares, in
// their order.
func TestLoadKindsListsEveryKind(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "load.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []LoadKind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "LoadKind" {
				continue
			}
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				v, err := strconv.Unquote(lit.Value)
				if !ok || err != nil {
					t.Fatalf("load.go: %s is not a string literal", n.Name)
				}
				consts = append(consts, LoadKind(v))
			}
		}
	}
	if len(consts) < 3 || !slices.Equal(consts, LoadKinds) {
		t.Errorf("load.go declares the kinds %v; LoadKinds lists %v", consts, LoadKinds)
	}
}
