package sim

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/testutil"
)

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestMainServesUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(cfgPath, []byte("model: my-model\nitl_ms: 3\nfaults:\n  stall_ms: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"--listen", addr, "--config", cfgPath, "--fast", "--itl-ms", "2"}, &stdout, &stderr)
	}()
	url := "http://" + addr + "/v1"
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(stdout.String(), url) {
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(b.String(), `"id":"my-model"`) {
		t.Errorf("models %s: config file model not applied", b.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Main: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Main did not return after cancel")
	}
	if _, err := http.Get(url + "/models"); err == nil {
		t.Error("still serving after cancel")
	}
}

func TestMainUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("itl_ms: 3\nfaults:\n  stal_ms: 5\n"), 0o600)
	invalid := filepath.Join(dir, "invalid.yaml")
	_ = os.WriteFile(invalid, []byte("max_num_seqs: -1\n"), 0o600)
	for _, c := range []struct {
		args []string
		want *regexp.Regexp
	}{
		{[]string{"--listen", "0.0.0.0:8000"}, regexp.MustCompile(`not loopback`)},
		{[]string{"--listen", ":8000"}, regexp.MustCompile(`not loopback`)},
		{[]string{"--listen", "192.168.1.1:8000"}, regexp.MustCompile(`not loopback`)},
		{[]string{"--nope"}, regexp.MustCompile(`flag provided but not defined`)},
		{[]string{"extra"}, regexp.MustCompile(`unexpected argument`)},
		{[]string{"--config", bad}, regexp.MustCompile(`line 3: field stal_ms not found`)},
		{[]string{"--config", invalid}, regexp.MustCompile(`max_num_seqs must be >= 1`)},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, regexp.MustCompile(`no such file`)},
		{[]string{"--spec-acceptance", "2", "--spec-k", "2"}, regexp.MustCompile(`spec_acceptance must be in \[0, 1\]`)},
	} {
		var out, errb bytes.Buffer
		err := Main(t.Context(), c.args, &out, &errb)
		if err == nil || exitcode.Of(err) != exitcode.Invalid || !c.want.MatchString(err.Error()) {
			t.Errorf("%v: err %v (code %d), want %v", c.args, err, exitcode.Of(err), c.want)
		}
	}
}

func TestMainPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errb bytes.Buffer
	err = Main(t.Context(), []string{"--listen", ln.Addr().String()}, &out, &errb)
	if err == nil || exitcode.Of(err) != exitcode.RunFailed {
		t.Errorf("err %v (code %d), want a run failure", err, exitcode.Of(err))
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	if _, err := StartOn(t.Context(), "0.0.0.0:0", FastConfig()); err == nil {
		t.Fatal("StartOn 0.0.0.0 succeeded")
	}
	s, err := StartOn(t.Context(), "[::1]:0", FastConfig())
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://[::1]:") {
		t.Errorf("URL %s", s.URL())
	}
}

func TestParseConfigStrict(t *testing.T) {
	cfg, err := ParseConfig([]byte("ttft_ms: 40\nitl_ms: 8\nspec_k: 3\nfaults: {http_429: 0.1}\n"), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TTFTMs != 40 || cfg.ITLMs != 8 || cfg.SpecK != 3 || cfg.Faults.HTTP429 != 0.1 {
		t.Errorf("decoded %+v", cfg)
	}
	d := cfg.Defaults()
	if d.SpecAcceptance != 0.7 || d.MaxNumSeqs != 256 || d.Model != "sim" || d.TTFTMs != 40 {
		t.Errorf("defaults %+v", d)
	}
	if _, err := ParseConfig([]byte("ttft: 40\n"), "x.yaml"); err == nil {
		t.Error("unknown key accepted")
	}
	bad := Config{Faults: Faults{HTTP429: 0.7, HTTP500: 0.5}}.Defaults()
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "sum to") {
		t.Errorf("fault sum > 1: %v", err)
	}
}

// TestSampleConfigs keeps the sample configs in plans/sim decodable and valid.
func TestSampleConfigs(t *testing.T) {
	paths, _ := filepath.Glob("../plans/sim/*.yaml")
	if len(paths) < 2 {
		t.Fatalf("sample configs: %v", paths)
	}
	for _, p := range paths {
		cfg, err := LoadConfig(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if err := cfg.Defaults().Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if filepath.Base(p) == "fast.yaml" && cfg.Defaults() != FastConfig() {
			t.Errorf("fast.yaml %+v differs from FastConfig %+v", cfg.Defaults(), FastConfig())
		}
	}
}

func TestStartStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s, err := Start(ctx, FastConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/v1$`).MatchString(s.URL()) {
		t.Errorf("URL %q", s.URL())
	}
	resp, err := http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := http.Get(s.URL() + "/models")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("still serving after its context was cancelled")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
