package layers

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.*)$`)
	mdFence   = regexp.MustCompile("(?s)```.*?```")
	notAnchor = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// anchors are the heading anchors of a Markdown file, as GitHub makes them
// (a repeated heading gets -1, -2, ...).
func anchors(text string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(text, ""), -1) {
		a := strings.ReplaceAll(notAnchor.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		if n, ok := seen[a]; ok {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n+1)
		} else {
			seen[a] = 0
		}
		out[a] = true
	}
	return out
}

// TestDocsLinks: every relative link in README.md and docs/ names a file that
// exists and, after #, a heading of that file, so moving a section cannot
// leave a reader at a dead link.
func TestDocsLinks(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(mdFence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, ":") {
				continue // an absolute URL
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			db, err := os.ReadFile(dest)
			if err != nil {
				if _, serr := os.Stat(dest); serr != nil {
					t.Errorf("%s links to %s: no such file", filepath.Base(f), target)
				}
				continue // a directory
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(string(db))[anchor] {
				t.Errorf("%s links to %s: no such heading", filepath.Base(f), target)
			}
		}
	}
}
