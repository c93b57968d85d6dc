package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/result"
)

// Traffic as people make it: users who think between requests and hold a
// session each, requests given up on (cancel_*). Each
// setting is a stage field, validated here and compiled into the
// LoadPlan; the engine draws each request's part with the stage's seed.

// Cancel is when a stage's requests are given up on: After their send (0:
// not by time) or after Tokens token chunks (0: not by tokens), whichever
// comes first, for a Share of them drawn with the seed; with neither After
// nor Tokens, each of the Share gives up after a number of token chunks
// drawn uniformly below its max_tokens.
type Cancel struct {
	After  time.Duration
	Tokens int
	Share  float64
}

// cancel is the stage's Cancel, nil when its requests are never given up on.
func (s *Stage) cancel() *Cancel {
	if s.CancelAfter <= 0 && s.CancelAfterTokens <= 0 && s.CancelShare <= 0 {
		return nil
	}
	c := &Cancel{After: s.CancelAfter.D(), Tokens: s.CancelAfterTokens, Share: s.CancelShare}
	if c.Share <= 0 {
		c.Share = 1
	}
	return c
}

// stageCancel checks the cancel_* settings: a time, a count of token
// chunks within the token limit, a share in (0, 1]; by tokens only on a
// streamed API.
func (v *validator) stageCancel(path string, s *Stage) {
	v.nonNegDur(path+".cancel_after", s.CancelAfter)
	if v.has(path+".cancel_after") && s.CancelAfter == 0 {
		v.errf(path+".cancel_after", "%s: cancel_after must be longer than 0s (leave it out to never cancel by time)", path)
	}
	if n := s.CancelAfterTokens; n < 0 || n > MaxTokens || (n == 0 && v.has(path+".cancel_after_tokens")) {
		v.errf(path+".cancel_after_tokens", "%s: cancel_after_tokens must be between 1 and %d, got %d", path, MaxTokens, n)
	}
	if sh := s.CancelShare; v.has(path+".cancel_share") && !(sh > 0 && sh <= 1) || math.IsNaN(sh) {
		v.errf(path+".cancel_share", "%s: cancel_share must be above 0 and at most 1, got %g", path, sh)
	}
	api := s.API
	if api == "" {
		api = DefaultAPI
	}
	byTokens := s.CancelAfterTokens > 0 || (s.CancelShare > 0 && s.CancelAfter == 0)
	if byTokens && !streams(api) {
		at := path + ".cancel_after_tokens"
		if s.CancelAfterTokens == 0 {
			at = path + ".cancel_share"
		}
		v.errf(at, "%s: api %s answers in one piece, with no tokens to give up after: use cancel_after (a time)", path, api)
	}
}

// Users: a closed loop of people, each holding one conversation at a time
// and thinking between requests.

// MaxThinkTime bounds a think time (any draw is cut there).
const MaxThinkTime = time.Hour

// ThinkTime is how long a user waits before each request after their
// first: Fixed, or drawn with the seed: uniform in [Min, Max], normal
// (Mean, Stdev) clipped to [Min, Max] (Min at least 0), or exponential of
// mean Exponential. In YAML a duration ("2s") or a mapping.
type ThinkTime struct {
	Fixed       Duration `yaml:"-" json:"-"`
	Min         Duration `yaml:"min,omitempty" json:"min,omitempty"`
	Max         Duration `yaml:"max,omitempty" json:"max,omitempty"`
	Mean        Duration `yaml:"mean,omitempty" json:"mean,omitempty"`
	Stdev       Duration `yaml:"stdev,omitempty" json:"stdev,omitempty"`
	Exponential Duration `yaml:"exponential,omitempty" json:"exponential,omitempty"`
}

// thinkFields is ThinkTime's mapping form.
type thinkFields struct {
	Min         Duration `yaml:"min,omitempty" json:"min,omitempty"`
	Max         Duration `yaml:"max,omitempty" json:"max,omitempty"`
	Mean        Duration `yaml:"mean,omitempty" json:"mean,omitempty"`
	Stdev       Duration `yaml:"stdev,omitempty" json:"stdev,omitempty"`
	Exponential Duration `yaml:"exponential,omitempty" json:"exponential,omitempty"`
}

