package export

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/result"
)

var update = flag.Bool("update", false, "rewrite docs/export.md's table of exported names")

const (
	tableBegin = "<!-- export-names:begin (generated: go test ./export -run TestReadmeExportTable -update) -->"
	tableEnd   = "<!-- export-names:end -->"
)

var typeNames = map[typ]string{gauge: "gauge", counter: "counter", summary: "summary", histo: "histogram"}

// exportTable renders every exported name: the running figures, the
// semantic conventions' histograms, then each catalogue metric's.
func exportTable() string {
	var b strings.Builder
	row := func(from string, n name, note string) {
		otel := "`" + n.OTel() + "`"
		if n.unit.otel != "" {
			otel += " (" + n.unit.otel + ")"
		}
		prom := "`" + n.Prom() + "`"
		if n.typ == histo {
			prom = "`" + strings.ReplaceAll(n.base, ".", "_") + n.unit.prom + "_bucket` (via OTLP only)"
		}
		b.WriteString("| " + from + " | " + prom + " | " + otel + " | " + typeNames[n.typ] + note + " |\n")
	}
	b.WriteString("| from | Prometheus (remote write) | OTLP (unit) | type |\n| --- | --- | --- | --- |\n")
	for _, l := range []struct {
		from string
		n    name
		note string
	}{
		{"live: requests sent", liveStarted, ""}, {"live: successes", liveCompleted, ""},
		{"live: failures", liveFailed, ", by `kind`"}, {"live: output tokens of successes", liveOutTok, ""},
		{"live: in flight", liveInFlight, ""}, {"live: TTFT so far", liveTTFT, " (remote write only)"},
		{"live: ITL so far", liveITL, " (remote write only)"}, {"live: E2E so far", liveE2E, " (remote write only)"},
		{"live: dispatch lag so far", liveLag, ""},
		{"live and final: TTFT", semTTFT, ""}, {"live and final: inter-token gaps", semITL, ""},
		{"live and final: E2E", semE2E, ""}, {"live and final: output tokens per success", semTokens, ", `gen_ai.token.type=output`"},
	} {
		row(l.from, l.n, l.note)
	}
	for _, m := range result.Metrics() {
		n, ok := pointNameOf(&m)
		if !ok {
			b.WriteString("| `" + m.Name + "` | – | – | not exported: " + notExported[m.Name] + " |\n")
			continue
		}
		note := ""
		switch {
		case n.scale == 0.001:
			note = ", ms → s"
		case n.scale == 0.01:
			note = ", % → ratio"
		case m.Name == "errors_by_kind":
			note = ", by `kind`"
		case m.Name == "natural_stop" || m.Name == "client_bottleneck" || m.Name == "sim_behind":
			note = ", 0 or 1"
		}
		row("`"+m.Name+"`", n.name, note)
	}
	return b.String()
}

// TestReadmeExportTable holds docs/export.md's table of exported names to the
// code: a name added or changed without the docs following fails here.
func TestReadmeExportTable(t *testing.T) {
	testutil.GeneratedSection(t, "../docs/export.md", tableBegin, tableEnd, exportTable(), *update,
		"go test ./export -run TestReadmeExportTable -update")
}

// TestGrafanaPanel: docs/ci.md's Grafana panel is JSON and queries the name
// TTFT p95 is exported under.
func TestGrafanaPanel(t *testing.T) {
	b, err := os.ReadFile("../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "```json\n{\n  \"type\": \"timeseries\"")
	if i < 0 {
		t.Fatal("docs/ci.md has no Grafana panel")
	}
	body := doc[i+len("```json\n"):]
	body = body[:strings.Index(body, "```")]
	var panel struct {
		Targets []struct{ Expr string } `json:"targets"`
	}
	if err := json.Unmarshal([]byte(body), &panel); err != nil {
		t.Fatalf("the panel is not JSON: %v", err)
	}
	m, _ := result.MetricNamed("ttft_p95_ms")
	n, _ := pointNameOf(m)
	if len(panel.Targets) != 1 || !strings.Contains(panel.Targets[0].Expr, n.Prom()+"{") {
		t.Errorf("the panel does not query %s: %+v", n.Prom(), panel.Targets)
	}
}
