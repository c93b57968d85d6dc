package scenario

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario/planfs"
)

// Upper bounds on load parameters. A plan asking for more is almost certainly
// a typo (10^9 workers would exhaust memory before sending a request), so it is
// rejected at load time rather than half-run.
const (
	MaxConcurrency = 100_000    // per level, and max_concurrency
	MaxRate        = 100_000.0  // requests per second
	MaxRequests    = 10_000_000 // per level
	MaxTokens      = 1_000_000  // any input/output length
	MaxWarmup      = 10_000     // warm-up requests per level
	MaxTurns       = 100        // turns per conversation
	MaxLevels      = 1_000      // load levels per stage
)

type validator struct {
	plan  *Plan
	probs *problems
	at    map[string]pos
	keyAt map[string]pos
	dec   *decoder
	lines []string // the plan's source lines, to place errors inside block scalars
	dir   string
	files *planfs.Roots // where the plan may read files
}

// pos returns where path's value is, or failing that its nearest present parent,
// so a message about a missing field points at the block that lacks it.
func (v *validator) pos(path string) pos {
	for {
		if p, ok := v.at[path]; ok {
			return p
		}
		if path == "" {
			return pos{1, 1}
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

func (v *validator) has(path string) bool { _, ok := v.at[path]; return ok }

func (v *validator) errf(path, format string, args ...any) {
	if v.suppressed(path) {
		return
	}
	v.probs.add(v.pos(path), format, args...)
}

// suppressed reports whether path, or a value it is part of, already has a
// decoding problem (or, for the block itself, an unknown key).
func (v *validator) suppressed(path string) bool {
	if v.dec == nil {
		return false
	}
	if v.dec.badBlock[path] {
		return true
	}
	for p := path; ; {
		if v.dec.badTree[p] {
			return true
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// enum checks that val is one of allowed (or unset).
func enum[T ~string](v *validator, path string, val T, allowed []T) {
	if val == "" || slices.Contains(allowed, val) {
		return
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	v.errf(path, "%s: %q is not one of %s%s", path, val, strings.Join(names, ", "), didYouMean(string(val), names))
}

func (v *validator) validate() {
	p := v.plan
	switch {
	case !v.has("version"):
		v.errf("", "missing version: add \"version: 1\"")
	case p.Version != 1:
		v.errf("version", "unsupported plan version %d: this runner reads version 1", p.Version)
	}
	if strings.TrimSpace(p.Name) == "" {
		v.errf("name", "missing name: every plan needs a name (it names the results directory)")
	} else if strings.ContainsAny(p.Name, "/\\\x00") || p.Name == "." || p.Name == ".." {
		v.errf("name", "name %q must not contain path separators", p.Name)
	} else {
		v.name("name", p.Name)
	}
	v.labels(p.Labels)
	if len(p.Endpoints) == 0 {
		v.errf("endpoints", "no endpoints: define at least one under endpoints:")
	}
	for _, name := range slices.Sorted(maps.Keys(p.Endpoints)) {
		v.endpoint("endpoints."+name, p.Endpoints[name])
	}
	if len(p.Prompts) == 0 {
		v.errf("prompts", "no prompts: define at least one prompt set under prompts:")
	}
	for _, name := range slices.Sorted(maps.Keys(p.Prompts)) {
		v.promptSet("prompts."+name, p.Prompts[name])
	}
	if len(p.Stages) == 0 {
		v.errf("stages", "no stages: define at least one stage under stages:")
	}
	names := map[string]int{}
	for i, s := range p.Stages {
		path := fmt.Sprintf("stages[%d]", i)
		if s == nil {
			v.errf(path, "%s: empty stage", path)
			continue
		}
		if s.Name != "" {
			if j, dup := names[s.Name]; dup {
				v.errf(path+".name", "duplicate stage name %q (also stages[%d])", s.Name, j)
			} else {
				names[s.Name] = i
			}
		}
		v.stage(path, s)
	}
	for i, e := range p.Export {
		v.export(fmt.Sprintf("export[%d]", i), e)
	}
	if p.Telemetry != nil {
		v.telemetry(p.Telemetry)
	}
}

// telemetry checks the telemetry block; a URL is shown without its credentials.
func (v *validator) telemetry(t *Telemetry) {
	if t.Interval != 0 && t.Interval < MinTelemetryInterval {
		v.errf("telemetry.interval", "telemetry.interval: %s is shorter than %s", t.Interval, MinTelemetryInterval)
	}
	v.nonNegDur("telemetry.timeout", t.Timeout)
	if t.Timeout > 0 && t.Timeout.D() > 10*t.Every() {
		v.errf("telemetry.timeout", "telemetry.timeout: %s is more than ten intervals (%s)", t.Timeout, Duration(t.Every()))
	}
	if len(t.Targets) > MaxTelemetryTargets {
		v.errf("telemetry.targets", "telemetry.targets: %d targets, more than %d", len(t.Targets), MaxTelemetryTargets)
	}
	seen := map[string]int{}
	for i, tg := range t.Targets {
		path := fmt.Sprintf("telemetry.targets[%d]", i)
		if tg == nil {
			v.errf(path, "%s: empty target: give name and url", path)
			continue
		}
		switch {
		case strings.TrimSpace(tg.Name) == "":
			v.errf(path+".name", "%s: missing name", path)
		case len(tg.Name) > 64:
			v.errf(path+".name", "%s.name: longer than 64 bytes", path)
		default:
			v.name(path+".name", tg.Name)
			if j, dup := seen[tg.Name]; dup {
				v.errf(path+".name", "%s: duplicate telemetry target name %q (also telemetry.targets[%d])", path, tg.Name, j)
			}
			seen[tg.Name] = i
		}
		if u, err := url.Parse(tg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.errf(path+".url", "%s.url: %s is not an http(s) URL such as http://127.0.0.1:9400/metrics", path, redact.URL(tg.URL))
		}
		for k := range tg.Headers {
			if strings.ContainsAny(k, " :\r\n") || k == "" {
				v.errf(path+".headers."+k, "%s: %q is not a valid header name", path, k)
			}
		}
		if len(tg.Metrics) > 256 {
			v.errf(path+".metrics", "%s.metrics: %d names, more than 256", path, len(tg.Metrics))
		}
		for j, m := range tg.Metrics {
			if !validMetricPattern(m) {
				v.errf(fmt.Sprintf("%s.metrics[%d]", path, j), "%s.metrics[%d]: %q is not a metric name, or a prefix of one ending in *", path, j, m)
			}
		}
	}
}

// validMetricPattern reports whether s is a Prometheus metric name, or a
// non-empty prefix of one followed by *.
func validMetricPattern(s string) bool {
	s, _ = strings.CutSuffix(s, "*")
	if s == "" || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// export checks one export block; a URL is shown without its credentials.
func (v *validator) export(path string, e *Export) {
	if e == nil {
		v.errf(path, "%s: empty export: give to and url", path)
		return
	}
	if !slices.Contains(ExportProtocols, e.To) {
		v.errf(path+".to", "%s.to: %q is not one of %s", path, e.To, strings.Join(ExportProtocols, ", "))
	}
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.errf(path+".url", "%s.url: %s is not an http(s) URL such as http://127.0.0.1:9090/api/v1/write", path, redact.URL(e.URL))
	}
	v.nonNegDur(path+".interval", e.Interval)
	for k := range e.Headers {
		if strings.ContainsAny(k, " :\r\n") || k == "" {
			v.errf(path+".headers."+k, "%s: %q is not a valid header name", path, k)
		}
	}
}

// labels checks the plan's labels against the limits every output relies on.
func (v *validator) labels(l result.Labels) {
	if len(l) > result.MaxLabels {
		v.errf("labels", "labels: %d labels, more than %d", len(l), result.MaxLabels)
	}
	for _, k := range l.Keys() {
		if err := result.CheckLabelKey(k); err != nil {
			at, ok := v.keyAt["labels."+k]
			if !ok {
				at = v.pos("labels." + k)
			}
			v.probs.add(at, "labels: %v", err)
		} else if err := result.CheckLabelValue(k, l[k]); err != nil {
			v.errf("labels."+k, "labels: %v", err)
		}
	}
}

func (v *validator) endpoint(path string, e *Endpoint) {
	if e == nil {
		v.errf(path, "%s: empty endpoint: give base_url or simulator", path)
		return
	}
	switch {
	case e.BaseURL == "" && e.Simulator == nil:
		v.errf(path, "%s: needs base_url or simulator", path)
	case e.BaseURL != "" && e.Simulator != nil:
		v.errf(path+".simulator", "%s: give base_url or simulator, not both", path)
	case e.BaseURL != "":
		v.httpURL(path+".base_url", e.BaseURL)
	}
	// The simulator validates its own numbers (probabilities, non-negative
	// times); each problem is placed at its field, or at the block when the
	// field was left to its default.
	if e.Simulator != nil {
		for _, p := range e.Simulator.Defaults().Problems() {
			v.errf(path+".simulator."+p.Field, "%s.simulator.%s: %s", path, p.Field, p.Msg)
		}
	}
	if e.MetricsURL != "" {
		v.httpURL(path+".metrics_url", e.MetricsURL)
	}
	v.nonNegDur(path+".ready_timeout", e.ReadyTimeout)
	v.nonNegDur(path+".timeouts.connect", e.Timeouts.Connect)
	v.nonNegDur(path+".timeouts.first_token", e.Timeouts.FirstToken)
	v.nonNegDur(path+".timeouts.idle", e.Timeouts.Idle)
	v.nonNegDur(path+".timeouts.request", e.Timeouts.Request)
	for k := range e.Headers {
		if strings.EqualFold(k, "authorization") && e.APIKey != "" {
			v.errf(path+".headers."+k, "%s: give api_key or an Authorization header, not both", path)
		}
		if strings.ContainsAny(k, " :\r\n") {
			v.errf(path+".headers."+k, "%s: %q is not a valid header name", path, k)
		}
	}
}

func (v *validator) httpURL(path, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.errf(path, "%s: %q is not an http(s) URL such as http://127.0.0.1:8000/v1", path, s)
	}
}

func (v *validator) nonNegDur(path string, d Duration) {
	if d < 0 {
		v.errf(path, "%s: duration must not be negative, got %s", path, d)
	}
}

func (v *validator) promptSet(path string, ps *PromptSet) {
	if ps == nil {
		v.errf(path, "%s: empty prompt set: give synthetic, file, inline or trace", path)
		return
	}
	n := 0
	for _, set := range []bool{ps.Synthetic != nil, ps.File != "", len(ps.Inline) > 0, ps.Trace != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0 && v.has(path+".inline"):
		v.errf(path+".inline", "%s: inline list is empty", path)
	case n == 0:
		v.errf(path, "%s: needs one of synthetic, file, inline or trace", path)
	case n > 1:
		v.errf(path, "%s: give only one of synthetic, file, inline or trace", path)
	}
	if ps.Trace != nil {
		v.traceSet(path, ps)
	}
	if ps.Images != nil {
		if ps.Trace != nil {
			v.errf(path+".images", "%s: images do not apply to a trace's prompts", path)
		}
		if ps.Turns > 1 {
			v.errf(path+".images", "%s: images do not apply to multi-turn conversations (turns: %d)", path, ps.Turns)
		}
		v.images(path, ps.Images)
	}
	enum(v, path+".format", ps.Format, Formats)
	if (ps.Format != "" || ps.Column != "") && ps.File == "" {
		v.errf(path, "%s: format and column apply to file prompts only", path)
	}
	if ps.Column != "" && ps.Format != "" && ps.Format != FormatCSV && ps.Format != FormatAuto {
		v.errf(path+".column", "%s: column applies to csv files only", path)
	}
	if ps.Turns < 0 || ps.Turns > MaxTurns {
		v.errf(path+".turns", "%s: turns must be between 1 and %d, got %d", path, MaxTurns, ps.Turns)
	} else if ps.Turns == 0 && v.has(path+".turns") {
		v.errf(path+".turns", "%s: turns must be at least 1", path)
	}
	for i, s := range ps.Inline {
		if strings.TrimSpace(s) == "" {
			v.errf(fmt.Sprintf("%s.inline[%d]", path, i), "%s.inline[%d]: prompt is empty", path, i)
		}
	}
	if syn := ps.Synthetic; syn != nil {
		sp := path + ".synthetic"
		if !v.has(sp + ".input_tokens") {
			v.errf(sp, "%s: missing input_tokens", sp)
		} else {
			v.length(sp+".input_tokens", syn.InputTokens)
		}
		enum(v, sp+".sizing", syn.Sizing, Sizings)
		if sh := syn.SharedPrefix; sh != nil {
			pp := sp + ".shared_prefix"
			if sh.Groups < 1 || sh.Groups > MaxRequests {
				v.errf(pp+".groups", "%s: groups must be between 1 and %d, got %d", pp, MaxRequests, sh.Groups)
			}
			if sh.PrefixTokens < 1 || sh.PrefixTokens > MaxTokens {
				v.errf(pp+".prefix_tokens", "%s: prefix_tokens must be between 1 and %d, got %d", pp, MaxTokens, sh.PrefixTokens)
			}
		}
	}
}

// length checks a token-count Length: positive, bounded, and a mapping that
// says either {min, max} or {mean, stdev}.
func (v *validator) length(path string, l Length) {
	bad := func(format string, args ...any) { v.errf(path, "%s: "+format, append([]any{path}, args...)...) }
	switch {
	case l.IsFixed():
		if l.Fixed < 1 || l.Fixed > MaxTokens {
			bad("token count must be between 1 and %d, got %d", MaxTokens, l.Fixed)
		}
	case l.IsNormal():
		if !(l.Mean >= 1) || l.Mean > MaxTokens || math.IsInf(l.Mean, 0) {
			bad("mean must be between 1 and %d, got %g", MaxTokens, l.Mean)
		}
		if !(l.Stdev >= 0) || l.Stdev > MaxTokens {
			bad("stdev must be between 0 and %d, got %g", MaxTokens, l.Stdev)
		}
		v.minMax(path, l, false)
	default:
		v.minMax(path, l, true)
	}
}

func (v *validator) minMax(path string, l Length, required bool) {
	if required && (l.Min == 0 || l.Max == 0) {
		v.errf(path, "%s: a length mapping needs min and max (uniform) or mean and stdev (normal)", path)
		return
	}
	if l.Min < 0 || l.Max < 0 || l.Min > MaxTokens || l.Max > MaxTokens {
		v.errf(path, "%s: min and max must be between 1 and %d", path, MaxTokens)
		return
	}
	if l.Max != 0 && l.Min > l.Max {
		v.errf(path, "%s: min %d is greater than max %d", path, l.Min, l.Max)
	}
}

// stage validates one stage: what it refers to, its load, its limits and
// its checks.
func (v *validator) stage(path string, s *Stage) {
	ps := v.stageRefs(path, s)
	enum(v, path+".api", s.API, APIs)
	if ps != nil && ps.Turns > 1 && !conversational(s.API) {
		v.errf(path+".api", "%s: prompt set %q has turns: %d, which needs api: %s (%s has no conversation history)", path, s.Prompts, ps.Turns, conversationalAPIs(), s.API)
	}
	enum(v, path+".mode", s.Mode, Modes)
	enum(v, path+".arrival", s.Arrival, Arrivals)
	if s.InputTokens != nil {
		v.length(path+".input_tokens", *s.InputTokens)
		if ps != nil && ps.Synthetic == nil {
			v.errf(path+".input_tokens", "%s: input_tokens applies to synthetic prompts only (prompt set %q is not synthetic)", path, s.Prompts)
		}
	}
	if v.has(path+".output_tokens") || !s.OutputTokens.IsZero() {
		v.length(path+".output_tokens", s.OutputTokens)
	}
	switch {
	case ps != nil && ps.Trace != nil:
		v.stageReplay(path, s)
	case ps != nil && v.has(path+".replay"):
		v.errf(path+".replay", "%s: replay applies to stages whose prompts are a trace (prompt set %q is not)", path, s.Prompts)
		fallthrough
	default:
		v.stageLoad(path, s)
	}
	v.stageReplicates(path, s, ps)
	v.stageUntil(path, s, ps)
	v.stageBatch(path, s, ps)
	v.stageImages(path, s, ps)
	v.stageTools(path, s)
	v.stageCancel(path, s)
	v.stageModels(path, s)
	v.stageProbe(path, s)
	v.stageLimits(path, s)
	v.stageChecks(path, s)
}

// stageRefs checks the stage's name and the endpoint and prompt set it
// names, and returns the prompt set (nil when unknown).
func (v *validator) stageRefs(path string, s *Stage) *PromptSet {
	p := v.plan
	if strings.TrimSpace(s.Name) == "" {
		v.errf(path+".name", "%s: missing name", path)
	} else {
		v.name(path+".name", s.Name)
	}
	switch {
	case s.Endpoint == "":
		v.errf(path+".endpoint", "%s: missing endpoint", path)
	case p.Endpoints[s.Endpoint] == nil && !hasKey(p.Endpoints, s.Endpoint):
		v.errf(path+".endpoint", "%s: unknown endpoint %q%s", path, s.Endpoint, refHint(s.Endpoint, slices.Sorted(maps.Keys(p.Endpoints))))
	}
	switch {
	case s.Prompts == "":
		v.errf(path+".prompts", "%s: missing prompts", path)
	case !hasKey(p.Prompts, s.Prompts):
		v.errf(path+".prompts", "%s: unknown prompt set %q%s", path, s.Prompts, refHint(s.Prompts, slices.Sorted(maps.Keys(p.Prompts))))
	default:
		return p.Prompts[s.Prompts]
	}
	return nil
}

// stageLoad checks the load shape: exactly one of concurrency, rate and
// search, the levels, and the settings that go with each.
func (v *validator) stageLoad(path string, s *Stage) {
	hasC, hasR, hasS := v.has(path+".concurrency"), v.has(path+".rate"), s.Search != nil
	hasU, hasSeries := v.has(path+".users"), s.Series != nil
	switch {
	case hasSeries && (hasC || hasR || hasS || hasU):
		v.errf(path+".series", "%s: give concurrency, rate, users, search or series, only one", path)
	case hasU && (hasC || hasR || hasS):
		v.errf(path+".users", "%s: give concurrency, rate, users or search, only one", path)
	case hasS && (hasC || hasR):
		v.errf(path+".search", "%s: give concurrency, rate or search, only one", path)
	case hasC && hasR:
		v.errf(path+".rate", "%s: give concurrency (closed loop) or rate (open loop), not both", path)
	case !hasC && !hasR && !hasS && !hasU && !hasSeries:
		v.errf(path, "%s: needs concurrency: [...] (closed loop), rate: [...] (open loop), users: [...] (people who think), search: {...} (capacity search) or series: {...} (a load that changes over one level)", path)
	}
	v.stageUsers(path, s)
	v.stageSeries(path, s)
	closed := hasC || (hasS && s.Search.Over == OverConcurrency) || (hasSeries && s.Series.Over == OverConcurrency)
	if hasC {
		levelList(v, path+".concurrency", "concurrency", s.Concurrency, func(c int) bool { return c >= 1 && c <= MaxConcurrency },
			fmt.Sprintf("must be between 1 and %d", MaxConcurrency))
	}
	if closed {
		if s.Arrival != "" {
			v.errf(path+".arrival", "%s: arrival applies to rate (open-loop) stages only", path)
		}
		if s.MaxConcurrency != 0 {
			v.errf(path+".max_concurrency", "%s: max_concurrency applies to rate (open-loop) stages only", path)
		}
	}
	if hasR {
		levelList(v, path+".rate", "rate", s.Rate, func(r float64) bool { return r > 0 && r <= MaxRate && !math.IsInf(r, 0) },
			fmt.Sprintf("must be above 0 and at most %g requests/s", MaxRate))
		if s.Requests.IsZero() && s.Duration == 0 && s.Until.IsZero() {
			v.errf(path, "%s: a rate stage needs requests or duration, to know when a level ends", path)
		}
	}
	if hasR || (hasS && s.Search.Over == OverRate) {
		if s.Ramp != 0 {
			v.errf(path+".ramp", "%s: ramp applies to concurrency (closed-loop) stages only", path)
		}
	}
	if hasS {
		v.search(path, s)
	}
	if s.Burstiness != 0 {
		if !(s.Burstiness > 0) || math.IsInf(s.Burstiness, 0) {
			v.errf(path+".burstiness", "%s: burstiness must be positive, got %g", path, s.Burstiness)
		}
		if s.Arrival != ArrivalGamma {
			v.errf(path+".burstiness", "%s: burstiness applies to arrival: gamma only", path)
		}
	}
}

// levelList checks a list of levels: not empty, not too long, each one ok.
func levelList[T int | float64](v *validator, path, what string, levels []T, ok func(T) bool, rule string) {
	if len(levels) == 0 {
		v.errf(path, "%s: %s list is empty", strings.TrimSuffix(path, "."+what), what)
	}
	if len(levels) > MaxLevels {
		v.errf(path, "%s: more than %d levels", strings.TrimSuffix(path, "."+what), MaxLevels)
	}
	for i, l := range levels {
		if !ok(l) {
			ip := fmt.Sprintf("%s[%d]", path, i)
			v.errf(ip, "%s: %s %s, got %v", ip, what, rule, l)
		}
	}
}

// stageLimits checks the stage's numbers against their limits.
func (v *validator) stageLimits(path string, s *Stage) {
	if s.MaxConcurrency < 0 || s.MaxConcurrency > MaxConcurrency {
		v.errf(path+".max_concurrency", "%s: max_concurrency must be between 0 and %d, got %d", path, MaxConcurrency, s.MaxConcurrency)
	}
	v.stageRequests(path, s)
	v.nonNegDur(path+".duration", s.Duration)
	v.nonNegDur(path+".ramp", s.Ramp)
	if s.Slices != 0 && (s.Slices < Duration(MinSlice) || s.Slices > Duration(MaxSlice)) {
		v.errf(path+".slices", "%s: slices must be between %s and %s, got %s", path, MinSlice, MaxSlice, s.Slices)
	}
	if s.Warmup != nil && (*s.Warmup < 0 || *s.Warmup > MaxWarmup) {
		v.errf(path+".warmup", "%s: warmup must be between 0 and %d, got %d", path, MaxWarmup, *s.Warmup)
	}
	if s.Temperature != nil && (!(*s.Temperature >= 0) || math.IsInf(*s.Temperature, 0)) {
		v.errf(path+".temperature", "%s: temperature must not be negative, got %g", path, *s.Temperature)
	}
	if slo := s.SLO; slo != nil {
		for name, x := range map[string]float64{"ttft_ms": slo.TTFTMs, "tpot_ms": slo.TPOTMs, "e2e_ms": slo.E2EMs} {
			if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				v.errf(path+".slo."+name, "%s.slo: %s must be a positive number of milliseconds, got %g", path, name, x)
			}
		}
		if slo.TTFTMs == 0 && slo.TPOTMs == 0 && slo.E2EMs == 0 {
			v.errf(path+".slo", "%s.slo: set at least one of ttft_ms, tpot_ms, e2e_ms", path)
		}
	}
}

// stageChecks checks each check's fields and that names are unique.
func (v *validator) stageChecks(path string, s *Stage) {
	checkNames := map[string]int{}
	for i, c := range s.Checks {
		cp := fmt.Sprintf("%s.checks[%d]", path, i)
		if c == nil {
			v.errf(cp, "%s: empty check", cp)
			continue
		}
		if strings.TrimSpace(c.Expr) == "" {
			v.errf(cp+".expr", "%s: missing expr", cp)
		}
		enum(v, cp+".scope", c.Scope, Scopes)
		enum(v, cp+".severity", c.Severity, Severities)
		if c.When != "" && c.Scope == ScopeStage {
			v.errf(cp+".when", "%s: when applies to level-scope checks only", cp)
		}
		v.name(cp+".name", c.Name)
		name := c.Name
		if name == "" {
			name = c.Expr
		}
		if name == "" {
			continue
		}
		if j, dup := checkNames[name]; dup {
			at := cp + ".name"
			if c.Name == "" {
				at = cp + ".expr"
			}
			v.errf(at, "%s: duplicate check name %q (also checks[%d])", cp, name, j)
		} else {
			checkNames[name] = i
		}
	}
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

// name checks a name that reports, logs and the terminal show (the plan's,
// a stage's, a check's): one line, so a plan cannot forge a line of a CI log
// (GitHub Actions obeys "::command::" at the start of one), and no
// bidirectional override, which would make a name read as something else.
func (v *validator) name(path, s string) {
	if r, bad := nameChar(s); bad {
		v.errf(path, "%s: %U is not allowed in a name (names are shown in reports, logs and the terminal)", path, r)
	}
}

// controlChar returns the first control character of s other than tab and
// the line breaks: C0, DEL and C1.
func controlChar(s string) (rune, bool) {
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r <= 0x9f) {
			return r, true
		}
	}
	return 0, false
}

// nameChar returns the first character of s not allowed in a name: any
// control character, line breaks and tabs included, and the bidirectional
// embeddings, overrides and isolates.
func nameChar(s string) (rune, bool) {
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return r, true
		}
	}
	return 0, false
}

// refHint suggests the intended name for an undefined reference.
func refHint(name string, defined []string) string {
	if s := didYouMean(name, defined); s != "" {
		return s
	}
	if len(defined) == 0 {
		return " (none are defined)"
	}
	shown := make([]string, len(defined))
	for i, d := range defined {
		shown[i] = d
		if _, bad := nameChar(d); bad {
			shown[i] = strconv.Quote(d) // never a raw control character on stderr
		}
	}
	return fmt.Sprintf(" (defined: %s)", strings.Join(shown, ", "))
}
