package scenario

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"github.com/runnerbench/runner/scenario/promptfile"
	"github.com/runnerbench/runner/trace"
)

// MaxSpeedup bounds replay.speedup: beyond it a trace of a day is replayed in
// under a tenth of a second, which is a typo, not a benchmark.
const MaxSpeedup = 1_000_000

// traceSet checks a prompt set's trace block (the file is read later, by
// loadTrace).
func (v *validator) traceSet(path string, ps *PromptSet) {
	tr, tp := ps.Trace, path+".trace"
	if ps.Turns > 1 {
		v.errf(path+".turns", "%s: turns does not apply to a trace: each request of the trace is sent as it is", path)
	}
	if tr.File == "" {
		v.errf(tp, "%s: missing file", tp)
	}
	switch {
	case tr.Format == "":
		v.errf(tp, "%s: missing format: mooncake, azure or runner", tp)
	default:
		enum(v, tp+".format", tr.Format, TraceFormats)
	}
	if v.has(tp+".block_tokens") && tr.Format != TraceMooncake {
		v.errf(tp+".block_tokens", "%s: block_tokens applies to mooncake traces only (their hash_ids)", tp)
	} else if tr.BlockTokens < 0 || tr.BlockTokens > MaxTokens || (tr.BlockTokens == 0 && v.has(tp+".block_tokens")) {
		v.errf(tp+".block_tokens", "%s: block_tokens must be between 1 and %d, got %d", tp, MaxTokens, tr.BlockTokens)
	}
	for _, f := range []string{"prompts", "stage", "level"} {
		if v.has(tp+"."+f) && tr.Format != TraceRunner {
			v.errf(tp+"."+f, "%s: %s applies to runner traces only (a run's requests.jsonl)", tp, f)
		}
	}
	if tr.Level != nil && *tr.Level < 0 {
		v.errf(tp+".level", "%s: level is a level's index in its stage, from 0; got %d", tp, *tr.Level)
	}
	if tr.Prompts != "" {
		switch other, ok := v.plan.Prompts[tr.Prompts]; {
		case !ok:
			v.errf(tp+".prompts", "%s: unknown prompt set %q%s", tp, tr.Prompts, refHint(tr.Prompts, slices.Sorted(maps.Keys(v.plan.Prompts))))
		case other == nil || other.File == "" && len(other.Inline) == 0:
			v.errf(tp+".prompts", "%s: prompt set %q is not a file or inline prompt set: a recorded request names the file or inline prompt it sent", tp, tr.Prompts)
		}
	}
}

// stageReplay checks a stage whose prompts are a trace: its load comes from
// the trace, so the open and closed loops' settings do not apply.
func (v *validator) stageReplay(path string, s *Stage) {
	why := fmt.Sprintf("stage replays the trace of prompt set %q, whose arrivals are the trace's", s.Prompts)
	for _, f := range []struct{ key, fix string }{
		{"concurrency", "replay.speedup sets the pace"},
		{"rate", "replay.speedup sets the pace"},
		{"users", "replay.speedup sets the pace"},
		{"series", "replay.speedup sets the pace"},
		{"arrival", "the trace's timestamps are the arrivals"},
		{"burstiness", "the trace's timestamps are the arrivals"},
		{"ramp", "the trace's timestamps are the arrivals"},
		{"duration", "replay.start and replay.end cut the trace (requests takes its first N)"},
		{"output_tokens", "each request asks for its trace's output length as max_tokens"},
	} {
		if v.has(path + "." + f.key) {
			v.errf(path+"."+f.key, "%s: %s does not apply: the %s; %s", path, f.key, why, f.fix)
		}
	}
	r := s.Replay
	if r == nil {
		return
	}
	rp := path + ".replay"
	if v.has(rp+".speedup") && (!(r.Speedup > 0) || r.Speedup > MaxSpeedup || math.IsInf(r.Speedup, 0)) {
		v.errf(rp+".speedup", "%s: speedup must be above 0 and at most %d, got %g", rp, MaxSpeedup, r.Speedup)
	}
	v.nonNegDur(rp+".start", r.Start)
	v.nonNegDur(rp+".end", r.End)
	if r.End > 0 && r.End <= r.Start {
		v.errf(rp+".end", "%s: end %s is not after start %s", rp, r.End, r.Start)
	}
}

// MaxTraceFileBytes bounds a trace file: every request of it is held (its
// arrival, lengths and prefix blocks), so the bound is on the file.
const MaxTraceFileBytes = 64 << 20

