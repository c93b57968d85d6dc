package result

import (
	"flag"
	"strings"
	"testing"

	"github.com/runnerbench/runner/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite docs/metrics.md's metric table from the catalogue")

// docs/metrics.md's table of every metric sits between these lines.
const (
	tableBegin = "<!-- metrics:begin (generated from result.Metrics(): go test ./result -run TestReadmeMetricTable -update) -->"
	tableEnd   = "<!-- metrics:end -->"
)

// metricTable renders the catalogue as docs/metrics.md's Markdown table.
func metricTable() string {
	var b strings.Builder
	b.WriteString("| metric | unit | kind | better | meaning | reference |\n| --- | --- | --- | --- | --- | --- |\n")
	cell := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ")
	for _, m := range Metrics() {
		unit := m.Unit
		switch unit {
		case "":
			unit = "–"
		case "share":
			unit = "share (0–1)"
		}
		better := m.Better.String()
		if better == "neutral" {
			better = "–"
		}
		ref := ""
		if m.Reference {
			ref = "✓"
		}
		b.WriteString("| `" + m.Name + "` | " + unit + " | " + m.Kind.String() + " | " + better + " | " + cell.Replace(m.Help) + " | " + ref + " |\n")
	}
	return b.String()
}

// TestReadmeMetricTable holds docs/metrics.md's table of every metric to the
// catalogue: a metric added, renamed or re-described without the docs
// following fails here; -update rewrites the table.
func TestReadmeMetricTable(t *testing.T) {
	table := testutil.GeneratedSection(t, "../docs/metrics.md", tableBegin, tableEnd, metricTable(), *update,
		"go test ./result -run TestReadmeMetricTable -update")
	for _, m := range Metrics() {
		if !strings.Contains(table, "| `"+m.Name+"` |") {
			t.Errorf("docs/metrics.md's metric table lacks %s", m.Name)
		}
	}
}