// IsFixed reports whether the think time is one duration.
func (t ThinkTime) IsFixed() bool { return t.fields() == thinkFields{} }

func (t ThinkTime) fields() thinkFields {
	return thinkFields{t.Min, t.Max, t.Mean, t.Stdev, t.Exponential}
}

// thinkTime is the think time a mapping gives (fields' inverse).
func (f thinkFields) thinkTime() ThinkTime {
	return ThinkTime{Min: f.Min, Max: f.Max, Mean: f.Mean, Stdev: f.Stdev, Exponential: f.Exponential}
}

// UnmarshalYAML reads a duration or a mapping (the loader has checked a
// mapping's keys strictly before it calls this).
func (t *ThinkTime) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var d Duration
		if err := d.UnmarshalYAML(n); err != nil {
			return err
		}
		*t = ThinkTime{Fixed: d}
		return nil
	}
	var f thinkFields
	if err := n.Decode(&f); err != nil {
		return err
	}
	*t = f.thinkTime()
	return nil
}

// MarshalYAML writes a fixed think time as a duration, any other as a mapping.
func (t ThinkTime) MarshalYAML() (any, error) {
	if t.IsFixed() {
		return t.Fixed.String(), nil
	}
	return t.fields(), nil
}

// MarshalJSON writes a fixed think time as a duration string, any other as
// an object.
func (t ThinkTime) MarshalJSON() ([]byte, error) {
	if t.IsFixed() {
		return json.Marshal(t.Fixed.String())
	}
	return json.Marshal(t.fields())
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (t *ThinkTime) UnmarshalJSON(b []byte) error {
	var d Duration
	if err := d.UnmarshalJSON(b); err == nil {
		*t = ThinkTime{Fixed: d}
		return nil
	}
	var f thinkFields
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("expected a duration or an object: %w", err)
	}
	*t = f.thinkTime()
	return nil
}

// Draw draws one think time from r (a fixed one draws nothing), at most
// MaxThinkTime.
func (t ThinkTime) Draw(r *rand.Rand) time.Duration {
	var d float64
	switch {
	case t.IsFixed():
		return t.Fixed.D()
	case t.Exponential > 0:
		d = r.ExpFloat64() * float64(t.Exponential)
	case t.Mean > 0 || t.Stdev > 0:
		d = float64(t.Mean) + r.NormFloat64()*float64(t.Stdev)
		d = max(d, float64(t.Min))
		if t.Max > 0 {
			d = min(d, float64(t.Max))
		}
	default:
		d = float64(t.Min) + r.Float64()*float64(t.Max-t.Min)
	}
	return time.Duration(min(max(d, 0), float64(MaxThinkTime)))
}

// Nominal is the think time's mean as given: the fixed value, the mean,
// the exponential's mean, or the uniform range's midpoint.
func (t ThinkTime) Nominal() time.Duration {
	switch {
	case t.IsFixed():
		return t.Fixed.D()
	case t.Exponential > 0:
		return t.Exponential.D()
	case t.Mean > 0 || t.Stdev > 0:
		return t.Mean.D()
	}
	return (t.Min.D() + t.Max.D()) / 2
}

// closedLevels are the stage's levels of a closed loop, and the label's
// name for them: its concurrencies ("c") or its users ("users"); nil for
// any other load.
func (s *Stage) closedLevels() ([]int, string) {
	if len(s.Users) > 0 {
		return s.Users, "users"
	}
	if len(s.Concurrency) > 0 {
		return s.Concurrency, "c"
	}
	return nil, ""
}

