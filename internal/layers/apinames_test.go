package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runnerbench/runner/protocol"
)

// TestNoAPIListsInComments: no comment of the code lists API names (two or
// more of the registry's, joined by a comma, "or" or "and"): such a list is
// a copy of protocol.Registry that a new API leaves stale. Say the property
// instead (an API that answers whole, one that scores documents: the
// protocol's optional interfaces), or let the code generate the list. The
// simulator, which serves each API by hand, may name what it serves.
func TestNoAPIListsInComments(t *testing.T) {
	name := "(?:" + strings.Join(protocol.Names(), "|") + ")"
	list := regexp.MustCompile(`\b` + name + `\b(?:'s)?(?:,?\s+(?:or|and)\s+|,\s+)\b` + name + `\b`)
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "sim" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		n++
		for _, g := range f.Comments {
			if m := list.FindString(g.Text()); m != "" {
				t.Errorf("%s: a comment lists API names (%q): say the property, or generate the list", fset.Position(g.Pos()), m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read only %d Go files", n)
	}
}
