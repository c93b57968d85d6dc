package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/testutil"
)

// TestCommonFlagsEveryCommand runs every subcommand with the common flags
// (runner merge --no-progress was refused once): each accepts them and
// does its work, and each refuses a bad --log-level naming itself and the
// flag. A new subcommand without a case here fails the test.
func TestCommonFlagsEveryCommand(t *testing.T) {
	common := []string{"--log-format", "json", "--log-level", "warn", "--no-progress", "--quiet"}
	root := t.TempDir()
	// An OTLP receiver that takes everything, so runner export can succeed.
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer otlp.Close()
	run, plan := filepath.Join(root, "run"), e2ePlan("gate.yaml")
	cases := map[string][]string{
		"run":      {plan, "--shard", "0/1", "--out", run},
		"validate": {plan},
		"schema":   {"report"},
		"compare":  {run, run},
		"report":   {run, "--out", filepath.Join(root, "report")},
		"merge":    {run, "--out", filepath.Join(root, "merged")},
		"board":    {run, "--out", filepath.Join(root, "board")},
		"version":  nil,
		"sim":      {"--listen", closedPort(t), "--fast"},
		"publish":  {run, "--db", filepath.Join(root, "results.db")},
		"history":  {"--db", filepath.Join(root, "results.db"), "--plan", "e2e-gate"},
		"export":   {run, "--to", "otlp=" + otlp.URL},
	}
	order := []string{"run", "validate", "schema", "compare", "report", "merge", "board", "version", "sim", "publish", "history", "export"}
	for name := range commands {
		if !slices.Contains(order, name) {
			t.Errorf("subcommand %s has no case in this test", name)
		}
	}
	for _, name := range order {
		args := append(append([]string{name}, cases[name]...), common...)
		code, out, errs := runWith(t, name == "sim", args...)
		if code != 0 {
			t.Errorf("runner %s: exit %d\nstdout %q\nstderr %q", strings.Join(args, " "), code, out, errs)
		}
		if strings.Contains(errs, "flag provided but not defined") {
			t.Errorf("runner %s refused a common flag: %s", name, errs)
		}
		bad := append(append([]string{name}, cases[name]...), "--log-level", "loud")
		code, _, errs = runWith(t, name == "sim", bad...)
		if want := name + `: --log-level: "loud" is not one of`; code != 2 || !strings.Contains(errs, want) {
			t.Errorf("runner %s --log-level loud: exit %d, stderr %q; want 2 and %q", name, code, errs, want)
		}
	}
}

// runWith runs the CLI in-process; serving (runner sim) is stopped once it
// printed its URL, or after 5 s.
func runWith(t *testing.T, serving bool, args ...string) (int, string, string) {
	t.Helper()
	if !serving {
		return runCLI(t, nil, args...)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb testutil.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, &Env{Args: args, Stdout: &out, Stderr: &errb}) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case code := <-done:
			return code, out.String(), errb.String()
		case <-time.After(5 * time.Millisecond):
		}
		if strings.Contains(out.String(), "serving model") || time.Now().After(deadline) {
			cancel()
		}
	}
}
