package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the runner binary when re-executed, so
// the tests below check real process exit codes and streams.
func TestMain(m *testing.M) {
	if os.Getenv("RUNNER_TEST_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func runBinary(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RUNNER_TEST_AS_MAIN=1")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatal(err)
	return 0, "", ""
}

func TestExitCodes(t *testing.T) {
	code, out, _ := runBinary(t, "validate", "../../plans/quickstart.yaml")
	if code != 0 || !strings.Contains(out, "quickstart.yaml: ok") {
		t.Errorf("validate quickstart: %d %q", code, out)
	}
	code, _, errs := runBinary(t, "validate", "../../scenario/testdata/invalid/many-problems.yaml")
	if code != 2 || strings.Count(errs, "\n") != 7 || strings.Contains(errs, "goroutine") {
		t.Errorf("validate broken plan: %d\n%s", code, errs)
	}
	code, out, _ = runBinary(t, "--help")
	if code != 0 || !strings.Contains(out, "usage:") {
		t.Errorf("--help: %d", code)
	}
	code, _, errs = runBinary(t, "--no-such-flag", "x.yaml")
	if code != 2 || strings.Count(errs, "\n") != 1 {
		t.Errorf("bad flag: %d %q", code, errs)
	}
}
