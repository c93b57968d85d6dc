package html

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/runnerbench/runner/result"
)

// TestSearchOnThePage: a capacity search's stage shows a row per target,
// the probes in the order they ran with each found capacity across them,
// and per target what it reads against load with the bracket marked; the
// load curves take the probes in load order.
func TestSearchOnThePage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r result.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, render(t, &r, nil))
	sr := r.Stages[0].Search
	for _, tg := range sr.Targets {
		rows := findAll(doc, "tr", hasAttr("data-target", tg.Name))
		if len(rows) != 1 || attrOr(rows[0], "data-confident") != strconv.FormatBool(tg.Confident) {
			t.Fatalf("target %s: %d rows", tg.Name, len(rows))
		}
		cells := text(rows[0])
		if tg.Capacity != nil && !strings.Contains(cells, "c="+fmtNum(*tg.Capacity)) || tg.Capacity == nil && !strings.Contains(cells, "—") {
			t.Errorf("target %s row: %q", tg.Name, cells)
		}
	}

	probes := chartNode(t, doc, "stage-capacity-probes")
	ys, tips := markers(seriesGroup(t, probes, "probe load"))
	if len(ys) != sr.Probes {
		t.Fatalf("%d probe markers, want %d", len(ys), sr.Probes)
	}
	for i, p := range r.Stages[0].Points {
		if ys[i] != strconv.Itoa(p.Concurrency) || !strings.HasPrefix(tips[i], p.Label()+" ·") {
			t.Errorf("probe marker %d: y %s tip %q, want %s", i, ys[i], tips[i], p.Label())
		}
	}
	// Found and above-max targets have a capacity line; the others none.
	seriesGroup(t, probes, "interactive capacity c=6")
	seriesGroup(t, probes, "roomy capacity c=16")
	if n := len(findAll(probes, "g", hasAttr("data-series", "mid capacity c=8"))); n != 0 {
		t.Error("an unresolved target drawn with a capacity")
	}

	// interactive reads TPOT p50: its curve is the mean per load, in load
	// order, with c=6 (passed) and c=7 (failed) marked.
	tc := chartNode(t, doc, "stage-capacity-target-0-0")
	ys, tips = markers(seriesGroup(t, tc, "tpot_p50_ms"))
	if strings.Join(ys, " ") != "2 2.42 3.36 4.385 4.755 5.37 7.195" || !strings.Contains(tips[5], "(mean of 2)") {
		t.Errorf("target curve %v %q", ys, tips)
	}
	var marks []string
	for _, g := range findAll(tc, "g", func(n *xhtml.Node) bool { _, ok := attr(n, "data-mark"); return ok }) {
		marks = append(marks, attrOr(g, "data-mark")+"@"+attrOr(g, "data-x"))
	}
	if strings.Join(marks, " ") != "passed c=6@6 failed c=7@7" {
		t.Errorf("marks %q", marks)
	}

	// The throughput curve runs in load order, not probe order.
	ys, _ = markers(seriesGroup(t, chartNode(t, doc, "stage-capacity-throughput"), "output tok/s"))
	if strings.Join(ys, " ") != "500 500 1000 2000 3000 3000 3500 3500 3500 3500 4000 4000 8000 8000" {
		t.Errorf("throughput in load order: %v", ys)
	}
}
