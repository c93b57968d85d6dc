package sim

import (
	"unicode"
	"unicode/utf8"
)

// The simulator's tokenizer is deliberately simple, stable and documented, so
// that a test can predict a count by hand and usage.prompt_tokens always agrees
// with /tokenize:
//
//   - a run of letters is one token per 8 bytes (so "the" is one token and
//     "internationalisation" is three);
//   - a run of digits is one token per 3 digits (as many BPE vocabularies do);
//   - one space directly before a letter or digit run belongs to that run's
//     first token (" the" is one token, like GPT-style BPE);
//   - any other whitespace run is one token;
//   - every other character (punctuation, symbols) is one token.
//
// Letters and digits alternate tokens, so a hex nonce "a1b2" is four tokens.
// Non-ASCII letters count as letters (by bytes, so a CJK run splits every
// 8 bytes, close enough to real tokenizers for load testing).

const (
	maxLetterBytes = 8
	maxDigits      = 3
)

type charClass uint8

const (
	classOther charClass = iota
	classLetter
	classDigit
	classSpace
)

func classOf(r rune) charClass {
	switch {
	case r < utf8.RuneSelf:
		b := byte(r)
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z':
			return classLetter
		case b >= '0' && b <= '9':
			return classDigit
		case b == ' ', b == '\t', b == '\n', b == '\r', b == '\v', b == '\f':
			return classSpace
		}
		return classOther
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsDigit(r):
		return classDigit
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

// tokenize calls emit with the byte range of every token of s, in order.
func tokenize(s string, emit func(start, end int)) {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		c := classOf(r)
		start := i
		if c == classSpace {
			j := i + n
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if classOf(r2) != classSpace {
					break
				}
				j += n2
			}
			// A single plain space before a word joins the word.
			if j == i+1 && s[i] == ' ' && j < len(s) {
				r2, _ := utf8.DecodeRuneInString(s[j:])
				if c2 := classOf(r2); c2 == classLetter || c2 == classDigit {
					i = j
					c = c2
					goto word
				}
			}
			emit(start, j)
			i = j
			continue
		}
		if c == classOther {
			emit(i, i+n)
			i += n
			continue
		}
	word:
		// A run of class c, split into pieces; the leading space (if any) is
		// part of the first piece but not counted in its length.
		for {
			pieceStart := i
			count := 0
			for i < len(s) {
				r, n = utf8.DecodeRuneInString(s[i:])
				if classOf(r) != c {
					break
				}
				if c == classLetter && count > 0 && count+n > maxLetterBytes {
					break
				}
				if c == classDigit && count == maxDigits {
					break
				}
				if c == classLetter {
					count += n
				} else {
					count++
				}
				i += n
			}
			if start < pieceStart {
				pieceStart = start
			}
			emit(pieceStart, i)
			start = i
			if i >= len(s) {
				return
			}
			r, _ = utf8.DecodeRuneInString(s[i:])
			if classOf(r) != c {
				break
			}
		}
	}
}

// CountTokens returns the number of tokens of s under the simulator's tokenizer.
func CountTokens(s string) int {
	n := 0
	tokenize(s, func(int, int) { n++ })
	return n
}

// tokenIDs returns stable ids for the tokens of s (FNV-1a of the token text,
// folded into a 50k vocabulary), for /tokenize.
func tokenIDs(s string) []int {
	ids := make([]int, 0, len(s)/4+1)
	tokenize(s, func(a, b int) { ids = append(ids, int(fnv32(s[a:b])%50000)) })
	return ids
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// nonceLen returns the byte length of a leading "[nonce]" (plus one following
// space) in s and the nonce itself, or 0 and "" when s does not start with one.
// A nonce is 4 to 64 characters of [0-9A-Za-z_-] in square brackets, the form
// the runner (and the reference load generator) put at the start of a prompt.
func nonceLen(s string) (int, string) {
	if len(s) < 6 || s[0] != '[' {
		return 0, ""
	}
	for i := 1; i < len(s) && i <= 65; i++ {
		b := s[i]
		switch {
		case b >= '0' && b <= '9', b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b == '_', b == '-':
			continue
		case b == ']':
			if i-1 < 4 {
				return 0, ""
			}
			end := i + 1
			if end < len(s) && s[end] == ' ' {
				end++
			}
			return end, s[1:i]
		}
		return 0, ""
	}
	return 0, ""
}
