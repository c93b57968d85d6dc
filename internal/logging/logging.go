// Package logging builds the process logger: zerolog on stderr, human-readable
// on a terminal, JSON for machines, with every secret-looking field redacted
// before a byte reaches the output.
package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Redacted replaces the value of a secret-looking field.
const Redacted = "[REDACTED]"

// New returns a logger writing to w.
//
// format is "json" for one JSON object a line, or "" / "auto" / "console" /
// "text" for zerolog's human-readable ConsoleWriter. terminal reports whether
// w is a terminal; colour is used only then, and never when NO_COLOR is set
// (https://no-color.org). level is debug, info, warn or error ("" is info).
//
// Every line passes through a redactor first: values of fields named like a
// credential (authorization, api_key, token, password, secret, cookie, ...)
// at any depth become "[REDACTED]", and "Bearer <token>" inside any string
// loses its token. Logging a secret by mistake cannot leak it.
func New(w io.Writer, format, level string, terminal bool) (zerolog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), err
	}
	var out io.Writer
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "json":
		out = w
	case "", "auto", "console", "text":
		noColor := os.Getenv("NO_COLOR") != "" // no-color.org: set and non-empty
		out = zerolog.ConsoleWriter{
			Out:        w,
			NoColor:    !terminal || noColor,
			TimeFormat: time.TimeOnly,
		}
	default:
		return zerolog.Nop(), fmt.Errorf("invalid log format %q (want json or console)", format)
	}
	return zerolog.New(&redactWriter{out: out}).Level(lvl).With().Timestamp().Logger(), nil
}

// ParseLevel parses a --log-level value.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return zerolog.DebugLevel, nil
	case "", "info":
		return zerolog.InfoLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	default:
		return zerolog.NoLevel, fmt.Errorf("invalid log level %q (want debug, info, warn or error)", s)
	}
}

// IsSecretKey reports whether a field named key holds a credential. Names are
// compared without case, '-' or '_', so Authorization, api-key, OPENAI_API_KEY
// and x-api-key all match. The singular "token" suffix matches (HF_TOKEN,
// access_token) while the plural does not, so metric fields such as
// output_tokens stay readable.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	k = strings.NewReplacer("_", "", "-", "", ".", "", " ", "").Replace(k)
	switch k {
	case "auth", "key", "bearer", "credential", "credentials", "session", "sessionid":
		return true
	}
	for _, suffix := range []string{"authorization", "apikey", "token", "password", "passwd", "secret", "cookie", "privatekey", "signature"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// redactWriter rewrites each JSON log line zerolog hands it (one Write per
// event) before passing it on. It sits in front of the ConsoleWriter too,
// which parses the same JSON, so both outputs are covered.
type redactWriter struct {
	mu  sync.Mutex
	out io.Writer
}

// quick holds byte patterns that every line with a secret must contain; a
// line with none of them (nearly every line) is passed through untouched
// without being parsed.
var quick = []string{"auth", "key", "token", "pass", "secret", "cookie", "bearer", "credential", "session", "signature"}

var bearerRE = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9\-._~+/]+=*`)

func (r *redactWriter) Write(p []byte) (int, error) {
	line := p
	if mayHoldSecret(p) {
		if red, ok := redactLine(p); ok {
			line = red
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.out.Write(line); err != nil {
		return 0, err
	}
	// Report the caller's length: zerolog treats a short count as an error.
	return len(p), nil
}

func mayHoldSecret(p []byte) bool {
	low := bytes.ToLower(p)
	for _, q := range quick {
		if bytes.Contains(low, []byte(q)) {
			return true
		}
	}
	return false
}

// redactLine rewrites one JSON object line, keeping its key order. ok is false
// when the line is not a JSON object (then it is redacted as plain text).
func redactLine(p []byte) ([]byte, bool) {
	trimmed := bytes.TrimSpace(p)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return bearerRE.ReplaceAll(p, []byte("${1}"+Redacted)), true
	}
	var buf bytes.Buffer
	if err := redactValue(&buf, json.RawMessage(trimmed)); err != nil {
		// Not valid JSON: fall back to scrubbing bearer tokens in the text.
		return bearerRE.ReplaceAll(p, []byte("${1}"+Redacted)), true
	}
	buf.WriteByte('\n')
	return buf.Bytes(), true
}

// redactObject copies a JSON object to buf, keeping its key order, with
// secret keys' values replaced and every other value redacted in turn.
func redactObject(buf *bytes.Buffer, raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	buf.WriteByte('{')
	first := true
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("json object key is %T", tok)
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return err
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(key)
		buf.Write(kb)
		buf.WriteByte(':')
		if IsSecretKey(key) {
			rb, _ := json.Marshal(Redacted)
			buf.Write(rb)
			continue
		}
		if err := redactValue(buf, val); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // }
		return err
	}
	buf.WriteByte('}')
	return nil
}

// redactValue copies one JSON value to buf, replacing secret fields' values
// in objects at any depth and bearer tokens in strings.
func redactValue(buf *bytes.Buffer, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return fmt.Errorf("empty json value")
	}
	switch raw[0] {
	case '{':
		return redactObject(buf, raw)
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return err
		}
		buf.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := redactValue(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if bearerRE.MatchString(s) {
			s = bearerRE.ReplaceAllString(s, "${1}"+Redacted)
			enc := json.NewEncoder(buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				return err
			}
			buf.Truncate(buf.Len() - 1) // Encode's newline
			return nil
		}
		buf.Write(raw)
	default:
		buf.Write(raw)
	}
	return nil
}
