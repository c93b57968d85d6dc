package cli

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

func TestSimServesUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(cfgPath, []byte("model: my-model\nitl_ms: 3\nfaults:\n  stall_ms: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := closedPort(t)
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr testutil.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- cmdSim(ctx, &Env{Stdout: &stdout, Stderr: &stderr}, []string{"--listen", addr, "--config", cfgPath, "--fast", "--itl-ms", "2"})
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
			t.Errorf("cmdSim: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cmdSim did not return after cancel")
	}
	if _, err := http.Get(url + "/models"); err == nil {
		t.Error("still serving after cancel")
	}
}

func TestSimUsageErrors(t *testing.T) {
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
		{[]string{"--config", bad}, regexp.MustCompile(`bad\.yaml:3:3: .*stal_ms`)},
		{[]string{"--config", invalid}, regexp.MustCompile(`invalid\.yaml:1:15: max_num_seqs: must be >= 1`)},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, regexp.MustCompile(`no such file`)},
		{[]string{"--spec-acceptance", "2", "--spec-k", "2"}, regexp.MustCompile(`spec_acceptance: must be in \[0, 1\]`)},
	} {
		var out, errb bytes.Buffer
		err := cmdSim(t.Context(), &Env{Stdout: &out, Stderr: &errb}, c.args)
		if err == nil || exitcode.Of(err) != exitcode.Invalid || !c.want.MatchString(err.Error()) {
			t.Errorf("%v: err %v (code %d), want %v", c.args, err, exitcode.Of(err), c.want)
		}
	}
}

func TestSimPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errb bytes.Buffer
	err = cmdSim(t.Context(), &Env{Stdout: &out, Stderr: &errb}, []string{"--listen", ln.Addr().String()})
	if err == nil || exitcode.Of(err) != exitcode.RunFailed {
		t.Errorf("err %v (code %d), want a run failure", err, exitcode.Of(err))
	}
}
