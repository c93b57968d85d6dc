package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/result"
)

// startPrometheus builds (once; cached) and starts a real Prometheus on
// loopback with its remote-write and OTLP receivers on.
func startPrometheus(t *testing.T) *engines.Engine {
	t.Helper()
	root, err := engines.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := engines.TestContext(t)
	defer cancel()
	t0 := time.Now()
	bin, err := engines.BuildPrometheus(ctx, root)
	if err != nil {
		engines.Unavailable(t, err)
	}
	t.Logf("prometheus built (or found up to date) in %v", time.Since(t0).Round(time.Millisecond))
	p, err := engines.StartPrometheus(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s promSample) float(t *testing.T) float64 {
	t.Helper()
	var v float64
	if _, err := fmt.Sscan(s.Value[1].(string), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// query asks Prometheus's HTTP API for q at the present.
func query(t *testing.T, origin, q string) []promSample {
	t.Helper()
	resp, err := http.Get(origin + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, body.Error)
	}
	return body.Data.Result
}

const exportPlan = `version: 1
name: exported
endpoints:
  sim:
    simulator: {ttft_ms: 5, itl_ms: 1, max_num_seqs: 64}
prompts:
  p: {synthetic: {input_tokens: 16}}
export:
  - to: otlp
    url: %s
    headers: {X-Token: "${EXPORT_TOKEN}"}
stages:
  - name: sweep
    endpoint: sim
    prompts: p
    output_tokens: 16
    concurrency: [2, 4]
    requests: [40, 80]
`

// TestExportToPrometheus runs a plan that exports to a real Prometheus by
// remote write (--export) and by OTLP (the plan's export block, with a
// credential the job allows for the receiver's host), then asks
// Prometheus's query API for each level's final point and running figures
// and holds them to the report; then runner export sends the run's final
// points again from its records, under the same run id.
func TestExportToPrometheus(t *testing.T) {
	prom := startPrometheus(t)
	plan := writePlan(t, fmt.Sprintf(exportPlan, prom.Origin+"/api/v1/otlp"))
	out := filepath.Join(t.TempDir(), "out")
	env := map[string]string{"EXPORT_TOKEN": "tok-7777-secret", "RUNNER_ALLOW_ENV": "EXPORT_TOKEN@127.0.0.1"}
	code, stdout, stderr := runCLI(t, env, "run", plan, "--out", out, "--no-progress", "--report", "json",
		"--export", "prometheus-rw="+prom.Origin+"/api/v1/write", "--export-interval", "200ms", "--label", "team=infra")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "tok-7777-secret") {
		t.Errorf("the credential was shown:\n%s", stderr)
	}
	var rep result.Report
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "tok-7777-secret") {
		t.Error("the credential is in report.json")
	}
	if len(rep.Export) != 2 {
		t.Fatalf("report.export = %+v", rep.Export)
	}
	runID := rep.Export[0].RunID
	for _, st := range rep.Export {
		if st.Sent == 0 || st.Dropped != 0 || st.RunID != runID || runID == "" {
			t.Errorf("export account %+v", st)
		}
	}
	checkFinalPoints(t, prom.Origin, runID, &rep, 2)
	checkLive(t, prom.Origin, runID, &rep)

	// runner export sends the same final points again, later.
	code, stdout, stderr = runCLI(t, nil, "export", out, "--to", "prometheus-rw="+prom.Origin+"/api/v1/write")
	if code != 0 || !strings.Contains(stdout, "run_id "+runID) {
		t.Fatalf("runner export: exit %d\n%s\n%s", code, stdout, stderr)
	}
	n := query(t, prom.Origin, fmt.Sprintf(`count_over_time(runner_level_ttft_p95_seconds{run_id=%q,job=""}[10m])`, runID))
	if len(n) != 2 || n[0].float(t) != 2 {
		t.Errorf("after runner export, each level's final point should be there twice: %+v", n)
	}
}

