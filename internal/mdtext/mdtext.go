// Package mdtext makes untrusted text (a plan's names and labels, a server's
// error samples) safe to show in Markdown: every reporter that writes
// Markdown (summary.md, the comparison, the board, the history) escapes
// through it, so a stage named like a link or holding a pipe cannot change
// what a pull-request comment says or how its tables split.
package mdtext

import "strings"

// replacer escapes what would change a table cell's meaning or structure:
// pipes split cells; *, _, ~, `, <, [, # and \ format, link or inject HTML
// (and "](" is a link's middle, escaped whole); & would turn "&lt;" into
// "<"; a line break would end the table row.
var replacer = strings.NewReplacer(
	"](", `\]\(`, `\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "&", "&amp;",
	"[", `\[`, "]", `\]`, "~", `\~`, "#", `\#`, "\r\n", " ", "\n", " ", "\r", " ", "\t", " ",
)

// Text is s made safe for a Markdown line or table cell.
func Text(s string) string { return replacer.Replace(Safe(s)) }

// codeReplacer: inside an inline code span in a table only the pipe needs
// escaping (GFM splits cells before it parses code), and a backtick cannot
// be escaped there, so it becomes a look-alike.
var codeReplacer = strings.NewReplacer("|", `\|`, "`", "ˋ", "\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// CodeText is s made safe for the inside of an inline code span.
func CodeText(s string) string { return codeReplacer.Replace(Safe(s)) }

// Code is s as inline code ("" stays empty).
func Code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + CodeText(s) + "`"
}

// Safe replaces the runes that would let text act on the reader's terminal
// or reorder what is shown around it: control characters other than line
// breaks and tabs (which Text and Code make spaces), and the bidirectional
// overrides and isolates (U+202A–U+202E, U+2066–U+2069), with U+FFFD.
func Safe(s string) string {
	if !strings.ContainsFunc(s, unsafe) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafe(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func unsafe(r rune) bool {
	if r == '\n' || r == '\r' || r == '\t' {
		return false
	}
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
