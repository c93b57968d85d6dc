package runner

import (
	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/protocol"

	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// nonceGen hands out the 12-hex-digit nonces that lead every prompt. A nonce
// is a keyed bijection of a counter: unique within a run by construction (no
// birthday odds), and different from run to run because the key comes from
// crypto/rand, so a second run against the same server cannot hit the first
// run's prefix cache either.
//
// In a sharded run every shard has the same key (Sharding.nonceGen) and
// counts n·stride + phase (its index among stride shards): the shards'
// counters are disjoint, so their nonces are too.
type nonceGen struct {
	key           uint64
	stride, phase uint64 // 0, 0: a whole run's counter
	n             atomic.Uint64
}

const mask48 = 1<<48 - 1

func newNonceGen() *nonceGen {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return &nonceGen{key: binary.LittleEndian.Uint64(b[:])}
}

// next returns a fresh nonce.
func (g *nonceGen) next() string {
	c := g.n.Add(1)
	if g.stride > 1 {
		c = c*g.stride + g.phase
	}
	x := (c + g.key) & mask48
	// Xor-shifts and odd multipliers are bijections modulo 2^48, so distinct
	// counters give distinct nonces; they only scatter the bits.
	x ^= x >> 23
	x = (x * 0x5DEECE66D) & mask48
	x ^= x >> 19
	x = (x * 0xB5AD4ECEDA1CE2A9) & mask48
	x ^= x >> 21
	x ^= (g.key >> 48) * 0x10001 & mask48 // key bits the addition did not use
	const hexdig = "0123456789abcdef"
	var out [12]byte
	for i := 11; i >= 0; i-- {
		out[i] = hexdig[x&15]
		x >>= 4
	}
	return string(out[:])
}

// filler is the reference generator's vocabulary: ordinary words rather than
// repeated junk, so tokenization stays close to real traffic. Keeping the same
// words (and order) makes sizing: reference reproduce old prompts exactly.
var filler = strings.Fields("the quick brown fox jumps over a lazy dog while distant thunder rolls " +
	"across open water and the harbour lights flicker against low cloud cover " +
	"as fishing boats return with the morning tide carrying nets and crates")

// fillerText holds the filler words joined by spaces, grown on demand; ends[i]
// is the length of the first i+1 words, so a body of n words is a slice.
var fillerText struct {
	sync.Mutex
	text string
	ends []int
}

// fillerBody returns n filler words joined by single spaces.
func fillerBody(n int) string {
	if n <= 0 {
		return ""
	}
	fillerText.Lock()
	defer fillerText.Unlock()
	if len(fillerText.ends) < n {
		var b strings.Builder
		want := max(n, 2*len(fillerText.ends), 4096)
		b.Grow(want * 7)
		b.WriteString(fillerText.text)
		ends := fillerText.ends
		for i := len(ends); i < want; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(filler[i%len(filler)])
			ends = append(ends, b.Len())
		}
		fillerText.text, fillerText.ends = b.String(), ends
	}
	return fillerText.text[:fillerText.ends[n-1]]
}

// referenceWords is the reference's sizing: tokens / 0.75 words, at least one.
func referenceWords(tokens int) int {
	return max(1, int(float64(tokens)/0.75))
}

// leadNonce puts the nonce in front of a prompt the way the reference does.
func leadNonce(nonce, text string) string { return "[" + nonce + "] " + text }

// sizer turns a token count into a number of filler words.
type sizer struct {
	// tokens ≈ overhead + perWord × words, measured on the server.
	overhead, perWord float64
	reference         bool
	source            string // "tokenize", "probe", "reference" or "estimate"
}

// tokensPerWord is the filler's cost per word.
func (s *sizer) tokensPerWord() float64 {
	if s.reference {
		return 0.75
	}
	return s.perWord
}

func (s *sizer) words(tokens int) int {
	if s.reference {
		return referenceWords(tokens)
	}
	return max(1, int(math.Round((float64(tokens)-s.overhead)/s.perWord)))
}

// calibKey names a calibration: tokenizers and chat templates differ by model
// and by API, so each pair gets its own.
type calibKey struct {
	model string
	api   string
}

// counter counts the tokens a prompt occupies on the server.
type counter func(ctx context.Context, text string) (int, error)

