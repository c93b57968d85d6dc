package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/gpuexporters"
	"github.com/runnerbench/runner/result"
)

// collect gathers a level's reads.
type collect struct {
	mu    sync.Mutex
	reads []*result.TelemetryScrape
}

func (c *collect) emit(r *result.TelemetryScrape) {
	c.mu.Lock()
	c.reads = append(c.reads, r)
	c.mu.Unlock()
}

func (c *collect) all() []*result.TelemetryScrape {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*result.TelemetryScrape(nil), c.reads...)
}

func TestParseDCGMPage(t *testing.T) {
	data, err := os.ReadFile("../../internal/gpuexporters/testdata/dcgm-exporter.prom")
	if err != nil {
		t.Fatal(err)
	}
	samples, dropped, err := Parse(strings.NewReader(string(data)), nil)
	if err != nil || dropped != 0 {
		t.Fatalf("parse: %v, dropped %d", err, dropped)
	}
	var power []result.TelemetrySample
	readme := 0
	for _, s := range samples {
		if s.Metric == "DCGM_FI_DEV_POWER_USAGE" {
			power = append(power, s)
		}
		// The README's `{gpu="0", UUID="..."}`, a blank after the comma.
		if s.Labels["UUID"] == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52" {
			readme++
			if s.Labels["gpu"] != "0" || len(s.Labels) != 2 {
				t.Errorf("README sample's labels %v", s.Labels)
			}
		}
	}
	if len(power) != 2 || power[0].Value != 412.5 || power[1].Value != 387.5 {
		t.Fatalf("power samples %+v", power)
	}
	if l := power[0].Labels; l["gpu"] != "0" || l["modelName"] != "NVIDIA H100 80GB HBM3" || l["hostname"] != "gpu-node-1" {
		t.Errorf("labels %v", l)
	}
	if readme != 3 {
		t.Errorf("%d samples of the README's lines, want 3", readme)
	}
	// Keep filters by name: the known DCGM fields are kept, others not.
	kept, _, _ := Parse(strings.NewReader(string(data)+"other_metric 1\n"), KeepFor(nil))
	for _, s := range kept {
		if !strings.HasPrefix(s.Metric, "DCGM_FI_") {
			t.Errorf("kept %s", s.Metric)
		}
	}
}

func TestParseLabelsAndValues(t *testing.T) {
	page := `# TYPE x counter
x_total{a="q\"uo\\te",b="x,y}z",} 3 1700000000000
h_bucket{le="+Inf"} 7
nan_metric NaN
inf_metric +Inf
y 2.5e3
`
	got, _, err := Parse(strings.NewReader(page), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("samples %+v", got)
	}
	if got[0].Labels["a"] != `q"uo\te` || got[0].Labels["b"] != "x,y}z" || got[0].Value != 3 {
		t.Errorf("first %+v", got[0])
	}
	if got[1].Labels["le"] != "+Inf" || got[2].Value != 2500 {
		t.Errorf("%+v", got[1:])
	}
	// Keep by a histogram's family name keeps its parts.
	got, _, _ = Parse(strings.NewReader(page), func(n string) bool { return n == "h" })
	if len(got) != 1 || got[0].Metric != "h_bucket" {
		t.Errorf("kept %+v", got)
	}
}

func TestParseRefusesGarbage(t *testing.T) {
	for name, page := range map[string]string{
		"html":     "<html><body>502 Bad Gateway</body></html>\n<p>try later</p>\n",
		"binary":   "\x00\x01\x02\x03 garbage\n\xff\xfe\n",
		"longline": strings.Repeat("a", MaxLine+10) + "\n",
	} {
		if _, _, err := Parse(strings.NewReader(page), nil); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	// A page past MaxBody is refused, however it is cut into lines.
	huge := strings.Repeat("x 1\n", MaxBody/4+10)
	if _, _, err := Parse(strings.NewReader(huge), nil); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("huge page: %v", err)
	}
	// Past MaxSamples, samples are counted, not kept.
	many := strings.Repeat("x 1\n", MaxSamples+5)
	got, dropped, err := Parse(strings.NewReader(many), nil)
	if err != nil || len(got) != MaxSamples || dropped != 5 {
		t.Errorf("many: %d kept, %d dropped, %v", len(got), dropped, err)
	}
}

