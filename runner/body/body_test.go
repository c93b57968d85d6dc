package body

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/scenario"
)

// compile is a chat stage over reference-sized synthetic prompts of
// uniform length (no server is asked: reference sizing does not
// calibrate).
func compile(t *testing.T, inputs int) *Stage {
	t.Helper()
	st := &scenario.Stage{
		Name: "s", Prompts: "p", API: "chat", Mode: "pinned", Concurrency: []int{4},
		OutputTokens: scenario.Length{Min: 8, Max: 64},
	}
	api := scenario.API("chat")
	if inputs > 0 {
		api, st.API, st.Mode, st.OutputTokens = "embeddings", "embeddings", "", scenario.Length{}
		st.InputsPerRequest = inputs
	}
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"p": {Synthetic: &scenario.Synthetic{
		InputTokens: scenario.Length{Min: 16, Max: 256}, Sizing: scenario.SizingReference,
	}}}, Stages: []*scenario.Stage{st}}
	plan.ApplyDefaults()
	proto, _ := protocol.Lookup(string(api))
	s, warns, err := Compile(t.Context(), plan.LoadPlan(st), proto, "m", synth.NewNonces(), NewCalibrator(nil, "m", zerolog.Nop()))
	if err != nil || len(warns) != 0 {
		t.Fatalf("Compile: %v %v", err, warns)
	}
	return s
}

var nonceTag = regexp.MustCompile(`\[[^\]]*\] `)

// TestBuildIsTheRequestsOwn: request seq of a level is the same body (but
// for its nonce) whichever order requests are built in, and different
// requests differ: which worker takes which request does not change what
// is sent.
func TestBuildIsTheRequestsOwn(t *testing.T) {
	s := compile(t, 0)
	build := func(level, seq int) (string, *Job) {
		j, err := s.Build(level, seq, false)
		if err != nil {
			t.Fatal(err)
		}
		return nonceTag.ReplaceAllString(string(j.Body), ""), j
	}
	first := map[int]string{}
	for seq := range 8 {
		first[seq], _ = build(1, seq)
	}
	for seq := 7; seq >= 0; seq-- {
		again, j := build(1, seq)
		if again != first[seq] {
			t.Fatalf("request %d built again differs:\n%s\n%s", seq, again, first[seq])
		}
		var b struct {
			MaxTokens int `json:"max_tokens"`
		}
		if json.Unmarshal(j.Body, &b) != nil || b.MaxTokens != j.MaxTokens || j.MaxTokens < 8 || j.MaxTokens > 64 {
			t.Fatalf("request %d: max_tokens %d in the body, %d in the job", seq, b.MaxTokens, j.MaxTokens)
		}
	}
	if first[0] == first[1] {
		t.Fatal("two requests of a level are the same")
	}
	if other, _ := build(2, 0); other == first[0] {
		t.Fatal("request 0 of two levels is the same")
	}
}

// TestBatchInputs: an embeddings request carries inputs_per_request texts,
// each led by a nonce of its own, and asks for as many results.
func TestBatchInputs(t *testing.T) {
	s := compile(t, 3)
	j, err := s.Build(0, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Input []string `json:"input"`
	}
	if err := json.Unmarshal(j.Body, &b); err != nil || len(b.Input) != 3 || j.Inputs != 3 || j.Results != 3 {
		t.Fatalf("inputs %d (%v), job %d inputs %d results", len(b.Input), err, j.Inputs, j.Results)
	}
	seen := map[string]bool{}
	for _, in := range b.Input {
		n := nonceTag.FindString(in)
		if n == "" || seen[n] {
			t.Fatalf("input %q has no nonce of its own", in)
		}
		seen[n] = true
	}
}

// TestBodiesFromTemplates: a synthetic stage's bodies, written from its
// templates, are what the API's Encode writes for the same request, byte
// for byte, for output bounds with a template of their own and, past the
// stage's fill of templates, encoded whole.
func TestBodiesFromTemplates(t *testing.T) {
	s := compile(t, 0)
	s.output = scenario.Length{Min: 1, Max: 4000} // more output bounds than templates
	for seq := range 1200 {
		j, err := s.Build(0, seq, seq%97 == 0)
		if err != nil {
			t.Fatal(err)
		}
		var b struct {
			Messages []protocol.Message `json:"messages"`
		}
		if err := json.Unmarshal(j.Body, &b); err != nil || len(b.Messages) != 1 {
			t.Fatalf("request %d: body %s: %v", seq, j.Body, err)
		}
		want, err := s.proto.Encode(protocol.Request{Model: "m", MaxTokens: j.MaxTokens, Temperature: s.temp, Pinned: s.pinned, Text: b.Messages[0].Content})
		if err != nil || string(j.Body) != string(want) {
			t.Fatalf("request %d: body\n%s\nEncode\n%s (%v)", seq, j.Body, want, err)
		}
	}
	made := 0
	for _, tm := range s.templates.m {
		if tm != nil {
			made++
		}
	}
	if made != maxTemplates {
		t.Errorf("%d templates made, want the bound, %d", made, maxTemplates)
	}
}
