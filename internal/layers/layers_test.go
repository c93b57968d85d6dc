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
			t.Errorf("package %s has no layer: add it to Layers (and to the README's Architecture)", name)
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

// TestReadmeNamesEveryPackage: the README's Architecture section, the map of
// the code, names every package of Layers (as `path`), so a new package is
// placed in the map as well as in the layers.
func TestReadmeNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "\n## Architecture\n")
	if i < 0 {
		t.Fatal("README.md has no Architecture section")
	}
	arch := readme[i+1:]
	if j := strings.Index(arch[3:], "\n## "); j >= 0 {
		arch = arch[:j+3]
	}
	for _, ps := range Layers {
		for _, p := range ps {
			if !strings.Contains(arch, "`"+p+"`") {
				t.Errorf("README.md's Architecture section does not name package %s (as `%s`)", p, p)
			}
		}
	}
}
