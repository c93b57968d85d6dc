package enginetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runnerbench/runner/internal/engines"
)

// TestWithoutSharedEnginesSkips runs this package's llama-server tests
// again, in a child test binary whose repository root has no ../shared
// beside it (a fresh clone): each skips with one line naming what is
// missing; none fails or panics (a subtest that ended its parent's t once
// did: "subtest may have called FailNow on a parent test"). The child runs
// without RUNNER_REQUIRE_ENGINES, which would rightly fail them.
func TestWithoutSharedEnginesSkips(t *testing.T) {
	if os.Getenv("RUNNER_ENGINETEST_CHILD") == "1" {
		t.Skip("the child's own run")
	}
	clone := filepath.Join(t.TempDir(), "runner")
	if err := os.MkdirAll(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "go.mod"), []byte("module github.com/runnerbench/runner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The llama-server tests, and the llama-server subtests of the tests
	// that run both engines (their llm-d-inference-sim parts run here).
	cmd := exec.Command(os.Args[0], "-test.v", "-test.count=1",
		"-test.run", "^(TestLlama.*|TestUnservedBatchAPIs|TestTypedAPINotServed)$/^llama")
	cmd.Dir = clone
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, engines.RequireEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "RUNNER_ENGINETEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "panic") || strings.Contains(string(out), "--- FAIL") {
		t.Fatalf("without ../shared: %v\n%s", err, out)
	}
	skips := regexp.MustCompile(`(?m)^\s*--- SKIP: (\S+)`).FindAllStringSubmatch(string(out), -1)
	reasons := strings.Count(string(out), "engine unavailable: llama-server: "+filepath.Join(filepath.Dir(clone), "shared"))
	if len(skips) < 10 || reasons != len(skips) {
		t.Errorf("%d skips, %d saying llama-server is not found under ../shared:\n%s", len(skips), reasons, out)
	}
	for _, want := range []string{"TestUnservedBatchAPIs/llama-server_score", "TestTypedAPINotServed/llama-server", "TestLlamaServerStreams"} {
		if !strings.Contains(string(out), "--- SKIP: "+want+" ") {
			t.Errorf("%s did not skip:\n%s", want, out)
		}
	}
}