// stageUsers checks a users stage's levels, and what only a users stage
// takes (think_time); session_header may go with any stage.
func (v *validator) stageUsers(path string, s *Stage) {
	if v.has(path + ".users") {
		levelList(v, path+".users", "users", s.Users, func(u int) bool { return u >= 1 && u <= MaxConcurrency },
			fmt.Sprintf("must be between 1 and %d", MaxConcurrency))
		if s.MaxConcurrency != 0 {
			v.errf(path+".max_concurrency", "%s: max_concurrency applies to rate (open-loop) stages only", path)
		}
		if s.Arrival != "" {
			v.errf(path+".arrival", "%s: arrival applies to rate (open-loop) stages only", path)
		}
	}
	if t := s.ThinkTime; t != nil {
		if len(s.Users) == 0 {
			v.errf(path+".think_time", "%s: think_time applies to users stages only (users: [...]): a closed loop's streams send at once, an open loop's arrivals when due", path)
		}
		v.thinkTime(path+".think_time", *t)
	}
	if h := s.SessionHeader; h != "" || v.has(path+".session_header") {
		switch canon := textproto.CanonicalMIMEHeaderKey(h); {
		case h == "" || strings.ContainsAny(h, " :\r\n\t") || !validToken(h):
			v.errf(path+".session_header", "%s: session_header %q is not a header name such as x-session-id", path, h)
		case slices.Contains(reservedHeaders, canon):
			v.errf(path+".session_header", "%s: session_header %q is a header Runner sets itself", path, h)
		}
	}
}

// reservedHeaders are the headers a session id may not take the place of.
var reservedHeaders = []string{"Authorization", "Content-Type", "Content-Length", "Accept", "Host", "Traceparent", "X-Api-Key", "Anthropic-Version"}

// validToken reports whether s is an RFC 9110 token (a header name).
func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// thinkTime checks a think time: durations within [0, MaxThinkTime], and a
// mapping that is one of {min, max}, {mean, stdev[, min, max]} and
// {exponential}.
func (v *validator) thinkTime(path string, t ThinkTime) {
	bad := func(format string, args ...any) { v.errf(path, "%s: "+format, append([]any{path}, args...)...) }
	for _, d := range []Duration{t.Fixed, t.Min, t.Max, t.Mean, t.Stdev, t.Exponential} {
		if d < 0 || d.D() > MaxThinkTime {
			bad("every duration must be between 0s and %s, got %s", Duration(MaxThinkTime), d)
			return
		}
	}
	normal := t.Mean > 0 || t.Stdev > 0
	switch {
	case t.Exponential > 0 && (normal || t.Min > 0 || t.Max > 0):
		bad("give exponential alone, {min, max} (uniform) or {mean, stdev} (normal)")
	case t.Exponential == 0 && v.has(path+".exponential"):
		bad("exponential's mean must be longer than 0s")
	case !t.IsFixed() && !normal && t.Exponential == 0 && t.Max <= t.Min:
		bad("a uniform think time needs min below max, got min %s max %s", t.Min, t.Max)
	case normal && t.Max > 0 && t.Max < t.Min:
		bad("min %s is above max %s", t.Min, t.Max)
	}
}

// Models: one stage's requests spread over several model names.

// MaxModels bounds a stage's models.
const MaxModels = 64

// ModelWeight is one model a stage's requests go to, and its weight: the
// share of requests it takes is its weight over the weights' sum.
type ModelWeight struct {
	// Name is the model name sent (a LoRA adapter's, or a model's behind a router).
	Name string `yaml:"name" json:"name"`
	// Weight is the model's relative share of the requests. Default 1.
	Weight *float64 `yaml:"weight,omitempty" json:"weight,omitempty"`
}

// Share is the model's weight (1 when unset).
func (m ModelWeight) Share() float64 {
	if m.Weight == nil {
		return 1
	}
	return *m.Weight
}

// models are the stage's models with their weights defaulted (nil: none).
func (s *Stage) models() []ModelWeight {
	var out []ModelWeight
	for _, m := range s.Models {
		if m == nil {
			continue
		}
		w := m.Share()
		out = append(out, ModelWeight{Name: m.Name, Weight: &w})
	}
	return out
}

