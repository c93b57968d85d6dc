package runner

import (
	"sort"
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// chatPlan is synthPlan whose prompt set is conversations of turns turns.
func chatPlan(input, turns int) *scenario.Plan {
	p := synthPlan(input, "reference")
	p.Prompts["p"].Turns = turns
	return p
}

// usersStage is a users stage of the given levels over prompt set "p".
func usersStage(output int, think scenario.ThinkTime, users ...int) *scenario.Stage {
	return &scenario.Stage{
		Name: "s", Prompts: "p", API: "chat", Mode: "pinned",
		OutputTokens: scenario.Length{Fixed: output}, Users: users, ThinkTime: &think,
	}
}

// Two users, conversations of three turns, a fixed think time of 150 ms:
// every turn after a conversation's first, and every conversation after a
// user's first, goes out no sooner than 150 ms after the request before it
// ended (the dispatch lag is measured from then), each request carries its
// conversation's session id in the stage's header, and the level is
// labelled and counted in users.
func TestUsersThink(t *testing.T) {
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	st := usersStage(4, scenario.ThinkTime{Fixed: scenario.Duration(150 * time.Millisecond)}, 2)
	st.Requests = scenario.PerLevel{Each: 4} // two conversations a user
	st.SessionHeader = "x-session-id"
	res := runStage(t, e, chatPlan(16, 3), st)
	p := res.Points[0]
	if p.Label() != "users=2" || p.Users != 2 || p.Concurrency != 0 || p.NRequests != 12 || p.Failed != 0 {
		t.Fatalf("level %s: users %d concurrency %d, %d requests (%d failed); want users=2 and 12 requests", p.Label(), p.Users, p.Concurrency, p.NRequests, p.Failed)
	}
	if p.MaxInFlight == nil || *p.MaxInFlight > 2 {
		t.Errorf("max in flight %v with two users", p.MaxInFlight)
	}
	recs := col.measured()
	byConv := map[string][]int{}
	for i, r := range recs {
		byConv[r.Session] = append(byConv[r.Session], i)
		if r.Session != r.Nonce {
			t.Errorf("request %d: session %q, its conversation is %q", r.Seq, r.Session, r.Nonce)
		}
	}
	if len(byConv) != 4 {
		t.Fatalf("%d sessions, want 4 conversations", len(byConv))
	}
	for conv, idx := range byConv {
		sort.Slice(idx, func(a, b int) bool { return recs[idx[a]].Turn < recs[idx[b]].Turn })
		for k := 1; k < len(idx); k++ {
			prev, r := recs[idx[k-1]], recs[idx[k]]
			end := prev.Start.Add(time.Duration(prev.E2EMs * float64(time.Millisecond)))
			if gap := r.Start.Sub(end); gap < 150*time.Millisecond {
				t.Errorf("conversation %s turn %d went out %v after turn %d ended: less than its think time", conv, r.Turn, gap, prev.Turn)
			}
		}
	}
	// The server saw each conversation's id in its header.
	got := map[string]int{}
	for _, c := range sp.requests("/v1/chat/completions") {
		if v := c.header.Get("X-Session-Id"); v != "" {
			got[v]++
		}
	}
	for conv := range byConv {
		if got[conv] != 3 {
			t.Errorf("session %s reached the server on %d requests, want its 3 turns", conv, got[conv])
		}
	}
	// Each user holds two conversations of three turns one after the
	// other: two think times inside each and one between them, at least
	// 5 × 150 ms = 750 ms.
	if p.DurationS < 0.75 {
		t.Errorf("the level took %.3f s, less than its users' think times", p.DurationS)
	}
}

// A user whose think time would end after a duration-bounded level's
// window does not come back in it: the level ends with the users' first
// turns, not a think time later.
func TestUsersThinkPastWindow(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := usersStage(4, scenario.ThinkTime{Fixed: scenario.Duration(3 * time.Second)}, 2)
	st.Duration = scenario.Duration(400 * time.Millisecond)
	start := time.Now()
	res := runStage(t, e, chatPlan(16, 3), st)
	took := time.Since(start)
	p := res.Points[0]
	if p.NRequests != 2 || p.Failed != 0 || len(col.measured()) != 2 {
		t.Fatalf("%d requests (%d failed), want the two users' first turns", p.NRequests, p.Failed)
	}
	if took > 2500*time.Millisecond {
		t.Errorf("the stage took %v: it waited out think times past its 400 ms window", took)
	}
}
