package aggregate

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// referenceCase is one level of testdata/reference.json, written by
// testdata/gen_reference.py with the reference load generator's own formulas
// (its pct and CPython's statistics module).
type referenceCase struct {
	ID           int   `json:"id"`
	Pinned       bool  `json:"pinned"`
	InputTokens  int   `json:"input_tokens"`
	OutputTokens int   `json:"output_tokens"`
	WallNs       int64 `json:"wall_ns"`
	Requests     []struct {
		Seq    int      `json:"seq"`
		OK     bool     `json:"ok"`
		Kind   string   `json:"kind"`
		Msg    string   `json:"msg"`
		TTFTMs *float64 `json:"ttft_ms"`
		E2EMs  float64  `json:"e2e_ms"`
		TPOTMs *float64 `json:"tpot_ms"`
		Out    int      `json:"out"`
		In     int      `json:"in"`
	} `json:"requests"`
	Want struct {
		NRequests          int      `json:"n_requests"`
		Completed          int      `json:"completed"`
		Failed             int      `json:"failed"`
		DurationS          float64  `json:"duration_s"`
		OutputTPSTotal     float64  `json:"output_tps_total"`
		OutputTPSPerStream float64  `json:"output_tps_per_stream"`
		TTFTP50Ms          *float64 `json:"ttft_p50_ms"`
		TTFTP95Ms          *float64 `json:"ttft_p95_ms"`
		TPOTP50Ms          *float64 `json:"tpot_p50_ms"`
		PrefillTPS         *float64 `json:"prefill_tps"`
		NaturalStop        bool     `json:"natural_stop"`
		OutputTokenStdev   *float64 `json:"output_token_stdev"`
		Error              *string  `json:"error"`
	} `json:"want"`
}

// TestReferenceCompat runs 150 random levels (ties, small n, failures,
// missing TTFTs, unreported usage) through Level and compares every
// reference field with what the reference's Python computes, exactly. The
// requests are added in a shuffled completion order in a shuffled order.
func TestReferenceCompat(t *testing.T) {
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []referenceCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 100 {
		t.Fatalf("only %d reference cases", len(cases))
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, c := range cases {
		l := newLevel(Spec{InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, Pinned: c.Pinned})
		for _, i := range rng.Perm(len(c.Requests)) {
			q := c.Requests[i]
			r := &result.Request{Seq: q.Seq, OK: q.OK, ErrorKind: q.Kind, Error: q.Msg,
				TTFTMs: q.TTFTMs, E2EMs: q.E2EMs, TPOTMs: q.TPOTMs, OutputTokens: q.Out, InputTokens: q.In}
			l.Add(r)
		}
		p := l.Point(record(time.Duration(c.WallNs), nil))
		got := c.Want // same type, filled from the point
		got.NRequests, got.Completed, got.Failed = p.NRequests, p.Completed, p.Failed
		got.DurationS, got.OutputTPSTotal, got.OutputTPSPerStream = p.DurationS, p.OutputTPSTotal, p.OutputTPSPerStream
		got.TTFTP50Ms, got.TTFTP95Ms, got.TPOTP50Ms, got.PrefillTPS = p.TTFTP50Ms, p.TTFTP95Ms, p.TPOTP50Ms, p.PrefillTPS
		got.NaturalStop, got.OutputTokenStdev, got.Error = p.NaturalStop, p.OutputTokenStdev, p.Error
		if !reflect.DeepEqual(got, c.Want) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(c.Want)
			t.Errorf("case %d:\n got %s\nwant %s", c.ID, gj, wj)
		}
	}
}
