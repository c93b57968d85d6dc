package result

import "testing"

// TestLevelStopShort: a table's Stopped cell says what the level's stop
// was, and never "decided" where no check was there to decide: a level
// that stopped at its minimum with no check an interval decides reads
// "minimum@N", its line saying why.
func TestLevelStopShort(t *testing.T) {
	for _, c := range []struct {
		stop       LevelStop
		short, txt string
	}{
		{LevelStop{Reason: StopDecided, Requests: 81, By: []string{"interactive"}}, "decided@81", "decided at 81 requests by interactive"},
		{LevelStop{Reason: StopDecided, Requests: 97}, "minimum@97", "stopped once its minimum had finished (97 requests): no check an interval decides applies to the level"},
		{LevelStop{Reason: StopPrecise, Requests: 96, Rule: "ttft_p95_ms within 5%"}, "precise@96", "precise at 96 requests: ttft_p95_ms within 5%"},
		{LevelStop{Reason: StopCapped, Cap: "max_requests", Undecided: []string{"interactive"}}, "capped, undecided", "capped at max_requests, undecided: interactive"},
		{LevelStop{Reason: StopCapped, Cap: "max_duration"}, "capped", "capped at max_duration"},
		{LevelStop{Reason: StopFixed}, "fixed", "fixed"},
	} {
		if got := c.stop.Short(); got != c.short {
			t.Errorf("%+v: Short %q, want %q", c.stop, got, c.short)
		}
		if got := c.stop.Text(); got != c.txt {
			t.Errorf("%+v: Text %q, want %q", c.stop, got, c.txt)
		}
	}
}
