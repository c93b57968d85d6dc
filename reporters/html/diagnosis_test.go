package html

import (
	"slices"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/result"
)

// TestDiagnosisSection: a stage's diagnosis stands at the top of its section,
// before the levels: its headline and every sentence as the report says
// them, and beside them the engine's running and waiting requests and its
// KV-cache usage against load, with the knee and saturation marked; a stage
// whose endpoint gave no gauges says so instead of drawing empty charts. A
// stage without a diagnosis has no such block.
func TestDiagnosisSection(t *testing.T) {
	r := loadReport(t, "report.json")
	pts := r.Stages[0].Points // c=1, 4, 16, 64 against 16 slots
	for i, g := range [][3]float64{{1, 0, 0.05}, {4, 0, 0.2}, {16, 0, 0.8}, {16, 47, 0.85}} {
		pts[i].ServerRunningMax, pts[i].ServerWaitingP95, pts[i].KVCacheUsageMax = result.Ptr(g[0]), result.Ptr(g[1]), result.Ptr(g[2])
	}
	for i := range r.Stages[:2] {
		r.Stages[i].Diagnosis = diagnosis.Diagnose(&r.Stages[i], false)
	}
	single := r.Stages[0]
	single.Name, single.Points, single.Diagnosis = "single", single.Points[:1], nil
	r.Stages = append(r.Stages, single)
	doc := parse(t, render(t, r, nil))
	sections := findAll(doc, "section", func(n *xhtml.Node) bool { v, _ := attr(n, "class"); return v == "stage" })
	if len(sections) != 3 {
		t.Fatalf("%d stage sections", len(sections))
	}
	for i, sec := range sections[:2] {
		d := r.Stages[i].Diagnosis
		divs := findAll(sec, "div", hasAttr("data-cause", d.Cause))
		if len(divs) != 1 {
			t.Fatalf("stage %d: %d diagnosis blocks for cause %s", i, len(divs), d.Cause)
		}
		got := text(divs[0])
		for _, s := range append([]string{diagnosis.Headline(d)}, d.Text...) {
			if !strings.Contains(got, s) {
				t.Errorf("stage %d: the block does not say %q", i, s)
			}
		}
		all := text(sec)
		if strings.Index(all, "Diagnosis") > strings.Index(all, "Levels") {
			t.Errorf("stage %d: the diagnosis comes after the levels", i)
		}
	}
	d := r.Stages[0].Diagnosis
	svg := chartNode(t, sections[0], "stage-chat-sweep-running")
	for _, name := range []string{"running max", "waiting p95"} {
		ys, _ := markers(seriesGroup(t, svg, name))
		if len(ys) != 4 {
			t.Errorf("series %s: %d markers, want one a level", name, len(ys))
		}
	}
	marks := findAll(svg, "g", func(n *xhtml.Node) bool { _, ok := attr(n, "data-mark"); return ok })
	var labels []string
	for _, m := range marks {
		v, _ := attr(m, "data-mark")
		labels = append(labels, v)
	}
	if want := "knee " + d.Knee.Level; !slices.Contains(labels, want) {
		t.Errorf("marks %v lack %q", labels, want)
	}
	kv := chartNode(t, sections[0], "stage-chat-sweep-kv")
	if ys, _ := markers(seriesGroup(t, kv, "KV usage max")); !slices.Equal(ys, []string{"5", "20", "80", "85"}) {
		t.Errorf("KV usage markers %v, want the shares as percentages", ys)
	}
	notes := text(sections[1])
	if !strings.Contains(notes, "The endpoint gave no running or waiting gauge") || !strings.Contains(notes, "The endpoint gave no KV-cache usage gauge") {
		t.Errorf("the stage without gauges does not say so")
	}
	if n := len(findAll(sections[2], "div", func(n *xhtml.Node) bool { _, ok := attr(n, "data-cause"); return ok })); n != 0 {
		t.Errorf("a stage without a diagnosis has %d blocks", n)
	}
}
