package trace

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/result"
)

// levelKey names the level a record belongs to.
type levelKey struct {
	stage string
	level int
}

// Runner is a Runner trace read back: the requests, and a note for the
// stage's warnings when some records had to be completed.
type Runner struct {
	Requests []Request
	// Note says how many records carried no length and what they were
	// given ("" when every record had its own).
	Note string
}

// ParseRunner reads Runner's own requests.jsonl: the measured requests of
// one level of an earlier run (o.Stage and o.Level pick it when the file
// holds several). Each request arrives when it was due (its start minus its
// dispatch lag: the schedule the run kept, however late it sent), asks for
// its recorded max_tokens, and has its recorded prompt length (the server's
// count) and, for file or inline prompts, the index of the prompt it sent.
// Warm-ups and probe requests are skipped (the probes rode beside the load,
// they were not of it), and so is a last line a kill -9 cut short. A record
// without a length (a failed request, or a server that reports no usage) is
// given the mean of the others, and Note says so. problem is "" or what is
// wrong with the file as a whole: no measured request, or several levels
// and none chosen.
func ParseRunner(data []byte, o Options, bad Bad) (tr Runner, problem string) {
	var recs []record
	levels := map[levelKey]int{}
	eachLine(data, func(line int, b []byte, last bool) {
		var r result.Request
		if err := json.Unmarshal(b, &r); err != nil {
			if !last { // the one record a kill -9 may cut short
				bad(line, "not a request record of requests.jsonl: "+jsonMsg(err))
			}
			return
		}
		if r.Warmup || r.ProbeRequest || (o.Stage != "" && r.Stage != o.Stage) || (o.Level >= 0 && r.Level != o.Level) {
			return
		}
		if r.Start.IsZero() {
			bad(line, `the record has no "start" time`)
			return
		}
		recs = append(recs, record{&r, line})
		levels[levelKey{r.Stage, r.Level}]++
	})
	if len(levels) > 1 {
		return tr, "holds the measured requests of " + levelList(levels) + ": choose one with stage and level"
	}
	if len(recs) == 0 {
		return tr, "holds no measured request" + selected(o)
	}
	tr.Requests, tr.Note = runnerRequests(recs)
	return tr, ""
}

// record is a request record and its line in the file.
type record struct {
	*result.Request
	line int
}

// runnerRequests turns the records into requests arriving on their due
// times, completing missing lengths with the others' means.
func runnerRequests(recs []record) ([]Request, string) {
	due := func(r record) time.Time {
		return r.Start.Add(-time.Duration(math.Round(r.DispatchLagMs * float64(time.Millisecond))))
	}
	t0 := due(recs[0])
	for _, r := range recs {
		if d := due(r); d.Before(t0) {
			t0 = d
		}
	}
	out := make([]Request, len(recs))
	var inSum, outSum, inN, outN, missing int
	for i, r := range recs {
		q := Request{At: due(r).Sub(t0), Input: r.InputTokens, Output: max(r.MaxTokens, r.OutputTokens), Prompt: -1, Line: r.line}
		if r.Prompt != nil {
			q.Prompt = *r.Prompt
		}
		if q.Input > 0 {
			inSum, inN = inSum+q.Input, inN+1
		}
		if q.Output > 0 {
			outSum, outN = outSum+q.Output, outN+1
		}
		if q.Input == 0 || q.Output == 0 {
			missing++
		}
		out[i] = q
	}
	meanIn, meanOut := meanOr(inSum, inN), meanOr(outSum, outN)
	for i := range out {
		if out[i].Input == 0 {
			out[i].Input = meanIn
		}
		if out[i].Output == 0 {
			out[i].Output = meanOut
		}
	}
	sortByArrival(out)
	note := ""
	if missing > 0 {
		note = fmt.Sprintf("%d of the trace's %d recorded requests carried no prompt or output length (they failed, or the server reported no usage): they are replayed at the others' means, %d input and %d output tokens",
			missing, len(out), meanIn, meanOut)
	}
	return out, note
}

// meanOr is the rounded mean, or 1 token when nothing was counted.
func meanOr(sum, n int) int {
	if n == 0 {
		return 1
	}
	return max(1, int(math.Round(float64(sum)/float64(n))))
}

// levelList names the levels records came from, as "stage/level" pairs.
func levelList(levels map[levelKey]int) string {
	keys := slices.SortedFunc(maps.Keys(levels), func(a, b levelKey) int {
		if c := strings.Compare(a.stage, b.stage); c != 0 {
			return c
		}
		return a.level - b.level
	})
	parts := make([]string, 0, min(len(keys), 8))
	for i, k := range keys {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("stage %q level %d (%d requests)", k.stage, k.level, levels[k]))
	}
	return fmt.Sprintf("%d levels: %s", len(keys), strings.Join(parts, ", "))
}

// selected says which records were looked for.
func selected(o Options) string {
	switch {
	case o.Stage != "" && o.Level >= 0:
		return fmt.Sprintf(" of stage %q level %d", o.Stage, o.Level)
	case o.Stage != "":
		return fmt.Sprintf(" of stage %q", o.Stage)
	case o.Level >= 0:
		return fmt.Sprintf(" of level %d", o.Level)
	}
	return ""
}