// loadTrace reads a prompt set's trace file (path is the prompt set's).
// Every malformed line is an error at its line in the file.
func (v *validator) loadTrace(path string, tr *Trace) {
	if tr.File == "" || !slices.Contains(TraceFormats, tr.Format) {
		return // reported by validate
	}
	data, ok := v.readPlanFile(path+".trace.file", tr.File, "trace file", MaxTraceFileBytes)
	if !ok {
		return
	}
	fe := &promptfile.Errors{Report: v.fileProblem(v.inDir(tr.File))}
	bad := func(line int, msg string) { fe.Add(line, "%s", msg) }
	o := trace.Options{BlockTokens: tr.BlockTokens, MaxTokens: MaxTokens, Stage: tr.Stage, Level: -1}
	if tr.Level != nil {
		o.Level = *tr.Level
	}
	problem := ""
	switch tr.Format {
	case TraceMooncake:
		tr.Requests = trace.ParseMooncake(data, o, bad)
	case TraceAzure:
		tr.Requests = trace.ParseAzure(data, o, bad)
	case TraceRunner:
		var r trace.Runner
		r, problem = trace.ParseRunner(data, o, bad)
		tr.Requests, tr.Note = r.Requests, r.Note
	}
	switch {
	case fe.N > 0:
	case problem != "":
		v.errf(path+".trace.file", "%s.trace.file: trace file %q %s", path, tr.File, problem)
	case len(tr.Requests) == 0 && fe.N == 0:
		v.errf(path+".trace.file", "%s.trace.file: trace file %q holds no requests", path, tr.File)
	}
	if fe.N > 0 || problem != "" {
		tr.Requests = nil
	}
}

// inDir is a file the plan names, as messages show it: beside the plan.
func (v *validator) inDir(name string) string {
	if !filepath.IsAbs(name) && v.dir != "" {
		return filepath.Join(v.dir, name)
	}
	return name
}

// checkTraces checks what needs the trace files read: that a runner trace's
// recorded prompts exist in the prompt set it names, and that each replay
// stage's window holds something to replay at a rate within the limits.
func (v *validator) checkTraces() {
	for _, name := range slices.Sorted(maps.Keys(v.plan.Prompts)) {
		ps := v.plan.Prompts[name]
		if ps == nil || ps.Trace == nil || ps.Trace.Prompts == "" || len(ps.Trace.Requests) == 0 {
			continue
		}
		other := v.plan.Prompts[ps.Trace.Prompts]
		if other == nil || len(other.Loaded) == 0 {
			continue
		}
		fe := &promptfile.Errors{Report: v.fileProblem(v.inDir(ps.Trace.File))}
		held := make(map[int]bool, len(other.Loaded))
		for _, p := range other.Loaded {
			held[p.Index] = true
		}
		last := other.Loaded[len(other.Loaded)-1].Index // held in file order
		for _, r := range ps.Trace.Requests {
			if r.Prompt >= 0 && !held[r.Prompt] {
				fe.Add(r.Line, "the record sent prompt %d, but prompt set %q holds %d prompts", r.Prompt, ps.Trace.Prompts, last+1)
			}
		}
	}
	for i, s := range v.plan.Stages {
		if s == nil || s.Replay == nil {
			continue
		}
		ps, r := v.plan.Prompts[s.Prompts], s.Replay
		if ps == nil || ps.Trace == nil || len(ps.Trace.Requests) == 0 || !(r.Speedup > 0) || (r.End > 0 && r.End <= r.Start) {
			continue // nothing to replay, or a window already reported
		}
		v.replayWindow(fmt.Sprintf("stages[%d]", i), s, ps.Trace)
	}
}

// replayWindow checks what a replay stage sends: at least two requests, at
// two or more times, at a mean rate within MaxRate.
func (v *validator) replayWindow(path string, s *Stage, tr *Trace) {
	r := s.Replay
	if len(s.Requests.List) > 0 {
		v.errf(path+".requests", "%s: a replay is one level: give requests as one count (the window's first N), not a list", path)
		return
	}
	w := trace.Window(tr.Requests, r.Start.D(), r.End.D(), s.Requests.Each)
	at := path + ".replay"
	if !v.has(at) {
		at = path + ".prompts"
	}
	switch n := len(w); {
	case n < 2:
		v.errf(at, "%s: the replay's window holds %d of the trace's %d requests: a replay needs at least two (check replay.start, replay.end and requests)", path, n, len(tr.Requests))
	case w[n-1].At == 0:
		v.errf(at, "%s: the %d requests of the replay's window all arrive at the same time: there is no clock to replay", path, n)
	default:
		if rate := float64(n-1) / (w[n-1].At.Seconds() / r.Speedup); rate > MaxRate {
			v.errf(at, "%s: the replay's mean rate is %.0f requests/s, above the %g limit (lower replay.speedup)", path, rate, MaxRate)
		}
	}
}
