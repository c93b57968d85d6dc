package sim

import "time"

// The simulator shares its machine with the client and whatever else runs
// there, so its own schedule can run late: a timer that fires late, a
// handler that waits for a core before it writes. Then the latencies a
// client measures are the machine's, not the model's, and a comparison of
// two runs would judge the machine. The engine plans every step's end, so it
// knows when it fell behind; these bounds say when that counts.
const (
	// LateStep is how late a step may end against its plan before it counts
	// as late: less is the operating system's timer slack.
	LateStep = time.Millisecond
	// BehindShare and BehindFloor: a request counts as served behind the
	// model when the simulator's lateness stretched its time to first token,
	// or its decode (first to last token), by more than BehindShare of what
	// the model gave that part and by more than BehindFloor. 2.5% is half
	// the comparison's default practical threshold (5%): a bias that small,
	// with an interval no wider than the other half, still reads "same".
	BehindShare = 0.025
	BehindFloor = time.Millisecond
)

// requestLag is how far the simulator served one completed request behind
// its model, from the engine's drift since the request was submitted and
// how late its first and last tokens were written against their scheduled
// times: lagFirst delays the first token, lagLast the last. model is what
// the request's first token (ttft) and decode would have taken without it.
type requestLag struct {
	lagFirst, lagLast time.Duration
	ttft, decode      time.Duration // modelled
}

// lag measures the request once its last token is written (st.flushedTo of
// them); ok is false when nothing was written or the model takes no time.
func (st *stream) lag() (requestLag, bool) {
	n := st.flushedTo
	if n == 0 || st.s.cfg.ZeroLatency {
		return requestLag{}, false
	}
	sq := st.sq
	sq.mu.Lock()
	if len(sq.sched) < n {
		sq.mu.Unlock()
		return requestLag{}, false
	}
	// A token waits in its chunk for the chunk's last token (tokens_per_chunk):
	// that wait is the model's, so a chunk's lateness is against its last token.
	first := 0
	for first+1 < n && st.written[first+1] == st.written[0] {
		first++
	}
	schedFirst, schedLast := sq.sched[first], sq.sched[n-1]
	d0, dFirst, dLast, wake := sq.drift0, sq.driftFirst, sq.driftLast, sq.wakeLag
	ttftFloor, decodeFloor := st.modelFloors(sq.promptTokens-sq.cached, len(sq.stepEnds)-1)
	sq.mu.Unlock()
	if first == n-1 { // one write (not streamed): its first token is its last
		dFirst, ttftFloor = dLast, ttftFloor+decodeFloor
	}
	// The drift since submission may include a restart that happened before
	// this request would have been admitted in the model; the model's time
	// for each part is at least its own steps' cost, so no lag is taken to
	// be more than the part took beyond that.
	ttft, decode := st.written[0]-sq.arrival, st.written[n-1]-st.written[0]
	var l requestLag
	l.lagFirst = min(max(0, ttft-ttftFloor), wake+max(0, dFirst-d0)+max(0, st.written[0]-schedFirst))
	decodeLag := max(0, dLast-dFirst) + max(0, st.written[n-1]-schedLast) - max(0, st.written[0]-schedFirst)
	decodeLag = min(max(0, decode-decodeFloor), max(0, decodeLag))
	l.lagLast = l.lagFirst + decodeLag
	l.ttft, l.decode = ttft-l.lagFirst, decode-decodeLag
	return l, true
}

// modelFloors are the least the model can give a request's first token
// (its prefill step: the step's fixed cost and its uncached prompt tokens)
// and its decode (one decode step per later emission).
func (st *stream) modelFloors(uncached, decodeSteps int) (ttft, decode time.Duration) {
	cfg := &st.s.cfg
	ttft = ms(cfg.TTFTMs) + time.Duration(float64(uncached)*cfg.PrefillMsPerToken*float64(time.Millisecond))
	return ttft, time.Duration(max(0, decodeSteps)) * ms(cfg.ITLMs)
}

// maxRatio caps a lag ratio (a part the model gave no time): past every
// bucket bound, and finite, so the histogram's sum stays a number.
const maxRatio = 1e6

// part is how much a lag stretched a part of a request the model gave
// model: 0 for a lag of at most BehindFloor.
func part(lag, model time.Duration) float64 {
	switch {
	case lag <= BehindFloor:
		return 0
	case model <= 0:
		return maxRatio
	}
	return min(maxRatio, float64(lag)/float64(model))
}

// ttftRatio, decodeRatio and e2eRatio are how much the lag stretched the
// request's time to first token, its decode and the whole of it.
func (l requestLag) ttftRatio() float64   { return part(l.lagFirst, l.ttft) }
func (l requestLag) decodeRatio() float64 { return part(max(0, l.lagLast-l.lagFirst), l.decode) }
func (l requestLag) e2eRatio() float64    { return part(l.lagLast, l.ttft+l.decode) }

// ratio is the larger of the time to first token's and the decode's.
func (l requestLag) ratio() float64 { return max(l.ttftRatio(), l.decodeRatio()) }

// behind reports whether the lag stretched the request's time to first
// token or its decode by more than BehindShare of the model's and BehindFloor.
func (l requestLag) behind() bool { return l.ratio() > BehindShare }

// countLag adds a completed request's lag to the simulator's counters.
func (st *stream) countLag() {
	l, ok := st.lag()
	if !ok {
		return
	}
	m := st.s.m
	m.reqLagNs.Add(int64(l.lagLast))
	m.lagRatio.observe(l.ratio())
	m.lagTTFT.observe(l.ttftRatio())
	m.lagDecode.observe(l.decodeRatio())
	m.lagE2E.observe(l.e2eRatio())
}
