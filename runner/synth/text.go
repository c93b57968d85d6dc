// Package synth makes the synthetic inputs a stage sends: the nonces that
// lead every prompt (so no request hits another's prefix cache), filler text
// sized in the server's tokens (calibrated on its tokenizer), and images.
package synth

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Nonces hands out the 12-hex-digit nonces that lead every prompt. A nonce
// is a keyed bijection of a counter: unique within a run by construction (no
// birthday odds), and different from run to run because the key comes from
// crypto/rand, so a second run against the same server cannot hit the first
// run's prefix cache either.
//
// In a sharded run every shard has the same key (KeyedNonces) and
// counts n·stride + phase (its index among stride shards): the shards'
// counters are disjoint, so their nonces are too.
type Nonces struct {
	key           uint64
	stride, phase uint64 // 0, 0: a whole run's Counter
	n             atomic.Uint64
}

const mask48 = 1<<48 - 1

// NewNonces is a run's nonce generator, its key drawn from crypto/rand.
func NewNonces() *Nonces {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return &Nonces{key: binary.LittleEndian.Uint64(b[:])}
}

// KeyedNonces is shard phase of stride's nonce generator: every shard of a
// run has the same key and counts n·stride + phase.
func KeyedNonces(key uint64, stride, phase int) *Nonces {
	return &Nonces{key: key, stride: uint64(stride), phase: uint64(phase)}
}

// Bits is a nonce's 48 bits as a number.
func Bits(nonce string) uint64 {
	v, _ := strconv.ParseUint(nonce, 16, 64)
	return v
}

// Next returns a fresh nonce.
func (g *Nonces) Next() string {
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

// Vocabulary is the reference generator's filler: ordinary words rather than
// repeated junk, so tokenization stays close to real traffic. Keeping the same
// words (and order) makes sizing: reference reproduce old prompts exactly.
var Vocabulary = strings.Fields("the quick brown fox jumps over a lazy dog while distant thunder rolls " +
	"across open water and the harbour lights flicker against low cloud cover " +
	"as fishing boats return with the morning tide carrying nets and crates")

// fillerText holds the filler words joined by spaces, grown on demand; ends[i]
// is the length of the first i+1 words, so a body of n words is a slice.
var fillerText struct {
	sync.Mutex
	text string
	ends []int
}

// Filler returns n filler words joined by single spaces.
func Filler(n int) string {
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
			b.WriteString(Vocabulary[i%len(Vocabulary)])
			ends = append(ends, b.Len())
		}
		fillerText.text, fillerText.ends = b.String(), ends
	}
	return fillerText.text[:fillerText.ends[n-1]]
}

// ReferenceWords is the reference's sizing: tokens / 0.75 words, at least one.
func ReferenceWords(tokens int) int {
	return max(1, int(float64(tokens)/0.75))
}

// LeadNonce puts the nonce in front of a prompt the way the reference does.
func LeadNonce(nonce, text string) string { return "[" + nonce + "] " + text }

// Sizer turns a token count into a number of filler words.
type Sizer struct {
	// tokens ≈ overhead + perWord × words, measured on the server.
	Overhead, PerWord float64
	Reference         bool
	Source            string // "tokenize", "probe", "reference" or "estimate"
}

// TokensPerWord is the filler's cost per word.
func (s *Sizer) TokensPerWord() float64 {
	if s.Reference {
		return 0.75
	}
	return s.PerWord
}

// Words is how many filler words make tokens tokens.
func (s *Sizer) Words(tokens int) int {
	if s.Reference {
		return ReferenceWords(tokens)
	}
	return max(1, int(math.Round((float64(tokens)-s.Overhead)/s.PerWord)))
}

// Counter counts the tokens a prompt occupies on the server.
type Counter func(ctx context.Context, text string) (int, error)

// Calibrate measures how many tokens the filler costs per word, with the
// nonce and any chat template as fixed overhead. The slope comes from two
// prompts with the same nonce (so the nonce cancels out); the overhead is
// averaged over several nonces, because a random hex string splits into a
// different number of tokens each time.
//
// The long prompt is the longest of slopeWords the server takes: a server
// may refuse a prompt of about 1,000 tokens (llama-server embeds at most
// one physical batch, 512 tokens by default, and answers a longer input
// with a 500), and one it refuses must not leave the run without a
// calibration. Each is a whole number of rounds of the Vocabulary list, so
// the slope is exact for the filler.
func Calibrate(ctx context.Context, count Counter) (overhead, perWord float64, err error) {
	g := NewNonces()
	const (
		base    = 36 // one round of the Vocabulary list
		samples = 8
	)
	first := g.Next()
	t0First, err := count(ctx, LeadNonce(first, Filler(base)))
	if err != nil {
		return 0, 0, err
	}
	var t1, w int
	for _, w = range slopeWords {
		if t1, err = count(ctx, LeadNonce(first, Filler(base+w))); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("a prompt of %d words: %w", base+w, err)
	}
	sum := float64(t0First)
	for range samples - 1 {
		t0, err := count(ctx, LeadNonce(g.Next(), Filler(base)))
		if err != nil {
			return 0, 0, err
		}
		sum += float64(t0)
	}
	perWord = float64(t1-t0First) / float64(w)
	if perWord <= 0 {
		return 0, 0, fmt.Errorf("tokenizer reported %d and %d tokens for prompts of %d and %d words", t0First, t1, base, base+w)
	}
	overhead = sum/samples - base*perWord
	return overhead, perWord, nil
}

// slopeWords are the words Calibrate adds to its short prompt for the long
// one, longest first: 20 rounds of the Vocabulary list (about 1,000 tokens
// with the prompt), then 10, 5 and 2 for a server that refuses longer ones.
var slopeWords = []int{720, 360, 180, 72}
