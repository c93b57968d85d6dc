package diagnosis

import (
	"fmt"
	"strings"

	"github.com/runnerbench/runner/result"
)

// limitNames are the causes that name a limit, as a sentence says them.
var limitNames = map[string]string{
	result.CauseBatchFull:    "a full batch",
	result.CauseKVCacheFull:  "the KV cache",
	result.CausePrefillBound: "prefill",
	result.CauseDecodeBound:  "decode",
	result.CauseClientBound:  "the client",
	result.CauseRateLimited:  "rate limiting (HTTP 429)",
	result.CauseFailing:      "failing requests",
}

// Change says, in one sentence, how the limit changed from a baseline's
// diagnosis to a new run's ("The KV cache is no longer the limit: a full
// batch is, from c=16 (it was from c=24)."), or "" when the cause is the
// same, neither names a limit, or either has no diagnosis.
func Change(base, cur *result.Diagnosis) string {
	if base == nil || cur == nil || base.Cause == cur.Cause {
		return ""
	}
	was, wasLimit := limitNames[base.Cause]
	now, isLimit := limitNames[cur.Cause]
	var s string
	switch {
	case wasLimit && isLimit:
		s = fmt.Sprintf("%s is no longer the limit: %s is, from %s (it was from %s).", was, now, from(cur), from(base))
	case wasLimit && cur.Cause == result.CauseNone:
		s = fmt.Sprintf("%s is no longer the limit: no level of the new run left the knee's factor.", was)
	case wasLimit:
		s = fmt.Sprintf("%s is no longer shown to be the limit: what limits the new run is not determined.", was)
	case isLimit && base.Cause == result.CauseNone:
		s = fmt.Sprintf("%s is now the limit, from %s; no level of the baseline left the knee's factor.", now, from(cur))
	case isLimit:
		s = fmt.Sprintf("%s is now the limit, from %s; what limited the baseline was not determined.", now, from(cur))
	default:
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Name is a cause as a person reads it: "a full batch", "the KV cache",
// "none within the sweep", "not determined (no telemetry)".
func Name(cause string) string {
	if n, ok := limitNames[cause]; ok {
		return n
	}
	switch cause {
	case result.CauseNone:
		return "none within the sweep"
	case result.CauseNoTelemetry:
		return "not determined (no telemetry)"
	case result.CausePrefixCache:
		return "an undefeated prefix cache"
	}
	return "not determined"
}

// Headline is a diagnosis in one line: "knee c=4 · saturation c=4 · limit:
// a full batch (batch_full)"; a knee the sweep never left reads "knee ≥
// c=32", no saturation "no saturation".
func Headline(d *result.Diagnosis) string {
	knee := "no knee"
	if k := d.Knee; k != nil && k.Beyond {
		knee = "knee ≥ " + k.Level
	} else if k != nil {
		knee = "knee " + k.Level
	}
	sat := "no saturation"
	if s := d.Saturation; s != nil {
		sat = "saturation " + s.Level
	}
	return fmt.Sprintf("%s · %s · limit: %s (%s)", knee, sat, Name(d.Cause), d.Cause)
}

// from is the level the diagnosis's cause holds from.
func from(d *result.Diagnosis) string {
	for _, f := range d.Findings {
		if f.Cause == d.Cause {
			return f.From
		}
	}
	return d.Lightest
}
