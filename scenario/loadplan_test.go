package scenario

import (
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// TestLoadPlan: a stage compiles into the values the engine reads, with
// its load kind, resolved defaults and prompt sets.
func TestLoadPlan(t *testing.T) {
	temp, seed, warm := 0.3, int64(9), 2
	p := &Plan{Prompts: map[string]*PromptSet{
		"syn":   {Synthetic: &Synthetic{InputTokens: Length{Fixed: 5}}},
		"file":  {Loaded: []Prompt{{Text: "a"}}},
		"trace": {Trace: &Trace{Prompts: "file"}},
	}}
	cases := []struct {
		st   Stage
		kind result.LoadKind
	}{
		{Stage{Prompts: "syn", Concurrency: []int{1, 2}}, result.LoadConcurrency},
		{Stage{Prompts: "syn", Rate: []float64{3}}, result.LoadRate},
		{Stage{Prompts: "syn", Search: &Search{Over: OverRate}}, result.LoadRate},
		{Stage{Prompts: "syn", Search: &Search{Over: OverConcurrency}}, result.LoadConcurrency},
		{Stage{Prompts: "trace", Replay: &Replay{Speedup: 2, Start: Duration(time.Second)}}, result.LoadTrace},
	}
	for i, c := range cases {
		st := c.st
		st.Name, st.Mode, st.Temperature, st.Seed, st.Warmup = "s", ModePinned, &temp, &seed, &warm
		st.Duration = Duration(3 * time.Second)
		lp := p.LoadPlan(&st)
		if lp.Kind != c.kind {
			t.Errorf("case %d: kind %s, want %s", i, lp.Kind, c.kind)
		}
		if !lp.Pinned || lp.Temperature != temp || lp.Seed != seed || lp.Warmup != warm || lp.Duration != 3*time.Second || lp.Prompts != p.Prompts[st.Prompts] {
			t.Errorf("case %d: %+v", i, lp)
		}
		if st.Replay != nil && (lp.ReplaySpeedup != 2 || lp.ReplayStart != time.Second || lp.TracePrompts != p.Prompts["file"]) {
			t.Errorf("case %d: replay %+v", i, lp)
		}
	}
}