// stageModels checks models: 1 to MaxModels, each a name shown in reports
// (one line, no bidirectional override), unique, with a weight ≥ 0 (not all 0).
func (v *validator) stageModels(path string, s *Stage) {
	mp := path + ".models"
	if s.Models == nil {
		return
	}
	if len(s.Models) == 0 || len(s.Models) > MaxModels {
		v.errf(mp, "%s: models lists %d models: give 1 to %d", mp, len(s.Models), MaxModels)
		return
	}
	seen, total, bad := map[string]int{}, 0.0, false
	for i, m := range s.Models {
		ip := fmt.Sprintf("%s[%d]", mp, i)
		if m == nil || strings.TrimSpace(m.Name) == "" {
			v.errf(ip, "%s: missing name", ip)
			continue
		}
		v.name(ip+".name", m.Name)
		if j, dup := seen[m.Name]; dup {
			v.errf(ip+".name", "%s: duplicate model %q (also models[%d])", ip, m.Name, j)
		}
		seen[m.Name] = i
		w := m.Share()
		if !(w >= 0) || math.IsInf(w, 0) {
			v.errf(ip+".weight", "%s: weight must be a number ≥ 0, got %g", ip, w)
			bad = true
			continue
		}
		total += w
	}
	if total == 0 && !bad && len(seen) == len(s.Models) {
		v.errf(mp, "%s: every weight is 0: no request would go anywhere", mp)
	}
}

// Probe requests: a low-rate stream of small fixed requests beside the load.

// Probe defaults and bounds.
const (
	DefaultProbeRate         = 1.0
	DefaultProbeInputTokens  = 32
	DefaultProbeOutputTokens = 16
	// MaxProbeRate bounds the probe stream: more a second is load, not a probe.
	MaxProbeRate = 100.0
)

// Probe is a stage's probe requests: Rate a second (evenly spaced, the first
// half a gap after each level's window opens), each a synthetic prompt of
// InputTokens and a pinned answer of OutputTokens, sent beside the level's
// load and reported apart from it.
type Probe struct {
	// Rate is the probes a second. Default 1; at most 100.
	Rate float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// InputTokens is each probe's prompt length. Default 32.
	InputTokens int `yaml:"input_tokens,omitempty" json:"input_tokens,omitempty"`
	// OutputTokens is each probe's answer length, pinned (ignore_eos). Default 16 (none for an API that is not streamed).
	OutputTokens int `yaml:"output_tokens,omitempty" json:"output_tokens,omitempty"`
}

// applyDefaults fills the probe's unset fields (nothing for no probe);
// streamed says whether the stage's API has output tokens.
func (p *Probe) applyDefaults(streamed bool) {
	if p == nil {
		return
	}
	if p.Rate == 0 {
		p.Rate = DefaultProbeRate
	}
	if p.InputTokens == 0 {
		p.InputTokens = DefaultProbeInputTokens
	}
	if p.OutputTokens == 0 && streamed {
		p.OutputTokens = DefaultProbeOutputTokens
	}
}

// stageProbe checks a stage's probe block.
func (v *validator) stageProbe(path string, s *Stage) {
	p := s.Probe
	if p == nil {
		return
	}
	pp := path + ".probe"
	if !(p.Rate >= 0 && p.Rate <= MaxProbeRate) || (p.Rate == 0 && v.has(pp+".rate")) {
		v.errf(pp+".rate", "%s: rate must be above 0 and at most %g probes a second (a probe stream is light: more is load), got %g", pp, MaxProbeRate, p.Rate)
	}
	for _, f := range []struct {
		key string
		n   int
	}{{"input_tokens", p.InputTokens}, {"output_tokens", p.OutputTokens}} {
		if f.n < 0 || f.n > MaxTokens || (f.n == 0 && v.has(pp+"."+f.key)) {
			v.errf(pp+"."+f.key, "%s: %s must be between 1 and %d, got %d", pp, f.key, MaxTokens, f.n)
		}
	}
	api := s.API
	if api == "" {
		api = DefaultAPI
	}
	switch {
	case scoresDocuments(api):
		v.errf(pp, "%s: api %s scores documents against a query: a probe is one small prompt alone, which it does not take", pp, api)
	case p.OutputTokens > 0 && !streams(api):
		v.errf(pp+".output_tokens", "%s: api %s answers in one piece, with no output tokens to ask for", pp, api)
	}
}

// Load that changes over a level: a stage's series:.

