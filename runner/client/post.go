package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/runnerbench/runner/internal/redact"
)

// PostJSON posts body as JSON to url and decodes a 200 answer into out,
// with the headers h (nil: the endpoint's credentials alone). It is for
// the requests around the load (calibration), not for measured ones.
func (c *Client) PostJSON(ctx context.Context, url string, body, out any, h http.Header) error {
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
		c.setAuth(req)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Pooled().Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", redact.URL(url), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: %w", redact.URL(url), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: http %d: %s", redact.URL(url), resp.StatusCode, Excerpt(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: decoding answer: %w", redact.URL(url), err)
	}
	return nil
}

// Excerpt is a short, printable excerpt of a server's text (an error body
// or message), fit for a record's error or a log line: at most 200 bytes
// (cut at a rune), valid UTF-8, its white space collapsed to single spaces.
func Excerpt(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Join(strings.Fields(s), " ")
}
