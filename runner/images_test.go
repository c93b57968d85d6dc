package runner

import (
	"bytes"
	"encoding/base64"
	"image"
	"strings"
	"testing"

	"github.com/runnerbench/runner/scenario"
)

// imageParts is the data URLs of a captured chat body's last message.
func imageParts(t *testing.T, c captured) (text string, urls []string) {
	t.Helper()
	ms, _ := c.body["messages"].([]any)
	if len(ms) == 0 {
		t.Fatalf("no messages in %v", c.body)
	}
	last, _ := ms[len(ms)-1].(map[string]any)
	parts, ok := last["content"].([]any)
	if !ok {
		t.Fatalf("content is not a list of parts: %v", last["content"])
	}
	for _, p := range parts {
		m := p.(map[string]any)
		switch m["type"] {
		case "text":
			text, _ = m["text"].(string)
		case "image_url":
			u, _ := m["image_url"].(map[string]any)["url"].(string)
			urls = append(urls, u)
		}
	}
	return text, urls
}

// TestSyntheticImages: a prompt set's images go out as data URLs in the
// chat content, of the size and format asked, different for every request
// (the same on a rerun of the seed), and the simulator's usage counts their
// tokens; the record counts their bytes.
func TestSyntheticImages(t *testing.T) {
	for _, format := range []scenario.ImageFormat{scenario.ImagePNG, scenario.ImageJPEG} {
		t.Run(string(format), func(t *testing.T) {
			s := startSim(t, fastSim())
			sp := startSpy(t, s)
			e, col := newEngine(t, sp.URL+"/v1", nil)
			plan := synthPlan(64, "")
			plan.Prompts["p"].Images = &scenario.Images{Count: 2, Width: 100, Height: 60, Format: format}
			runStage(t, e, plan, stage(4, 2))
			seen := map[string]bool{}
			var bodies []captured
			for _, c := range sp.requests("/v1/chat/completions") {
				if _, ok := c.body["messages"].([]any)[0].(map[string]any)["content"].([]any); ok {
					bodies = append(bodies, c)
				}
			}
			if len(bodies) != 2 {
				t.Fatalf("%d requests with images, want the 2 measured ones (warm-ups send none)", len(bodies))
			}
			for _, c := range bodies {
				text, urls := imageParts(t, c)
				if !strings.HasPrefix(text, "[") || len(urls) != 2 {
					t.Fatalf("text %.20q, %d images", text, len(urls))
				}
				for _, u := range urls {
					head, data, _ := strings.Cut(u, ",")
					if head != "data:image/"+string(format)+";base64" || seen[data] {
						t.Errorf("image %.40q: head %q, seen before %v", u, head, seen[data])
					}
					seen[data] = true
					raw, _ := base64.StdEncoding.DecodeString(data)
					cfg, kind, err := image.DecodeConfig(bytes.NewReader(raw))
					if err != nil || kind != string(format) || cfg.Width != 100 || cfg.Height != 60 {
						t.Errorf("image %v %s %dx%d", err, kind, cfg.Width, cfg.Height)
					}
				}
			}
			// Per image: ceil(100/28)·ceil(60/28) + 2 = 4·3 + 2 = 14 tokens.
			for _, r := range col.measured() {
				tr := truth(t, s, r.Nonce)
				if !r.OK || tr.ImageTokens != 28 || r.InputTokens != tr.PromptTokens || r.ImageBytes <= 0 {
					t.Errorf("ok %v: image tokens %d (want 28), input %d of %d, image bytes %d", r.OK, tr.ImageTokens, r.InputTokens, tr.PromptTokens, r.ImageBytes)
				}
			}
		})
	}
}

// TestImagesRepeat: repeat: true sends the same images with every request.
func TestImagesRepeat(t *testing.T) {
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	e, _ := newEngine(t, sp.URL+"/v1", nil)
	plan := synthPlan(32, "")
	plan.Prompts["p"].Images = &scenario.Images{Count: 1, Width: 16, Height: 16, Format: scenario.ImagePNG, Repeat: true}
	runStage(t, e, plan, stage(2, 3))
	var first string
	n := 0
	for _, c := range sp.requests("/v1/chat/completions") {
		if _, ok := c.body["messages"].([]any)[0].(map[string]any)["content"].([]any); !ok {
			continue
		}
		_, urls := imageParts(t, c)
		if n == 0 {
			first = urls[0]
		} else if urls[0] != first {
			t.Errorf("request %d sent another image with repeat: true", n)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d requests with images", n)
	}
}

// TestResponsesImages: on the Responses API the images are input_image
// parts of the input message, and the simulator counts their tokens.
func TestResponsesImages(t *testing.T) {
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	plan := synthPlan(64, "")
	plan.Prompts["p"].Images = &scenario.Images{Count: 1, Width: 56, Height: 56, Format: scenario.ImagePNG}
	st := stage(4, 2)
	st.API = "responses"
	runStage(t, e, plan, st)
	n := 0
	for _, c := range sp.requests("/v1/responses") {
		in, ok := c.body["input"].([]any)
		if !ok {
			continue // a warm-up: a plain input string
		}
		parts, _ := in[0].(map[string]any)["content"].([]any)
		if len(parts) != 2 || parts[1].(map[string]any)["type"] != "input_image" || !strings.HasPrefix(parts[1].(map[string]any)["image_url"].(string), "data:image/png;base64,") {
			t.Errorf("input %v", in)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d requests with images", n)
	}
	// 56×56 is 2·2 patches + 2 frame tokens.
	for _, r := range col.measured() {
		if tr := truth(t, s, r.Nonce); !r.OK || tr.ImageTokens != 6 || r.InputTokens != tr.PromptTokens {
			t.Errorf("ok %v (%s): image tokens %d, input %d of %d", r.OK, r.Error, tr.ImageTokens, r.InputTokens, tr.PromptTokens)
		}
	}
}