// Series limits.
const (
	MaxSeriesPieces   = 1000
	MinSeriesPiece    = time.Second
	MaxSeriesDuration = 24 * time.Hour
)

// Series is a rate or a concurrency that follows a series over one level
// instead of a list of levels: exactly one of Linear, Exponential, Steps
// and Pieces.
type Series struct {
	// Over is what the series sets: rate (open loop, requests/s) or concurrency (closed loop, streams).
	Over Over `yaml:"over" json:"over"`
	// Linear goes from from to to over duration, linearly.
	Linear *SeriesRamp `yaml:"linear,omitempty" json:"linear,omitempty"`
	// Exponential goes from from to to over duration, by the same factor every second.
	Exponential *SeriesRamp `yaml:"exponential,omitempty" json:"exponential,omitempty"`
	// Steps holds from, then from + step, ... up to to, each for duration.
	Steps *SeriesSteps `yaml:"steps,omitempty" json:"steps,omitempty"`
	// Pieces holds each load for its duration, in order.
	Pieces []*SeriesPiece `yaml:"pieces,omitempty" json:"pieces,omitempty"`
}

// SeriesRamp is a ramp from From to To over Duration.
type SeriesRamp struct {
	From     float64  `yaml:"from" json:"from"`
	To       float64  `yaml:"to" json:"to"`
	Duration Duration `yaml:"duration" json:"duration"`
}

// SeriesSteps holds From, From + Step, ... up to To, each for Duration.
type SeriesSteps struct {
	From     float64  `yaml:"from" json:"from"`
	To       float64  `yaml:"to" json:"to"`
	Step     float64  `yaml:"step" json:"step"`
	Duration Duration `yaml:"duration" json:"duration"`
}

// SeriesPiece holds Load for Duration.
type SeriesPiece struct {
	Duration Duration `yaml:"duration" json:"duration"`
	Load     float64  `yaml:"load" json:"load"`
}

// Compiled is the series as the engine and the reports read it.
func (s *Series) Compiled() *result.Series {
	out := &result.Series{Over: s.Over}
	ramp := func(r *SeriesRamp, exp bool) {
		out.Pieces = []result.SeriesPiece{{DurationS: r.Duration.D().Seconds(), From: r.From, To: r.To, Exponential: exp && r.From != r.To}}
	}
	switch {
	case s.Linear != nil:
		out.Shape = "linear"
		ramp(s.Linear, false)
	case s.Exponential != nil:
		out.Shape = "exponential"
		ramp(s.Exponential, true)
	case s.Steps != nil:
		out.Shape = "steps"
		st := s.Steps
		for i := 0; i <= MaxSeriesPieces && st.Step > 0; i++ { // one past the limit, for the validator to see
			v := st.From + float64(i)*st.Step
			if v > st.To+1e-9*math.Abs(st.To) {
				break
			}
			out.Pieces = append(out.Pieces, result.SeriesPiece{DurationS: st.Duration.D().Seconds(), From: v, To: v})
		}
	default:
		out.Shape = "pieces"
		for _, p := range s.Pieces {
			if p != nil {
				out.Pieces = append(out.Pieces, result.SeriesPiece{DurationS: p.Duration.D().Seconds(), From: p.Load, To: p.Load})
			}
		}
	}
	return out
}

