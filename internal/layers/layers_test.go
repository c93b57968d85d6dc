package layers

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/runnerbench/runner"

// ourImports maps every package of the module (its path inside it) to the
// packages of the module it imports, tests aside.
func ourImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Module", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	pkgs := map[string][]string{}
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		pkgs[name] = []string{}
		for _, imp := range p.Imports {
			if dep, isOurs := strings.CutPrefix(imp, module+"/"); isOurs {
				pkgs[name] = append(pkgs[name], dep)
			}
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list saw only %d packages", len(pkgs))
	}
	return pkgs
}

// TestImportsGoDown: no package imports one that stands above it in the
// pipeline, and every package has a place in it.
func TestImportsGoDown(t *testing.T) {
	layer := map[string]int{}
	for i, ps := range Layers {
		for _, p := range ps {
			layer[p] = i
		}
	}
	for name, deps := range ourImports(t) {
		own, ok := layer[name]
		if !ok {
			t.Errorf("package %s has no layer: add it to Layers (and to docs/architecture.md)", name)
			continue
		}
		for _, dep := range deps {
			if l, ok := layer[dep]; ok && l > own {
				t.Errorf("%s (layer %d) imports %s (layer %d), which stands above it", name, own, dep, l)
			}
		}
	}
}

// TestReadmeNamesEveryPackage: docs/architecture.md, the map of the code,
// names every package of Layers (as `path`) in its layout (the part before
// "Adding"), so a new package is placed in the map as well as in the layers.
func TestReadmeNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	arch, _, _ := strings.Cut(string(b), "\n## Adding")
	for _, ps := range Layers {
		for _, p := range ps {
			if !strings.Contains(arch, "`"+p+"`") {
				t.Errorf("docs/architecture.md does not name package %s (as `%s`)", p, p)
			}
		}
	}
}

var (
	mapRow    = regexp.MustCompile("^\\| (`[^|]*) \\| [^|]* \\| ([^|]*) \\|$")
	mapParens = regexp.MustCompile(`\([^)]*\)`)
	mapName   = regexp.MustCompile("`([a-z/]+(?:/\\.\\.\\.)?)`")
)

// mapNames are the package paths a cell of the map names, its
// parenthesised remarks aside.
func mapNames(cell string) []string {
	var out []string
	for _, m := range mapName.FindAllStringSubmatch(mapParens.ReplaceAllString(cell, ""), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestMapMayImport: the "may import" column of docs/architecture.md's
// package table says what each row's packages import, exactly: the
// packages it names ("path/..." every package below path) are those the
// row's packages import from outside the row; "each other only" and "nothing of ours" are held too ("everything"
// and "everything above" are TestImportsGoDown's to hold).
func TestMapMayImport(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	imports := ourImports(t)
	rows := 0
	for _, line := range strings.Split(string(b), "\n") {
		m := mapRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		pkgs, cell := mapNames(m[1]), strings.TrimSpace(m[2])
		var got []string
		for _, p := range pkgs {
			deps, ok := imports[p]
			if !ok {
				t.Errorf("docs/architecture.md names package %s, which is not in the module", p)
			}
			for _, d := range deps {
				if !slices.Contains(pkgs, d) && !slices.Contains(got, d) {
					got = append(got, d)
				}
			}
		}
		slices.Sort(got)
		var want []string
		switch {
		case strings.HasPrefix(cell, "everything"):
			continue
		case strings.HasPrefix(cell, "each other only"), cell == "nothing of ours":
		default:
			want = mapNames(cell)
			slices.Sort(want)
		}
		if !slices.Equal(got, expand(want, got)) {
			t.Errorf("docs/architecture.md: %s may import %q, and imports %s", strings.Join(pkgs, ", "), cell, quoted(got))
		}
	}
	if rows < 20 {
		t.Fatalf("docs/architecture.md: %d rows in the package table", rows)
	}
}

// expand is want with each "path/..." replaced by the packages of got
// below path (kept as written when none is, so the cell shows as wrong).
func expand(want, got []string) []string {
	var out []string
	for _, w := range want {
		prefix, wild := strings.CutSuffix(w, "/...")
		if !wild {
			out = append(out, w)
			continue
		}
		n := len(out)
		for _, g := range got {
			if strings.HasPrefix(g, prefix+"/") {
				out = append(out, g)
			}
		}
		if len(out) == n {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// quoted is a list of packages as the map writes them.
func quoted(ps []string) string {
	if len(ps) == 0 {
		return "nothing of ours"
	}
	return "`" + strings.Join(ps, "`, `") + "`"
}
