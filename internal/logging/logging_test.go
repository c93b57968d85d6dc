package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

const secret = "sk-live-THIS-IS-A-SECRET-0123456789"

func TestNewRejectsBadValues(t *testing.T) {
	var buf bytes.Buffer
	for _, tc := range []struct{ format, level, want string }{
		{"json", "verbose", `invalid log level "verbose"`},
		{"json", "INFO ", ""},
		{"xml", "info", `invalid log format "xml"`},
		{"", "", ""},
	} {
		_, err := New(&buf, tc.format, tc.level, false)
		if tc.want == "" {
			if err != nil {
				t.Errorf("New(%q, %q): unexpected error %v", tc.format, tc.level, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %q) error = %v, want it to contain %q", tc.format, tc.level, err, tc.want)
		}
	}
}

func TestLevelFilters(t *testing.T) {
	for _, tc := range []struct {
		level     string
		debug     bool
		info      bool
		warn, err bool
	}{
		{"debug", true, true, true, true},
		{"info", false, true, true, true},
		{"warn", false, false, true, true},
		{"error", false, false, false, true},
	} {
		var buf bytes.Buffer
		log, err := New(&buf, "json", tc.level, false)
		if err != nil {
			t.Fatal(err)
		}
		log.Debug().Msg("d-msg")
		log.Info().Msg("i-msg")
		log.Warn().Msg("w-msg")
		log.Error().Msg("e-msg")
		out := buf.String()
		for msg, want := range map[string]bool{"d-msg": tc.debug, "i-msg": tc.info, "w-msg": tc.warn, "e-msg": tc.err} {
			if got := strings.Contains(out, msg); got != want {
				t.Errorf("level %s: %s logged = %v, want %v", tc.level, msg, got, want)
			}
		}
	}
}

func TestJSONFormatIsJSON(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "json", "info", true)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("stage", "throughput").Int("output_tokens", 256).Msg("level done")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("json output is not JSON: %v: %q", err, buf.String())
	}
	if m["stage"] != "throughput" || m["message"] != "level done" || m["output_tokens"] != float64(256) || m["level"] != "info" {
		t.Errorf("unexpected fields: %v", m)
	}
	if _, ok := m["time"]; !ok {
		t.Errorf("no time field: %v", m)
	}
}

func TestConsoleColour(t *testing.T) {
	for _, tc := range []struct {
		name      string
		terminal  bool
		noColor   bool
		wantColor bool
	}{
		{"terminal", true, false, true},
		{"pipe", false, false, false},
		{"terminal with NO_COLOR", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noColor {
				t.Setenv("NO_COLOR", "1")
			}
			var buf bytes.Buffer
			log, err := New(&buf, "", "info", tc.terminal)
			if err != nil {
				t.Fatal(err)
			}
			log.Warn().Str("stage", "s1").Msg("hello")
			out := buf.String()
			if !strings.Contains(out, "hello") || !strings.Contains(out, "stage=") {
				t.Fatalf("console output lacks message or field: %q", out)
			}
			if strings.HasPrefix(strings.TrimSpace(out), "{") {
				t.Fatalf("console output is JSON: %q", out)
			}
			if got := strings.Contains(out, "\x1b["); got != tc.wantColor {
				t.Errorf("colour = %v, want %v: %q", got, tc.wantColor, out)
			}
		})
	}
}

// TestSecretsAreRedacted logs secrets the ways a careless caller would and
// proves none reaches the output, in either format.
func TestSecretsAreRedacted(t *testing.T) {
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+secret)
	hdr.Set("Content-Type", "application/json")
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := New(&buf, format, "debug", false)
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Str("api_key", secret).Msg("a")
			log.Info().Str("Authorization", "Bearer "+secret).Msg("b")
			log.Info().Str("OPENAI_API_KEY", secret).Msg("c")
			log.Info().Str("hf_token", secret).Msg("d")
			log.Info().Str("password", secret).Msg("e")
			log.Info().Interface("headers", hdr).Msg("f")
			log.Info().Dict("endpoint", zerologDict(secret)).Msg("g")
			log.Error().Err(errors.New("request failed: header Authorization: Bearer " + secret)).Msg("h")
			log.Info().Msg("sending with bearer " + secret)
			out := buf.String()
			if strings.Contains(out, secret) || strings.Contains(out, "SECRET") {
				t.Fatalf("secret leaked into %s log:\n%s", format, out)
			}
			if n := strings.Count(out, Redacted); n < 9 {
				t.Errorf("want at least 9 redactions, got %d:\n%s", n, out)
			}
			// Fields that only look similar stay readable.
			if !strings.Contains(out, "application/json") {
				t.Errorf("non-secret header value lost:\n%s", out)
			}
		})
	}
}

func TestMetricsNamedTokensAreNotRedacted(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "json", "info", false)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Int("output_tokens", 256).Int("input_tokens", 1024).Str("model", "m").Msg("ok")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["output_tokens"] != float64(256) || m["input_tokens"] != float64(1024) {
		t.Errorf("token counts were altered: %v", m)
	}
}

func TestRedactionKeepsKeyOrder(t *testing.T) {
	in := []byte(`{"level":"info","api_key":"x","n":1.50,"nested":{"token":"y","ok":[1,"Bearer abc"]},"message":"m"}` + "\n")
	got, ok := redactLine(in)
	if !ok {
		t.Fatal("redactLine failed")
	}
	want := `{"level":"info","api_key":"[REDACTED]","n":1.50,"nested":{"token":"[REDACTED]","ok":[1,"Bearer [REDACTED]"]},"message":"m"}` + "\n"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestIsSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "api_key": true, "x-api-key": true,
		"OPENAI_API_KEY": true, "token": true, "access_token": true, "HF_TOKEN": true,
		"password": true, "client_secret": true, "Cookie": true, "set-cookie": true,
		"output_tokens": false, "input_tokens": false, "max_tokens": false, "model": false,
		"stage": false, "base_url": false, "keys_seen": false,
	} {
		if got := IsSecretKey(key); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func zerologDict(secret string) *zerolog.Event {
	return zerolog.Dict().Str("name", "local").Str("api_key", secret)
}