// stageSeries checks a series: one shape, loads within the over's limits
// (a concurrency a whole number, an exponential's ends above 0, a peak of
// at least 1 stream or above 0 requests/s), pieces of at least a second,
// at most MaxSeriesPieces, at most a day in all; and the stage settings a
// series replaces (duration, requests, replicates) left out.
func (v *validator) stageSeries(path string, s *Stage) {
	sr := s.Series
	if sr == nil {
		return
	}
	sp := path + ".series"
	enum(v, sp+".over", sr.Over, Overs)
	if sr.Over == "" {
		v.errf(sp, "%s: missing over: rate (open loop) or concurrency (closed loop)", sp)
	}
	n := 0
	for _, set := range []bool{sr.Linear != nil, sr.Exponential != nil, sr.Steps != nil, sr.Pieces != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		v.errf(sp, "%s: give exactly one of linear, exponential, steps and pieces", sp)
		return
	}
	for _, f := range []string{"duration", "requests", "ramp"} {
		if v.has(path + "." + f) {
			v.errf(path+"."+f, "%s: %s does not apply to a series stage: the series is its one level, as long as its pieces", path, f)
		}
	}
	v.seriesShape(sp, sr)
	c := sr.Compiled()
	if len(c.Pieces) > MaxSeriesPieces {
		v.errf(sp, "%s: more than %d pieces (steps included)", sp, MaxSeriesPieces)
	}
	// Added up in seconds: pieces of centuries would overflow a Duration.
	total := 0.0
	for _, p := range c.Pieces {
		total += p.DurationS
	}
	if total > MaxSeriesDuration.Seconds() {
		h := func(secs float64) string { return strconv.FormatFloat(secs/3600, 'f', -1, 64) + "h" }
		v.errf(sp, "%s: %s in all, longer than %s", sp, h(total), h(MaxSeriesDuration.Seconds()))
	}
	// Steps that go down are already refused: they hold no piece at all.
	down := sr.Steps != nil && sr.Steps.To < sr.Steps.From
	if !down && (sr.Over == OverConcurrency && c.Peak() < 1 || sr.Over == OverRate && !(c.Peak() > 0)) {
		v.errf(sp, "%s: the series never asks for any load (its peak is %g)", sp, c.Peak())
	}
}

// seriesShape checks the numbers of a series' one shape.
func (v *validator) seriesShape(sp string, sr *Series) {
	load := func(at string, x float64, positive bool) {
		limit, whole := MaxRate, false
		if sr.Over == OverConcurrency {
			limit, whole = float64(MaxConcurrency), true
		}
		if !(x >= 0) || x > limit || (positive && x == 0) || (whole && x != math.Trunc(x)) {
			kind := "a rate between 0 and 100000 requests/s"
			if whole {
				kind = "a whole number of streams between 0 and 100000"
			}
			if positive {
				kind += ", above 0 (an exponential ramp grows by a factor)"
			}
			v.errf(at, "%s: want %s, got %g", at, kind, x)
		}
	}
	piece := func(at string, d Duration) {
		if d.D() < MinSeriesPiece {
			v.errf(at, "%s: a piece of the series lasts at least %s, got %s", at, Duration(MinSeriesPiece), d)
		}
	}
	switch {
	case sr.Linear != nil || sr.Exponential != nil:
		r, name, exp := sr.Linear, ".linear", false
		if r == nil {
			r, name, exp = sr.Exponential, ".exponential", true
		}
		load(sp+name+".from", r.From, exp)
		load(sp+name+".to", r.To, exp)
		piece(sp+name+".duration", r.Duration)
	case sr.Steps != nil:
		st := sr.Steps
		load(sp+".steps.from", st.From, false)
		load(sp+".steps.to", st.To, false)
		load(sp+".steps.step", st.Step, true)
		piece(sp+".steps.duration", st.Duration)
		if st.To < st.From {
			v.errf(sp+".steps.to", "%s.steps: to %g is below from %g", sp, st.To, st.From)
		}
	default:
		if len(sr.Pieces) == 0 {
			v.errf(sp+".pieces", "%s: pieces list is empty", sp)
		}
		for i, p := range sr.Pieces {
			ip := fmt.Sprintf("%s.pieces[%d]", sp, i)
			if p == nil {
				v.errf(ip, "%s: empty piece: give duration and load", ip)
				continue
			}
			load(ip+".load", p.Load, false)
			piece(ip+".duration", p.Duration)
		}
	}
}

// defaultSlices is a series level's slice width when the stage gives none:
// a step's length for steps, else a twentieth of the series, in whole
// seconds, at least MinSlice: the load asked for is seen beside the
// latencies it gave.
func (s *Series) defaultSlices() time.Duration {
	if s.Steps != nil {
		return min(MaxSlice, max(MinSlice, s.Steps.Duration.D()))
	}
	d := s.Compiled().Duration() / 20
	return min(MaxSlice, max(MinSlice, d.Truncate(time.Second)))
}
