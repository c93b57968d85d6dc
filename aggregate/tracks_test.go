package aggregate

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// TestTracks: the endpoint's state series and a target's changing gauges
// become tracks, each point with its read's level; a failed read is no
// point; a gauge that never changed, a counter and what is beyond the
// bounds are not drawn and are named; label sets are named by what tells
// them apart.
func TestTracks(t *testing.T) {
	t0 := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	var reads []*result.TelemetryScrape
	for i := range 4 {
		at := t0.Add(time.Duration(i) * time.Second)
		reads = append(reads, &result.TelemetryScrape{Time: at, Target: "sim", Endpoint: true, Stage: "s", Level: i / 2, Samples: []result.TelemetrySample{
			{Metric: "vllm:num_requests_running", Value: float64(i)}, {Metric: "vllm:num_requests_waiting", Value: 0},
		}})
		node := &result.TelemetryScrape{Time: at, Target: "node", Stage: "s", Level: i / 2, Samples: []result.TelemetrySample{
			{Metric: "node_load1", Value: float64(i) / 2},
			{Metric: "temp", Labels: map[string]string{"gpu": "0", "uuid": "GPU-aaaa", "host": "h"}, Value: 40 + float64(i)},
			{Metric: "temp", Labels: map[string]string{"gpu": "1", "uuid": "GPU-bbbb", "host": "h"}, Value: 50},
			{Metric: "license", Value: 1},
			{Metric: "node_cpu_seconds_total", Value: float64(10 * i)},
		}}
		if i == 2 {
			node = &result.TelemetryScrape{Time: at, Target: "node", Stage: "s", Level: 1, Error: "timeout"}
		}
		reads = append(reads, node)
	}
	tracks, undrawn := Tracks(reads)
	var got []string
	for _, tr := range tracks {
		var vals []string
		for _, p := range tr.Points {
			vals = append(vals, result.LevelLabel(p.Level, nil, 0, 0)+":"+trim(p.V))
		}
		got = append(got, tr.Target+"|"+tr.Chart+"|"+tr.Line+"|"+strings.Join(vals, " "))
	}
	want := []string{
		"sim|" + SeriesRunning + "||c=0:0 c=0:1 c=1:2 c=1:3",
		"sim|" + SeriesWaiting + "||c=0:0 c=0:0 c=1:0 c=1:0",
		"node|node_load1||c=0:0 c=0:0.5 c=1:1.5",
		"node|temp|gpu=0|c=0:40 c=0:41 c=1:43",
		"node|temp|gpu=1|c=0:50 c=0:50 c=1:50",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tracks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(undrawn) != 1 || strings.Join(undrawn[0].Constant, ",") != "license = 1" || len(undrawn[0].Metrics) != 0 {
		t.Errorf("undrawn: %+v", undrawn)
	}
}

func trim(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