// calibrate measures how many tokens the filler costs per word, with the
// nonce and any chat template as fixed overhead. The slope comes from two
// prompts with the same nonce (so the nonce cancels out); the overhead is
// averaged over several nonces, because a random hex string splits into a
// different number of tokens each time.
func calibrate(ctx context.Context, count counter) (overhead, perWord float64, err error) {
	g := newNonceGen()
	const (
		base    = 36  // one round of the filler list
		w       = 720 // 20 more rounds: a whole number of cycles
		samples = 8
	)
	first := g.next()
	t1, err := count(ctx, leadNonce(first, fillerBody(base+w)))
	if err != nil {
		return 0, 0, err
	}
	var sum float64
	var t0First int
	for i := range samples {
		nonce := first
		if i > 0 {
			nonce = g.next()
		}
		t0, err := count(ctx, leadNonce(nonce, fillerBody(base)))
		if err != nil {
			return 0, 0, err
		}
		if i == 0 {
			t0First = t0
		}
		sum += float64(t0)
	}
	perWord = float64(t1-t0First) / w
	if perWord <= 0 {
		return 0, 0, fmt.Errorf("tokenizer reported %d and %d tokens for prompts of %d and %d words", t0First, t1, base, base+w)
	}
	overhead = sum/samples - base*perWord
	return overhead, perWord, nil
}

// tokenizeCounter counts with a vLLM-style /tokenize at the server's origin.
func (e *Engine) tokenizeCounter(p protocol.Protocol) counter {
	return func(ctx context.Context, text string) (int, error) {
		body := p.Prompt(text)
		body["model"] = e.model
		var out struct {
			Count *int `json:"count"`
		}
		if err := e.postJSON(ctx, e.origin+"/tokenize", body, &out); err != nil {
			return 0, err
		}
		if out.Count == nil {
			return 0, errors.New("/tokenize answered without a count")
		}
		return *out.Count, nil
	}
}

// probeCounter counts with a one-token request and the usage its answer
// reports, as the protocol says; an API without a probe cannot count so.
func (e *Engine) probeCounter(p protocol.Protocol) counter {
	pr, ok := p.(protocol.Prober)
	return func(ctx context.Context, text string) (int, error) {
		if !ok {
			return 0, errors.New("api " + p.Name() + " has no token-counting probe")
		}
		body, answer, tokens := pr.Probe(e.model, text)
		if err := e.postJSONAs(ctx, e.apiURL(p), body, answer, e.headersFor(p)); err != nil {
			return 0, err
		}
		return tokens()
	}
}

// postJSON posts body as JSON and decodes a 200 answer into out.
func (e *Engine) postJSON(ctx context.Context, url string, body, out any) error {
	return e.postJSONAs(ctx, url, body, out, nil)
}

// postJSONAs is postJSON with the headers h (nil: the endpoint's).
func (e *Engine) postJSONAs(ctx context.Context, url string, body, out any, h http.Header) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	if h != nil {
		req.Header = h
	} else {
		e.setAuth(req)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", redact.URL(url), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: %w", redact.URL(url), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: http %d: %s", redact.URL(url), resp.StatusCode, sample(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: decoding answer: %w", redact.URL(url), err)
	}
	return nil
}

// sizerFor returns the stage's prompt sizer, calibrating once per model and
// API for the engine's lifetime (a run).
func (e *Engine) sizerFor(ctx context.Context, api protocol.Protocol, reference bool) (*sizer, string) {
	if reference {
		return &sizer{reference: true, source: "reference"}, ""
	}
	key := calibKey{e.model, api.Name()}
	e.calMu.Lock()
	defer e.calMu.Unlock()
	if s, ok := e.calib[key]; ok {
		return s, ""
	}
	var s *sizer
	var warn string
	if o, w, err := calibrate(ctx, e.tokenizeCounter(api)); err == nil {
		s = &sizer{overhead: o, perWord: w, source: "tokenize"}
	} else if o, w, err2 := calibrate(ctx, e.probeCounter(api)); err2 == nil {
		s = &sizer{overhead: o, perWord: w, source: "probe"}
		e.log.Debug().Err(err).Msg("no /tokenize; calibrated prompt length with a probe request")
	} else {
		// Neither works: keep going with the reference's estimate, and say so,
		// since "1024 input tokens" is then a guess (mean_input_tokens shows
		// what the server actually counted when it reports usage).
		s = &sizer{perWord: 0.75, source: "estimate"} // the reference's 0.75 tokens per word
		warn = fmt.Sprintf("could not calibrate prompt length for model %q (%v; %v); using the 0.75-tokens-per-word estimate", e.model, err, err2)
	}
	e.calib[key] = s
	return s, warn
}
