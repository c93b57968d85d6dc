package scenario

import (
	"strings"
	"testing"
)

// TestPlanLabels: labels load as strings (a YAML number or boolean as its
// text, ${VAR} expanded), markup kept as it is for the outputs to escape.
func TestPlanLabels(t *testing.T) {
	src := strings.Replace(minimal, "name: t\n", "name: t\nlabels:\n  engine: vllm\n  gpus: 8\n  spec: true\n  commit: ${SHA}\n  note: '<b>bold</b> & \"quoted\"'\n", 1)
	p := mustLoad(t, src, env("SHA", "0123abc"))
	want := map[string]string{"engine": "vllm", "gpus": "8", "spec": "true", "commit": "0123abc", "note": `<b>bold</b> & "quoted"`}
	if len(p.Labels) != len(want) {
		t.Fatalf("labels %v, want %v", p.Labels, want)
	}
	for k, v := range want {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	var many strings.Builder
	many.WriteString("labels:\n")
	for i := range 65 {
		many.WriteString("  k" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": v\n")
	}
	_, err := load(t, strings.Replace(minimal, "name: t\n", "name: t\n"+many.String(), 1), env())
	if err == nil || !strings.Contains(err.Error(), "65 labels, more than 64") {
		t.Errorf("65 labels: %v", err)
	}
}
