package export

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	writev2 "github.com/prometheus/client_golang/exp/api/remote/genproto/v2"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/runnerbench/runner/result"
)

var promName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// TestEveryCatalogueMetricHasAName: each metric of the catalogue is exported
// under one Prometheus name in base units, or listed as not exported with a
// reason; no two share a name.
func TestEveryCatalogueMetricHasAName(t *testing.T) {
	seen := map[string]string{}
	for _, m := range result.Metrics() {
		n, ok := pointNameOf(&m)
		if !ok {
			if notExported[m.Name] == "" {
				t.Errorf("%s: neither exported nor listed in notExported", m.Name)
			}
			continue
		}
		p := n.Prom()
		if !promName.MatchString(p) {
			t.Errorf("%s: %q is not a Prometheus name", m.Name, p)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s are both exported as %s", m.Name, other, p)
		}
		seen[p] = m.Name
		if (n.typ == counter) != strings.HasSuffix(p, "_total") {
			t.Errorf("%s: %s: _total is for counters only, and every counter has it", m.Name, p)
		}
		if strings.HasSuffix(p, "_ms") || (m.Unit == "ms" && (n.unit != uSeconds || n.scale != 0.001)) {
			t.Errorf("%s: %s is not in seconds", m.Name, p)
		}
	}
	for k := range pointNames {
		if _, ok := result.MetricNamed(k); !ok {
			t.Errorf("pointNames names %s, which is not in the catalogue", k)
		}
	}
}

// receiver is a loopback remote-write receiver that decodes what it gets.
type receiver struct {
	mu     sync.Mutex
	series map[string]float64 // name{sorted labels} → value, last one wins
	auth   []string
	hits   atomic.Int64
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.hits.Add(1)
	body, _ := io.ReadAll(req.Body)
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var m writev2.Request
	if err := proto.Unmarshal(raw, &m); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	n := 0
	for _, ts := range m.Timeseries {
		ls := writev2.DesymbolizeLabels(ts.LabelsRefs, m.Symbols, nil)
		var name, rest string
		for i := 0; i < len(ls); i += 2 {
			if ls[i] == "__name__" {
				name = ls[i+1]
			} else {
				rest += ls[i] + "=" + ls[i+1] + ","
			}
		}
		for _, s := range ts.Samples {
			r.series[name+"{"+rest+"}"] = s.Value
			n++
		}
	}
	w.Header().Set("X-Prometheus-Remote-Write-Samples-Written", strconv.Itoa(n))
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) value(t *testing.T, name, labelPart string) float64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range r.series {
		if strings.HasPrefix(k, name+"{") && strings.Contains(k, labelPart) {
			return v
		}
	}
	t.Fatalf("no series %s with %s among %d", name, labelPart, len(r.series))
	return 0
}

func ms(v float64) *float64 { return &v }

// feed runs one level of n requests through e: LevelStarted, the requests
// (every tenth failed with a timeout), LevelDone with p.
func feed(e *Exporter, stage string, n int, p *result.Point) {
	e.LevelStarted(stage, 0, "c=4", "sim")
	e.Request(&result.Request{Stage: stage, Level: 0, Warmup: true, OK: true, E2EMs: 1e6})
	for i := range n {
		r := &result.Request{Stage: stage, Level: 0, Seq: i, OK: i%10 != 9, E2EMs: 100 + float64(i%7), TTFTMs: ms(20), OutputTokens: 8, DispatchLagMs: 0.01}
		if !r.OK {
			r.ErrorKind = result.ErrTimeout
		}
		e.Request(r)
	}
	e.Gaps([]time.Duration{10 * time.Millisecond, 12 * time.Millisecond})
	e.Progress(stage, 0, n, 0)
	e.LevelDone(stage, 0, p, nil)
}

