package runner

import (
	"testing"

	"github.com/runnerbench/runner/scenario"
)

func weight(w float64) *float64 { return &w }

// A stage's requests spread over the simulator's adapters by weight (3:1,
// and a third of weight 0 that takes none): each record names the model
// the server received (its truth), each conversation keeps its model on
// every turn, and the level's point is followed by one point per model
// that takes requests, its requests those of that model.
func TestModelsWeighted(t *testing.T) {
	cfg := fastSim()
	cfg.LoRAModules = []string{"lora-a", "lora-b", "lora-c"}
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := stage(4, 4)
	st.Requests = scenario.PerLevel{Each: 40} // conversations of 2 turns: 80 requests
	st.Models = []*scenario.ModelWeight{{Name: "lora-a", Weight: weight(3)}, {Name: "lora-b"}, {Name: "lora-c", Weight: weight(0)}}
	res := runStage(t, e, chatPlan(16, 2), st)
	byModel := map[string]int{}
	conv := map[string]string{}
	for _, r := range col.measured() {
		if !r.OK {
			t.Fatalf("request %d failed: %s", r.Seq, r.Error)
		}
		if tr := truth(t, s, r.Nonce); tr.Model != r.Model {
			t.Errorf("request %d recorded model %q, the server received %q", r.Seq, r.Model, tr.Model)
		}
		if m, seen := conv[r.Nonce]; seen && m != r.Model {
			t.Errorf("conversation %s asked for %s, then %s", r.Nonce, m, r.Model)
		}
		conv[r.Nonce] = r.Model
		byModel[r.Model]++
	}
	if byModel["lora-c"] != 0 || byModel["lora-a"]+byModel["lora-b"] != 80 || byModel["lora-a"] < 40 || byModel["lora-a"] > 72 {
		t.Errorf("requests by model %v: want about three of lora-a to one of lora-b, none of lora-c", byModel)
	}
	labels := map[string]int{}
	for _, p := range res.Points {
		labels[p.Label()] = p.NRequests
	}
	want := map[string]int{"c=4": 80, "c=4 turn=1": 40, "c=4 turn=2": 40,
		"c=4 model=lora-a": byModel["lora-a"], "c=4 model=lora-b": byModel["lora-b"]}
	if _, ok := labels["c=4 model=lora-c"]; ok || len(labels) != len(want) {
		t.Errorf("points %v, want %d: a model of weight 0 has none", labels, len(want))
	}
	for l, n := range want {
		if got, ok := labels[l]; !ok || got != n {
			t.Errorf("point %s: %d requests (present %v), want %d; points %v", l, got, ok, n, labels)
		}
	}
}
