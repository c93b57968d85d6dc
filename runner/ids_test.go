package runner

import (
	"regexp"
	"testing"

	"github.com/runnerbench/runner/scenario"
)

// Every measured request carries a traceparent of its own, and its record
// keeps the trace id beside the ids the server answered with: the
// simulator's truth, found by the request's nonce, holds the header it
// received and the id it gave, so each record is held to what the server saw.
func TestRequestIDs(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	for _, api := range []string{"chat", "completions", "responses", "messages"} {
		st := stage(4, 2)
		st.Name, st.API, st.Requests = api, scenario.API(api), scenario.PerLevel{Each: 4}
		runStage(t, e, synthPlan(16, "reference"), st)
	}
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	recs := col.measured()
	if len(recs) != 16 {
		t.Fatalf("%d measured records, want 16", len(recs))
	}
	for _, r := range recs {
		if !r.OK {
			t.Fatalf("%s request %d failed: %s", r.Stage, r.Seq, r.Error)
		}
		if !hex32.MatchString(r.TraceID) || seen[r.TraceID] {
			t.Fatalf("%s request %d: trace id %q is not 32 hex digits of its own", r.Stage, r.Seq, r.TraceID)
		}
		seen[r.TraceID] = true
		tr := truth(t, s, r.Nonce)
		if want := "00-" + r.TraceID + "-"; len(tr.Traceparent) != 55 || tr.Traceparent[:36] != want || tr.Traceparent[52:] != "-01" {
			t.Errorf("%s request %d: the server received traceparent %q, the record says trace id %s", r.Stage, r.Seq, tr.Traceparent, r.TraceID)
		}
		if r.ResponseID != tr.ID {
			t.Errorf("%s request %d: response_id %q, the server's id is %q", r.Stage, r.Seq, r.ResponseID, tr.ID)
		}
		if r.XRequestID != tr.ID {
			t.Errorf("%s request %d: x_request_id %q, the server sent %q", r.Stage, r.Seq, r.XRequestID, tr.ID)
		}
	}
}

// A plan can turn the traceparent off: no header goes out and no trace id
// is recorded.
func TestTraceparentOff(t *testing.T) {
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	off := false
	e, col := newEngine(t, sp.URL+"/v1", &scenario.Endpoint{Traceparent: &off})
	runStage(t, e, synthPlan(16, "reference"), stage(4, 2))
	for _, c := range sp.requests("/v1/chat/completions") {
		if v := c.header.Get("Traceparent"); v != "" {
			t.Fatalf("traceparent %q sent with traceparent: false", v)
		}
	}
	for _, r := range col.measured() {
		if r.TraceID != "" {
			t.Fatalf("trace id %q recorded with traceparent: false", r.TraceID)
		}
	}
}