// TestRemoteWriteCarriesTheFigures: the final point and the running figures
// arrive under their names, in base units, with the run's labels and the
// header the target names.
func TestRemoteWriteCarriesTheFigures(t *testing.T) {
	rc := &receiver{series: map[string]float64{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	e, err := New(Options{Targets: []Target{{To: PrometheusRW, URL: srv.URL + "/api/v1/write", Headers: map[string]string{"Authorization": "Bearer s3cret"}}},
		Plan: "p", RunID: "abc", Labels: map[string]string{"team": "infra", "plan": "shadow"}, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := &result.Point{Concurrency: 4, Completed: 90, Failed: 10, NRequests: 100, TTFTP95Ms: ms(20.5), ClientCPUPercent: ms(12.5)}
	feed(e, "s", 100, p)
	stats := e.Close(context.Background())
	if len(stats) != 1 || stats[0].Dropped != 0 || stats[0].Sent == 0 {
		t.Fatalf("stats = %+v", stats)
	}
	want := "endpoint=sim,label_plan=shadow,level=c=4,plan=p,run_id=abc,stage=s,team=infra,"
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"runner_level_ttft_p95_seconds", 0.0205},
		{"runner_level_completed_requests_total", 90},
		{"runner_level_client_cpu_ratio", 0.125},
		{"runner_requests_completed_total", 90},
		{"runner_requests_started_total", 100},
		{"runner_output_tokens_total", 720},
		{"runner_e2e_seconds_count", 90},
	} {
		if got := rc.value(t, c.name, want); got != c.v {
			t.Errorf("%s = %v, want %v", c.name, got, c.v)
		}
	}
	if got := rc.value(t, "runner_requests_failed_total", "kind=timeout"); got != 10 {
		t.Errorf("failed{kind=timeout} = %v, want 10", got)
	}
	// Live quantiles come from the histogram: within its 1/1024.
	if got := rc.value(t, "runner_ttft_seconds", "quantile=0.5"); math.Abs(got-0.02) > 0.02/1024 {
		t.Errorf("live ttft p50 = %v, want 0.02", got)
	}
	if rc.auth[0] != "Bearer s3cret" {
		t.Errorf("Authorization = %q", rc.auth[0])
	}
}

// TestHungReceiverIsNeverInTheWay: a receiver that never answers costs
// dropped samples, counted, and one warning without the credential; the
// hot path does not wait, the queue stays bounded and Close ends by its
// deadline.
func TestHungReceiverIsNeverInTheWay(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	var warnings []string
	var wmu sync.Mutex
	u := strings.Replace(srv.URL, "http://", "http://user:pa55word@", 1) + "/api/v1/write?token=t0ken"
	e, err := New(Options{Targets: []Target{{To: PrometheusRW, URL: u, Headers: map[string]string{"Authorization": "Bearer s3cret"}}},
		Plan: "p", RunID: "x", Interval: time.Millisecond,
		Warn: func(m string) { wmu.Lock(); warnings = append(warnings, m); wmu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for lvl := range 20 {
		stage := "s" + strconv.Itoa(lvl)
		feed(e, stage, 5000, &result.Point{Completed: 1})
		time.Sleep(5 * time.Millisecond)
	}
	hot := time.Since(start)
	for _, s := range e.senders {
		if n := len(s.q); n > queueBatches {
			t.Errorf("queue holds %d batches, bound %d", n, queueBatches)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	stats := e.Close(ctx)
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Close took %v past its 300ms deadline", d)
	}
	st := stats[0]
	if st.Dropped == 0 {
		t.Errorf("nothing dropped: %+v", st)
	}
	if st.Sent != 0 {
		t.Errorf("a hung receiver took %d samples", st.Sent)
	}
	t.Logf("100,000 requests and 20 levels through the hot path in %v; %d samples dropped", hot, st.Dropped)
	wmu.Lock()
	defer wmu.Unlock()
	if len(warnings) != 1 {
		t.Errorf("%d warnings, want 1: %q", len(warnings), warnings)
	}
	all := strings.Join(append(warnings, st.URL, st.LastError, Warning(st)), "\n")
	for _, secret := range []string{"pa55word", "t0ken", "s3cret", "user"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q shown: %s", secret, all)
		}
	}
}

// TestRefusedAndRedirected: a refused connection and a 5xx are dropped
// samples; a redirect is not followed, so the header never reaches the
// other host.
func TestRefusedAndRedirected(t *testing.T) {
	var other atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/api/v1/write", http.StatusTemporaryRedirect))
	defer redirect.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusServiceUnavailable) }))
	defer failing.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	for _, to := range []string{PrometheusRW, OTLP} {
		targets := []Target{
			{To: to, URL: redirect.URL + "/api/v1/write", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
			{To: to, URL: failing.URL},
			{To: to, URL: closedURL},
		}
		e, err := New(Options{Targets: targets, Plan: "p", RunID: "x", Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		feed(e, "s", 10, &result.Point{Completed: 9})
		for i, st := range e.Close(context.Background()) {
			if st.Dropped == 0 || st.Sent != 0 || st.LastError == "" {
				t.Errorf("%s target %d: %+v", to, i, st)
			}
		}
	}
	if n := other.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}

// TestRunID is the same for the same plan and start, and differs otherwise.
func TestRunID(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	a, b := RunID("h", at), RunID("h", at.In(time.FixedZone("x", 3600)))
	if a != b || len(a) != 12 || RunID("h", at.Add(1)) == a || RunID("g", at) == a {
		t.Errorf("run ids %s %s", a, b)
	}
}

// TestOTLPBody: the body is one ExportMetricsServiceRequest field of
// ResourceMetrics, whose metrics carry the semantic conventions' histograms
// (not Runner's latency summaries), the final point's gauges and counters
// as cumulative monotonic sums, each with the level's attributes.
func TestOTLPBody(t *testing.T) {
	lv := &level{stage: "s", label: "c=4", endpoint: "sim", labels: levelLabels(runLabels("p", "r", nil), "s", "c=4", "sim"), sum: newDelta()}
	for i := range 10 {
		lv.sum.request(&result.Request{OK: true, E2EMs: 50 + float64(i), TTFTMs: ms(15), OutputTokens: 100})
	}
	series := append(lv.liveSeries(), pointSeries(&result.Point{Completed: 10, TTFTP95Ms: ms(15)}, lv.labels)...)
	body, err := encodeOTLP(&batch{at: time.Now(), series: series})
	if err != nil {
		t.Fatal(err)
	}
	num, typ, n := protowire.ConsumeTag(body)
	if num != 1 || typ != protowire.BytesType || n < 0 {
		t.Fatalf("not a resource_metrics field: %d %d", num, typ)
	}
	inner, m := protowire.ConsumeBytes(body[n:])
	if m != len(body)-n {
		t.Fatalf("trailing bytes after resource_metrics")
	}
	var rm metricspb.ResourceMetrics
	if err := proto.Unmarshal(inner, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]*metricspb.Metric{}
	for _, x := range rm.ScopeMetrics[0].Metrics {
		got[x.Name] = x
	}
	if h := got["gen_ai.client.operation.duration"].GetHistogram(); h == nil || h.DataPoints[0].Count != 10 || h.DataPoints[0].BucketCounts[3] != 10 {
		t.Errorf("E2E histogram (10 values in (0.04, 0.08]]): %v", h)
	}
	if tok := got["gen_ai.client.token.usage"].GetHistogram(); tok == nil || tok.DataPoints[0].BucketCounts[4] != 10 || tok.DataPoints[0].Max != nil {
		t.Errorf("token usage (10 values in (64, 256]]): %v", tok)
	}
	if g := got["runner.level.ttft_p95"]; g.GetGauge().GetDataPoints()[0].GetAsDouble() != 0.015 || g.Unit != "s" {
		t.Errorf("ttft_p95: %v", g)
	}
	if s := got["runner.level.completed_requests"].GetSum(); s == nil || !s.IsMonotonic || s.DataPoints[0].GetAsDouble() != 10 {
		t.Errorf("completed: %v", s)
	}
	if got["runner.ttft"] != nil || got["runner.e2e"] != nil || got["runner.dispatch_lag"].GetSummary() == nil {
		t.Errorf("OTLP carries the latencies as histograms and the dispatch lag as a summary")
	}
	attrs := map[string]string{}
	for _, kv := range got["runner.level.ttft_p95"].GetGauge().DataPoints[0].Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["plan"] != "p" || attrs["run_id"] != "r" || attrs["stage"] != "s" || attrs["level"] != "c=4" || attrs["endpoint"] != "sim" {
		t.Errorf("attributes %v", attrs)
	}
}