// TestLevelBracketsAndAdvances reads the DCGM page served over loopback:
// a first round before Stop is awaited, rounds every interval, a last one
// after Stop, and the energy counter advances as the exporter's does.
//
// How many rounds fit in a given time is the machine's to decide (a busy
// one delays a ticker's reads by hundreds of milliseconds), so the test
// waits for two rounds after the first, however long they take, and holds
// the sampler to the bound it can keep: no more rounds than its interval
// allows.
func TestLevelBracketsAndAdvances(t *testing.T) {
	ex, err := gpuexporters.Start(gpuexporters.DCGM, gpuexporters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	tg := &Target{Name: "gpus", URL: ex.URL, Keep: KeepFor(nil)}
	const interval = 50 * time.Millisecond
	s := New([]*Target{tg}, interval, 10*time.Second)
	defer s.Close()
	var c collect
	begin := time.Now()
	lr := s.Level(context.Background(), "st", 3, 0, nil, c.emit)
	lr.WaitFirst()
	if n := len(c.all()); n != 1 {
		t.Fatalf("after WaitFirst: %d reads, want 1", n)
	}
	for deadline := time.Now().Add(30 * time.Second); len(c.all()) < 3; time.Sleep(interval / 5) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads in 30 s at an interval of %v", len(c.all()), interval)
		}
	}
	stopAt := time.Now()
	lr.Stop()
	reads := c.all()
	// The first read, one per tick (a tick a slow read made the ticker miss
	// is dropped, never made up), and the last.
	if most := 2 + int(stopAt.Sub(begin)/interval); len(reads) < 4 || len(reads) > most {
		t.Fatalf("%d reads in %v at an interval of %v, want 4 to %d", len(reads), stopAt.Sub(begin), interval, most)
	}
	last := reads[len(reads)-1]
	if last.Time.Before(stopAt) {
		t.Errorf("last read at %v, before Stop at %v", last.Time, stopAt)
	}
	var prev float64
	for i, r := range reads {
		if r.Error != "" || r.Target != "gpus" || r.Stage != "st" || r.Level != 3 || r.Endpoint {
			t.Fatalf("read %d: %+v", i, r)
		}
		var e float64
		for _, smp := range r.Samples {
			if smp.Metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" && smp.Labels["gpu"] == "0" {
				e = smp.Value
			}
		}
		if e < prev {
			t.Errorf("energy went back: %v after %v", e, prev)
		}
		prev = e
	}
	st := s.Stats()
	if len(st) != 1 || st[0].Reads != len(reads) || st[0].Failed != 0 {
		t.Errorf("stats %+v, %d reads", st, len(reads))
	}
}

