package result

import (
	"strings"
	"testing"
)

func TestLabelKeys(t *testing.T) {
	for _, k := range []string{"engine", "gpus", "a", "GPU_count", "k8s.node-pool", strings.Repeat("k", MaxLabelKey)} {
		if err := CheckLabelKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for _, k := range []string{"", "9lives", "_x", "a b", "a=b", "a/b", "é", "<script>", "a\n", strings.Repeat("k", MaxLabelKey+1)} {
		if err := CheckLabelKey(k); err == nil {
			t.Errorf("%q: accepted", k)
		}
	}
}

func TestLabelValues(t *testing.T) {
	for _, v := range []string{"", "vllm", `<b onmouseover="x">&amp;</b>`, "| pipe | md |", "ünïcode ✓", strings.Repeat("v", MaxLabelValue)} {
		if err := CheckLabelValue("k", v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"two\nlines", "tab\there", "\x1b[31mred", "bidi\u202eevil", "\xff\xfe", strings.Repeat("v", MaxLabelValue+1)} {
		if err := CheckLabelValue("k", v); err == nil {
			t.Errorf("%q: accepted", v)
		}
	}
}

func TestLabelsWithAndParse(t *testing.T) {
	plan := Labels{"engine": "vllm", "gpus": "8"}
	k, v, err := ParseLabel("engine=sglang=0.4")
	if err != nil || k != "engine" || v != "sglang=0.4" {
		t.Fatalf("ParseLabel: %q %q %v", k, v, err)
	}
	got := plan.With(Labels{k: v, "commit": "abc"})
	if got.String() != "commit=abc engine=sglang=0.4 gpus=8" {
		t.Errorf("With: %s", got)
	}
	if plan["engine"] != "vllm" {
		t.Error("With modified its receiver")
	}
	if Labels(nil).With(nil) != nil {
		t.Error("With of nothing is not nil")
	}
	for _, bad := range []string{"novalue", "=x", "bad key=x", "k=a\nb"} {
		if _, _, err := ParseLabel(bad); err == nil {
			t.Errorf("ParseLabel(%q) accepted", bad)
		}
	}
	many := Labels{}
	for i := range MaxLabels + 1 {
		many["k"+itoa(i)] = "v"
	}
	if err := many.Check(); err == nil || !strings.Contains(err.Error(), "more than 64") {
		t.Errorf("%d labels: %v", len(many), err)
	}
	if err := got.Check(); err != nil {
		t.Error(err)
	}
}

func TestReportFacts(t *testing.T) {
	r := &Report{RunnerVersion: "v1", Plan: Plan{Name: "p", Hash: "h"}, Host: "box", Shards: 2}
	f := r.Facts()
	if f.RunnerVersion != "v1" || f.PlanName != "p" || f.PlanHash != "h" || f.Host != "box" || f.Shards != 2 {
		t.Errorf("facts %+v", f)
	}
}
