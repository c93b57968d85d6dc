package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/gpuexporters"
	"github.com/runnerbench/runner/result"
)

// TestTelemetryOnThePage: a run without slices against the built-in
// simulator (which exposes requests running and waiting and no KV-cache
// gauge) with a DCGM exporter as an extra telemetry target. report.html
// draws the endpoint's requests running and waiting over time, each with a
// point for every successful read of it; says the endpoint exposes no
// KV-cache gauge instead of drawing one; lists the target with the reads
// report.json counts; and draws the target's GPU power and gauges over
// time. `runner report` draws the same page from the records.
func TestTelemetryOnThePage(t *testing.T) {
	dcgm, err := gpuexporters.Start(gpuexporters.DCGM, gpuexporters.Options{Collect: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer dcgm.Close()
	dir := t.TempDir()
	plan := filepath.Join(dir, "tel.yaml")
	src := fmt.Sprintf(`version: 1
name: tel
telemetry:
  interval: 200ms
  timeout: 2s
  targets:
    - {name: gpus, url: %q}
endpoints:
  sim:
    simulator: {ttft_ms: 30, itl_ms: 4, max_num_seqs: 2}
prompts:
  p: {synthetic: {input_tokens: 32}}
stages:
  - {name: s, endpoint: sim, prompts: p, output_tokens: 60, concurrency: [1, 4], requests: 16, seed: 7}
`, dcgm.URL)
	if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	if code, _, errs := runCLI(t, nil, plan, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	var rep result.Report
	b, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	reads := map[string]int{}
	lines, _ := os.ReadFile(filepath.Join(out, "telemetry.jsonl"))
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var r result.TelemetryScrape
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Error == "" && (r.Endpoint || r.Target == "gpus") {
			reads[fmt.Sprint(r.Endpoint)]++
		}
	}
	s := string(page)
	chart := func(title string) string {
		i := strings.Index(s, "<figcaption>"+title+"</figcaption>")
		if i < 0 {
			t.Errorf("no chart %q", title)
			return ""
		}
		return s[i : i+strings.Index(s[i:], "</figure>")]
	}
	for _, title := range []string{"server requests running over time (endpoint sim)", "server requests waiting over time (endpoint sim)"} {
		if f := chart(title); f != "" {
			if n := strings.Count(f, "<circle"); n != reads["true"] {
				t.Errorf("%s: %d points for %d successful reads of the endpoint", title, n, reads["true"])
			}
			if !strings.Contains(f, `data-mark="c=1"`) || !strings.Contains(f, `data-mark="c=4"`) {
				t.Errorf("%s: the levels' first reads are not marked", title)
			}
		}
	}
	if strings.Contains(s, "KV-cache usage (0–1) over time") || !strings.Contains(s, "KV-cache usage: endpoint sim exposes none of vllm:kv_cache_usage_perc") {
		t.Error("a KV-cache chart is drawn for a server without the gauge, or the page does not say why there is none")
	}
	if len(rep.Telemetry) != 1 || rep.Telemetry[0].Reads < 3 {
		t.Fatalf("report.json's telemetry: %+v", rep.Telemetry)
	}
	row := regexp.MustCompile(`<tr data-target="gpus"[^>]*><td><b>gpus</b></td><td class="mono">[^<]*</td><td class="num">(\d+)</td>`).FindStringSubmatch(s)
	if row == nil || row[1] != fmt.Sprint(rep.Telemetry[0].Reads) {
		t.Errorf("the target's row %v, want its %d reads", row, rep.Telemetry[0].Reads)
	}
	if f := chart("GPU power (W, all GPUs) over time (telemetry target gpus)"); f != "" && strings.Count(f, "<circle") != reads["false"] {
		t.Errorf("GPU power: %d points for %d successful reads of the target", strings.Count(f, "<circle"), reads["false"])
	}
	if !strings.Contains(s, "over time (telemetry target gpus)</figcaption>") || !strings.Contains(s, "<figcaption>DCGM_FI_DEV_GPU_UTIL over time (telemetry target gpus)") {
		t.Error("the target's gauges are not drawn")
	}
	again := filepath.Join(dir, "again")
	if code, _, errs := runCLI(t, nil, "report", out, "--out", again, "--report", "html"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(again, "report.html")); string(b) != s {
		t.Error("runner report drew another page from the same records")
	}
}
