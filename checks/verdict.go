package checks

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
)

// Verdict decides a run once, for everyone who reads it (report.json, the
// reporters, the exit code): pass only when the run completed, every stage
// ran, no level had every request fail, and no fail-severity check failed.
// A level whose every request failed is a run that could not be carried
// out, never a pass with slow numbers.
func Verdict(rep *result.Report) string {
	if gate, _ := GateProblem(rep); rep.StopReason != result.StopCompleted || len(RunProblems(rep)) > 0 || len(FailedChecks(rep)) > 0 || gate != "" {
		return result.StatusFail
	}
	return result.StatusPass
}

// GateProblem says why the comparison with the baseline fails the run ("":
// it does not): it gated nothing at all (invalid: the baseline has nothing
// in common with the run, an error of the command line), or, with
// --fail-inconclusive, it could judge nothing it matched.
func GateProblem(rep *result.Report) (msg string, invalid bool) {
	s := rep.Comparison
	switch {
	case s == nil:
		return "", false
	case s.NothingGated != "":
		return "nothing was gated: " + s.NothingGated, true
	case s.FailInconclusive && s.Blind():
		return "--fail-inconclusive: the comparison with the baseline judged nothing: " + s.Headline(), false
	}
	return "", false
}

// RunProblems lists what kept the run from being carried out: stages that
// could not run, levels whose every request failed (with the first error).
func RunProblems(rep *result.Report) []string {
	var out []string
	for _, st := range rep.Stages {
		if st.Error != "" {
			out = append(out, fmt.Sprintf("stage %s: %s", st.Name, st.Error))
		}
		for _, pt := range st.Points {
			if rep.Shard == nil && Unmeasured(&st, &pt) { // a shard's part of a level may be empty
				out = append(out, fmt.Sprintf("stage %s %s: no request was measured", st.Name, pt.Label()))
			}
			if Unserved(&st, &pt) {
				msg := fmt.Sprintf("stage %s %s: every request failed", st.Name, pt.Label())
				if pt.Error != nil {
					msg += " (first: " + *pt.Error + ")"
				}
				if hint := FailureHint(&st, &pt); hint != "" {
					msg += ": " + hint
				}
				out = append(out, msg)
			}
		}
	}
	return out
}

// Unserved reports whether p is a level of st the run could not carry out:
// every request failed. A search's probe past what the server can take may
// fail every request, and that is the search's answer there (its targets
// fail), not a run that could not be carried out, unless no probe of the
// search was served at all.
func Unserved(st *result.Stage, p *result.Point) bool {
	if !AllFailed(p) {
		return false
	}
	return p.Probe == 0 || !slices.ContainsFunc(st.Points, func(q result.Point) bool { return q.Completed > 0 })
}

// Unmeasured reports whether p is a level of st that measured no request
// and that nothing else accounts for: not an interrupted level (the stop
// reason says why), not a level of a stage that could not run (its error
// says why). Its checks are skipped (nothing to judge), so it must fail the
// run itself: a run whose every check was skipped on empty levels is not a
// pass.
func Unmeasured(st *result.Stage, p *result.Point) bool {
	return p.NRequests == 0 && !p.Interrupted && !st.Interrupted && st.Error == ""
}

// AllFailed reports whether a level sent requests and none succeeded.
func AllFailed(p *result.Point) bool { return p.NRequests > 0 && p.Completed == 0 }

// FailedChecks names the fail-severity checks that failed, as
// "stage / level / check" (stage-scope checks without the level).
func FailedChecks(rep *result.Report) []string {
	var out []string
	for _, st := range rep.Stages {
		for _, c := range st.Checks {
			if c.Status != result.StatusFail {
				continue
			}
			name := st.Name + " / " + c.Name
			if c.LevelLabel != "" {
				name = st.Name + " / " + c.LevelLabel + " / " + c.Name
			}
			out = append(out, name)
		}
	}
	return out
}

// FailureHint says what most likely went wrong when every request of a
// level failed the same way, or "" when it has no guess:
//   - every request answered 404 saying the server does not serve the
//     endpoint's model (protocol.ModelNotFound): the model is wrong, not
//     the API or base_url;
//   - every request answered HTTP 404 and the stage's base_url has no /v1
//     path segment, the mistake behind most 404s (OpenAI-compatible servers
//     serve /v1/chat/completions; base_url is the API root, /v1 included);
//   - every request answered 404, 405 or 501 (llama-server's answer to an
//     API it was not started for: "Start it with --embeddings"), or a 200 of
//     another media type than the stage's API answers with (an event stream
//     where a JSON answer was due, or the reverse): the endpoint does not
//     serve the stage's API at the path tried, which the hint names.
func FailureHint(st *result.Stage, p *result.Point) string {
	if !AllFailed(p) || len(p.ErrorsByKind) != 1 {
		return ""
	}
	base := st.Endpoint.BaseURL
	if p.ErrorsByKind["http_404"] == p.Failed && protocol.ModelNotFound(errorSample(p, "http_404"), st.Endpoint.Model) {
		return fmt.Sprintf("the server does not serve model %q (it answered 404 to every request, saying so): set the endpoint's model to one GET %s lists",
			st.Endpoint.Model, strings.TrimRight(strings.SplitN(base, "?", 2)[0], "/")+"/models")
	}
	if p.ErrorsByKind["http_404"] == p.Failed && !rooted(st.API) { // a rooted API's path drops /v1: adding it changes nothing
		u, err := url.Parse(base)
		if err == nil && !slices.Contains(strings.Split(u.Path, "/"), "v1") {
			return fmt.Sprintf("base_url %s has no /v1, and OpenAI-compatible servers serve /v1/chat/completions and /v1/completions: did you mean base_url: %s/v1?",
				base, strings.TrimRight(base, "/"))
		}
	}
	return unservedAPI(st, p)
}

// errorSample is the first answer of a failure kind that p kept.
func errorSample(p *result.Point, kind string) string {
	if s, ok := p.ErrorSamples[kind]; ok {
		return s
	}
	if p.Error != nil {
		return *p.Error
	}
	return ""
}

// unservedAPI is the hint for a level whose every request says the endpoint
// does not serve the stage's API ("" when they do not all say so).
func unservedAPI(st *result.Stage, p *result.Point) string {
	proto, ok := protocol.Lookup(st.API)
	if !ok {
		return ""
	}
	where := "POST " + apiURL(proto, st.Endpoint.BaseURL)
	for _, code := range []string{"http_404", "http_405", "http_501"} {
		if p.ErrorsByKind[code] == p.Failed {
			return fmt.Sprintf("the endpoint does not serve api: %s (%s answered %s to every request)", st.API, where, strings.TrimPrefix(code, "http_"))
		}
	}
	if p.ErrorsByKind[result.ErrMalformed] == p.Failed && p.Error != nil && strings.Contains(*p.Error, "200 response is not ") {
		return fmt.Sprintf("the endpoint does not serve api: %s at %s (it answered every request with another kind of response than %s)", st.API, where, proto.Describe())
	}
	return ""
}

// rooted reports whether api's path is at the server's root
// (protocol.Rooted), not under base_url.
func rooted(api string) bool {
	p, _ := protocol.Lookup(api)
	_, ok := p.(protocol.Rooted)
	return ok
}

// apiURL is where p's requests went for base_url base (as a report shows
// it): the path goes before base's query, as the engine sends it.
func apiURL(p protocol.Protocol, base string) string {
	query := ""
	if i := strings.IndexByte(base, '?'); i >= 0 {
		base, query = base[:i], base[i:]
	}
	return protocol.URL(p, strings.TrimRight(base, "/")) + query
}
