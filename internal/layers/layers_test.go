package layers

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestImportsGoDown: no package imports one that stands above it in the
// pipeline, and every package has a place in it.
func TestImportsGoDown(t *testing.T) {
	layer := map[string]int{}
	for i, ps := range Layers {
		for _, p := range ps {
			layer[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Module", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	const module = "github.com/runnerbench/runner"
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		own, ok := layer[name]
		if !ok {
			t.Errorf("package %s has no layer: add it to Layers (and to docs/architecture.md)", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, isOurs := strings.CutPrefix(imp, module+"/")
			if !isOurs {
				continue
			}
			if l, ok := layer[dep]; ok && l > own {
				t.Errorf("%s (layer %d) imports %s (layer %d), which stands above it", name, own, dep, l)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list saw only %d packages", n)
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
