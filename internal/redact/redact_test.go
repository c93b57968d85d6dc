package redact

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000/v1":                         "http://127.0.0.1:8000/v1",
		"https://user:hunter2@api.example/v1?api_key=sk-1": "https://api.example/v1",
		"http://h/v1?api-version=2024-06-01#frag":          "http://h/v1",
		"http://[::1]:9/metrics":                           "http://[::1]:9/metrics",
		"http://h/%zz":                                     "<invalid url>",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	if got := URLs([]string{"http://a:b@h/", "http://h/?token=x"}); got[0] != "http://h/" || got[1] != "http://h/" {
		t.Errorf("URLs = %v", got)
	}
}

func TestError(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "http://u:pw@h/v1?key=s3cret", Err: errors.New("EOF")}
	got := Error(err).Error()
	if strings.Contains(got, "pw") || strings.Contains(got, "s3cret") || !strings.Contains(got, "http://h/v1") {
		t.Errorf("Error = %q", got)
	}
	plain := errors.New("x")
	if Error(plain) != plain {
		t.Error("a non-URL error changed")
	}
}

func TestURLInPlan(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000/v1":             "http://127.0.0.1:8000/v1",
		"https://u:pw@h/v1":                    "https://u:%5BREDACTED%5D@h/v1",
		"http://h/v1?api-version=1&api_key=sk": "http://h/v1?api-version=1&api_key=%5BREDACTED%5D",
		"http://h/v1?Signature=abc":            "http://h/v1?Signature=%5BREDACTED%5D",
		"":                                     "",
	} {
		if got := URLInPlan(in); got != want {
			t.Errorf("URLInPlan(%q) = %q, want %q", in, got, want)
		}
	}
}
