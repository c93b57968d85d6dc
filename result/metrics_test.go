package result

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestCatalogueCoversPoint holds the catalogue and Point to each other: every
// expr-tagged field has exactly one entry, in field order, with a unit where
// it is a number and a one-line meaning.
func TestCatalogueCoversPoint(t *testing.T) {
	var fields []string
	pt := reflect.TypeFor[Point]()
	for i := range pt.NumField() {
		if tag := pt.Field(i).Tag.Get("expr"); tag != "" && tag != "-" {
			fields = append(fields, tag)
		}
	}
	if got := MetricNames(); !slices.Equal(got, fields) {
		t.Fatalf("catalogue names\n%v\nPoint's expr fields\n%v", got, fields)
	}
	for _, m := range Metrics() {
		if m.Help == "" || m.Title == "" {
			t.Errorf("%s: needs a title and a one-line meaning", m.Name)
		}
		if m.Numeric() && m.Unit == "" && m.Name != "turn" {
			t.Errorf("%s: a number needs a unit", m.Name)
		}
		if strings.HasSuffix(m.Name, "_ms") && m.Unit != "ms" {
			t.Errorf("%s: unit %q, want ms", m.Name, m.Unit)
		}
		if m.Kind == KindLoad && m.Better != Neutral {
			t.Errorf("%s: a load metric describes the level and has no better direction", m.Name)
		}
	}
	for _, want := range []string{"concurrency", "input_tokens", "output_tokens", "n_requests", "completed", "failed",
		"duration_s", "output_tps_total", "output_tps_per_stream", "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms",
		"prefill_tps", "spec_acceptance_rate", "spec_draft_tokens", "natural_stop", "output_token_stdev", "error"} {
		m, ok := MetricNamed(want)
		if !ok || !m.Reference {
			t.Errorf("%s: the reference generator's metric must be in the catalogue, marked Reference", want)
		}
	}
	n := 0
	for _, m := range Metrics() {
		if m.Reference {
			n++
		}
	}
	if n != 18 {
		t.Errorf("%d metrics marked Reference, want the reference's 18", n)
	}
}

// TestLatencyFamiliesComplete: every latency family has the same statistics.
func TestLatencyFamiliesComplete(t *testing.T) {
	for _, fam := range []string{"ttft", "tpot", "itl", "e2e", "ttfat"} {
		for _, s := range allStats {
			if _, ok := MetricNamed(fam + "_" + s + "_ms"); !ok {
				t.Errorf("missing %s_%s_ms", fam, s)
			}
		}
	}
}

func TestMetricValueAndRaw(t *testing.T) {
	p := Point{Completed: 7, TTFTP95Ms: Ptr(12.5), ErrorsByKind: map[string]int{"timeout": 1}}
	m, _ := MetricNamed("ttft_p95_ms")
	if v, ok := m.Value(&p); !ok || v != 12.5 {
		t.Errorf("ttft_p95_ms = %v %v", v, ok)
	}
	m, _ = MetricNamed("ttft_p99_ms")
	if _, ok := m.Value(&p); ok {
		t.Error("a nil metric has no value")
	}
	if _, null := m.Raw(&p); !null {
		t.Error("a nil metric is null")
	}
	m, _ = MetricNamed("completed")
	if v, ok := m.Value(&p); !ok || v != 7 {
		t.Errorf("completed = %v %v", v, ok)
	}
	m, _ = MetricNamed("server_counters")
	if _, null := m.Raw(&p); !null {
		t.Error("no server counters is a null metric")
	}
	m, _ = MetricNamed("errors_by_kind")
	if v, null := m.Raw(&p); null || v.(map[string]int)["timeout"] != 1 {
		t.Errorf("errors_by_kind = %v %v", v, null)
	}
	if m.Numeric() {
		t.Error("a map is not numeric")
	}
	g, _ := MetricNamed("goodput")
	if g.Header() != "Goodput (%)" || !g.Percent() {
		t.Errorf("goodput header %q", g.Header())
	}
	tt, _ := MetricNamed("ttft_p95_ms")
	if tt.Header() != "TTFT p95 (ms)" {
		t.Errorf("ttft header %q", tt.Header())
	}
}