// checkFinalPoints: each level's final TTFT p95 and completed count are in
// Prometheus, once per export (remote write: no job; OTLP: job="runner"),
// with the run's labels and the report's values in base units.
func checkFinalPoints(t *testing.T, origin, runID string, rep *result.Report, exports int) {
	t.Helper()
	st := rep.Stages[0]
	for _, c := range []struct {
		name string
		want func(p *result.Point) float64
	}{
		{"runner_level_ttft_p95_seconds", func(p *result.Point) float64 { return *p.TTFTP95Ms / 1000 }},
		{"runner_level_completed_requests_total", func(p *result.Point) float64 { return float64(p.Completed) }},
		{"runner_level_output_tokens_per_second", func(p *result.Point) float64 { return p.OutputTPSTotal }},
	} {
		got := query(t, origin, fmt.Sprintf(`%s{run_id=%q}`, c.name, runID))
		if len(got) != exports*len(st.Points) {
			t.Errorf("%s: %d series, want %d: %+v", c.name, len(got), exports*len(st.Points), got)
			continue
		}
		for _, s := range got {
			m := s.Metric
			if m["plan"] != "exported" || m["stage"] != "sweep" || m["endpoint"] != "sim" || m["team"] != "infra" {
				t.Errorf("%s: labels %v", c.name, m)
			}
			var p *result.Point
			for i := range st.Points {
				if st.Points[i].Label() == m["level"] {
					p = &st.Points[i]
				}
			}
			if p == nil {
				t.Errorf("%s: level %q is not in the report", c.name, m["level"])
				continue
			}
			if v, want := s.float(t), c.want(p); math.Abs(v-want) > 1e-9*math.Max(1, want) {
				t.Errorf("%s{level=%s,job=%q} = %v, report says %v", c.name, m["level"], m["job"], v, want)
			}
		}
	}
}

// checkLive: the running figures and the semantic conventions' histograms
// arrived, and their last counts agree with the report.
func checkLive(t *testing.T, origin, runID string, rep *result.Report) {
	t.Helper()
	p := &rep.Stages[0].Points[1]
	sel := fmt.Sprintf(`{run_id=%q,level=%q}`, runID, p.Label())
	for _, c := range []struct {
		q    string
		want float64
	}{
		{"runner_requests_completed_total" + sel, float64(p.Completed)},
		{"runner_e2e_seconds_count" + sel, float64(p.Completed)},
		{"gen_ai_client_operation_duration_seconds_count" + sel, float64(p.Completed)},
		{"gen_ai_client_operation_time_to_first_chunk_seconds_count" + sel, float64(p.Completed)},
	} {
		got := query(t, origin, c.q)
		if len(got) == 0 {
			t.Errorf("%s: no series", c.q)
			continue
		}
		for _, s := range got {
			if v := s.float(t); v != c.want {
				t.Errorf("%s = %v, want %v (%v)", c.q, v, c.want, s.Metric)
			}
		}
	}
}

// TestValidatePrintRedactsExport: a printed plan shows no export credential.
func TestValidatePrintRedactsExport(t *testing.T) {
	plan := writePlan(t, `version: 1
name: t
endpoints:
  e: {simulator: {}}
prompts:
  p: {inline: [hi]}
export:
  - to: prometheus-rw
    url: "http://u:hunter22@127.0.0.1:9/api/v1/write?token=tok-abc"
    headers: {Authorization: "Bearer ${KEY}"}
stages:
  - {name: s, endpoint: e, prompts: p, concurrency: [1]}
`)
	code, out, errs := runCLI(t, map[string]string{"KEY": "sk-export-9", "RUNNER_ALLOW_ENV": "KEY@127.0.0.1"}, "validate", "--print", plan)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, secret := range []string{"hunter22", "tok-abc", "sk-export-9"} {
		if strings.Contains(out+errs, secret) {
			t.Errorf("validate --print shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "127.0.0.1:9/api/v1/write") || !strings.Contains(out, "[REDACTED]") {
		t.Errorf("the export block is not shown redacted:\n%s", out)
	}
}
