// Package trace reads request traces into what a replay needs: each
// request's arrival time, prompt and output lengths, and the prefix blocks
// its prompt shares with others. It reads Mooncake JSONL (timestamp in ms,
// input_length, output_length, hash_ids), the Azure LLM inference traces'
// CSV (TIMESTAMP, ContextTokens, GeneratedTokens) and Runner's own
// requests.jsonl, and computes what a trace says on its own: its span and
// rates, its length distributions and the prefix-cache hit rate its hash ids
// imply (Summarize, ImpliedHitRate).
//
// It is a leaf of pure functions over bytes: the plan loader parses trace
// files with it (so a bad line is a plan error at load time), and the engine
// replays the requests it returns.
package trace

import (
	"slices"
	"time"
)

// Request is one request of a trace.
type Request struct {
	// At is when the request arrives, from the trace's origin (Mooncake:
	// its timestamp; Azure: from the first row; Runner: from the first
	// record's due time).
	At time.Duration
	// Input and Output are the prompt and output lengths in tokens.
	Input, Output int
	// Blocks are the hash ids of the prompt's blocks, in order: each stands
	// for the plan's block_tokens tokens, the last for the rest of the
	// prompt. Requests with the same leading ids share that prefix. Nil when
	// the trace has none (the prompt shares nothing).
	Blocks []int64
	// Prompt is the index of the prompt a recorded request sent in its
	// prompt set (Runner traces of file or inline prompts), or -1.
	Prompt int
	// Line is the request's line in the trace file, for messages.
	Line int
}

// sortByArrival orders requests by arrival time, keeping the file's order
// among requests that arrive together (it decides which of them finds the
// other's prefix cached).
func sortByArrival(reqs []Request) {
	slices.SortStableFunc(reqs, func(a, b Request) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
}

// Window returns the requests (sorted by arrival, as every parser here
// returns them) that arrive in [start, end), end 0 meaning the trace's end,
// and of those the first n (n 0: all), re-timed so that the first arrives at
// 0: a replay starts with its first request, as an open-loop level does.
// The requests are copied; reqs is not changed.
func Window(reqs []Request, start, end time.Duration, n int) []Request {
	lo := 0
	for lo < len(reqs) && reqs[lo].At < start {
		lo++
	}
	hi := lo
	for hi < len(reqs) && (end <= 0 || reqs[hi].At < end) && (n <= 0 || hi-lo < n) {
		hi++
	}
	out := slices.Clone(reqs[lo:hi])
	if len(out) > 0 {
		t0 := out[0].At
		for i := range out {
			out[i].At -= t0
		}
	}
	return out
}

// Offsets returns the requests' send times on the replay's clock: their
// arrival times divided by speedup (2 replays twice as fast).
func Offsets(reqs []Request, speedup float64) []time.Duration {
	if !(speedup > 0) {
		speedup = 1
	}
	out := make([]time.Duration, len(reqs))
	for i, r := range reqs {
		out[i] = time.Duration(float64(r.At) / speedup)
	}
	return out
}

// HasBlocks reports whether any request carries hash ids.
func HasBlocks(reqs []Request) bool {
	return slices.ContainsFunc(reqs, func(r Request) bool { return len(r.Blocks) > 0 })
}