// TestHostileTargets: a target that never answers, one whose body never
// ends, one that answers garbage and one that redirects each cost failed
// reads with their reason, never a stalled level; the sampler's memory
// and goroutines stay bounded.
func TestHostileTargets(t *testing.T) {
	release := make(chan struct{})
	var redirected atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		line := []byte(strings.Repeat("endless_metric{a=\"b\"} 1\n", 100))
		for r.Context().Err() == nil {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>\x00\x01 not metrics</html>\nstill not\n"))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/landed", http.StatusFound)
	})
	mux.HandleFunc("/landed", func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		_, _ = w.Write([]byte("x 1\n"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)

	var targets []*Target
	for _, p := range []string{"hang", "endless", "garbage", "moved"} {
		targets = append(targets, &Target{Name: p, URL: srv.URL + "/" + p, Header: http.Header{"Authorization": {"Bearer s3cret"}}})
	}
	timeout := 300 * time.Millisecond
	s := New(targets, 100*time.Millisecond, timeout)
	defer s.Close()
	var c collect
	g0 := samplerGoroutines()
	start := time.Now()
	lr := s.Level(context.Background(), "st", 0, 0, nil, c.emit)
	lr.WaitFirst()
	if d := time.Since(start); d > timeout+time.Second {
		t.Errorf("first round took %v with a %v timeout", d, timeout)
	}
	time.Sleep(400 * time.Millisecond)
	stop := time.Now()
	lr.Stop()
	if d := time.Since(stop); d > timeout+time.Second {
		t.Errorf("Stop took %v with a %v timeout", d, timeout)
	}
	why := map[string]string{}
	for _, r := range c.all() {
		if r.Error == "" {
			t.Errorf("%s: a read succeeded: %+v", r.Target, r)
		}
		if strings.Contains(r.Error, "s3cret") {
			t.Errorf("%s: the error shows the credential: %s", r.Target, r.Error)
		}
		why[r.Target] = r.Error
	}
	for target, want := range map[string]string{"hang": "no answer within", "garbage": "not Prometheus", "moved": "HTTP 302"} {
		if !strings.Contains(why[target], want) {
			t.Errorf("%s: error %q, want %q", target, why[target], want)
		}
	}
	// An endless body is cut by the body bound or by the timeout,
	// whichever comes first (TestEndlessBody holds the bound).
	if e := why["endless"]; !strings.Contains(e, "larger than") && !strings.Contains(e, "no answer within") {
		t.Errorf("endless: error %q", e)
	}
	if redirected.Load() != 0 {
		t.Error("a redirect was followed")
	}
	for _, st := range s.Stats() {
		if st.Failed == 0 || st.Failed != st.Reads || st.LastError == "" {
			t.Errorf("stats %+v", st)
		}
	}
	// The sampler's own goroutines are gone once the level has stopped and
	// the run has closed the sampler (its kept-alive connections serve the
	// next level until then); the hostile servers' handlers, still blocked
	// until the test closes them, are not its, and a moment is allowed for
	// a transport's to notice.
	s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for samplerGoroutines() > g0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := samplerGoroutines(); n > g0 {
		t.Errorf("%d of the sampler's goroutines after Stop, %d before the level:\n%s", n, g0, goroutineDump())
	}
}

// samplerGoroutines counts the goroutines running this package's code or
// an HTTP client transport's (the sampler's reads), not the tests' own
// servers.
func samplerGoroutines() int {
	n := 0
	for _, g := range strings.Split(goroutineDump(), "\n\n") {
		if strings.Contains(g, ".Test") || strings.Contains(g, "net/http.(*conn).serve") {
			continue
		}
		if strings.Contains(g, "runner/runner/telemetry.") || strings.Contains(g, "net/http.(*persistConn)") {
			n++
		}
	}
	return n
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// TestEndpointWithoutMetrics: an endpoint whose /metrics answers 404 is
// not read again, and its read is no error in the records.
func TestEndpointWithoutMetrics(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ep := &Target{Name: "api", Endpoint: true, URL: srv.URL + "/metrics"}
	s := New(nil, 20*time.Millisecond, time.Second)
	var c collect
	for range 3 {
		lr := s.Level(context.Background(), "st", 0, 0, []*Target{ep}, c.emit)
		lr.WaitFirst()
		time.Sleep(60 * time.Millisecond)
		lr.Stop()
	}
	if n := len(c.all()); n != 0 {
		t.Errorf("%d reads recorded", n)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("/metrics read %d times, want once", n)
	}
}

// TestEndlessBody: a page that never ends is cut at MaxBody, with its
// reason, long before the timeout.
func TestEndlessBody(t *testing.T) {
	chunk := []byte(strings.Repeat("endless_metric{a=\"b\"} 1\n", 4096))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	s := New(nil, time.Second, 20*time.Second)
	defer s.Close()
	start := time.Now()
	r := s.read(context.Background(), &Target{Name: "endless", URL: srv.URL})
	if !strings.Contains(r.Error, "larger than 8 MiB") || len(r.Samples) != 0 {
		t.Errorf("error %q, %d samples", r.Error, len(r.Samples))
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
}
