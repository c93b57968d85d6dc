package cli

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// progressFrameRE is one frame of the progress line: the level, its TTFT
// and ITL medians so far.
var progressFrameRE = regexp.MustCompile(`lat (c=\d+)\s+[\d.]+ tok/s\s+p50 TTFT ([\d.]+) ms · ITL ([\d.]+) ms`)

// TestProgressShowsLatencies: the progress line of a real run on a
// terminal shows each level's TTFT and ITL medians, and the last frame of a
// level shows the medians the report gives (within the live histogram's
// resolution, an eighth of a power of two: at most 6.25% off).
func TestProgressShowsLatencies(t *testing.T) {
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "lat.yaml"), `version: 1
name: progress
endpoints:
  sim:
    simulator: {ttft_ms: 40, itl_ms: 5, max_num_seqs: 8}
prompts:
  p: {synthetic: {input_tokens: 32, sizing: reference}}
stages:
  - {name: lat, endpoint: sim, prompts: p, output_tokens: 16, concurrency: [1, 4], requests: [6, 12]}
`)
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), &Env{
		Args: []string{plan, "--out", out}, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) (string, bool) { return "", false }, StdoutIsTerminal: true, StderrIsTerminal: true, StdoutColumns: 120,
	})
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	last := map[string][]string{}
	for _, m := range progressFrameRE.FindAllStringSubmatch(stderr.String(), -1) {
		last[m[1]] = m
	}
	rep := loadReport(t, out)
	for _, p := range rep.Stages[0].Points {
		m := last[p.Label()]
		if m == nil {
			t.Errorf("%s: no progress frame with a TTFT and an ITL median:\n%q", p.Label(), stderr.String())
			continue
		}
		for _, c := range []struct {
			name string
			got  string
			want *float64
		}{{"TTFT", m[2], p.TTFTP50Ms}, {"ITL", m[3], p.ITLP50Ms}} {
			v, _ := strconv.ParseFloat(c.got, 64)
			if c.want == nil || math.Abs(v-*c.want) > 0.0625**c.want+0.01 {
				t.Errorf("%s: the last frame's %s median is %v ms, the report's %v", p.Label(), c.name, v, c.want)
			}
		}
	}
}
