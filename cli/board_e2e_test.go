package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/board"
)

// TestE2EBoard runs real result directories with the binary (two labelled
// sweeps and a sharded run of two shards) into one parent, and draws the
// board of the parent: the sweeps are one group named by their labels, the
// shards are merged into one run first, --out writes the three files,
// --markdown and --json print the board; bad input is exit 2 naming it.
func TestE2EBoard(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	results := filepath.Join(root, "results")
	plan := e2ePlan("gate.yaml")
	for _, engine := range []string{"alpha", "beta"} {
		out := filepath.Join(results, engine, "night-1")
		code, _, stderr := runRunner(t, childEnv(), plan, "--out", out, "--quiet", "--report", "json", "--label", "engine="+engine, "--label", "gpus=2")
		if code != 0 {
			t.Fatalf("run %s: exit %d\n%s", engine, code, stderr)
		}
	}
	sharded := shardedPlan(t, startSimProc(t))
	at := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	var procs []*proc
	for i := range 2 {
		procs = append(procs, startRunner(t, childEnv(), sharded, "--shard", fmt.Sprintf("%d/2", i), "--start-at", at,
			"--slot-warmup", "400ms", "--slot-drain", "300ms", "--out", filepath.Join(results, "sharded", fmt.Sprint("shard-", i)),
			"--quiet", "--report", "json", "--label", "engine=gamma"))
	}
	for i, p := range procs {
		if code := p.wait(t, 60*time.Second); code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, code, p.stderr.String())
		}
	}
	out := filepath.Join(root, "board")
	code, stdout, stderr := runRunner(t, childEnv(), "board", results, "--out", out, "--rank", "output_tps_total at ttft_p95_ms < 5000")
	if code != 0 {
		t.Fatalf("board: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"e2e-gate · sweep", "engine=alpha", "engine=beta", "sharded · closed", "sharded · open", "every run: gpus=2"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, stdout)
		}
	}
	var b board.Board
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "board.json"))), &b); err != nil {
		t.Fatal(err)
	}
	if b.Runs != 3 || len(b.Groups) != 3 || len(b.Skipped) != 0 || len(b.Apart) != 0 {
		t.Fatalf("board.json: %d runs, %d groups, skipped %v, apart %v", b.Runs, len(b.Groups), b.Skipped, b.Apart)
	}
	for _, g := range b.Groups {
		if g.Plan == "sharded" && (len(g.Rows) != 1 || !strings.Contains(g.Rows[0].Source, "shard-0, ") || g.Rows[0].Labels["engine"] != "gamma") {
			t.Errorf("the shards were not merged into one run: %+v", g.Rows)
		}
		if g.Plan == "e2e-gate" && (len(g.Rows) != 2 || g.Rows[0].Place != 1 || g.Rows[1].Place != 2) {
			t.Errorf("the sweeps' group: %+v", g.Rows)
		}
	}
	if md := readFile(t, filepath.Join(out, "board.md")); !strings.HasPrefix(md, "# Runner board") {
		t.Errorf("board.md: %.200s", md)
	}
	if h := readFile(t, filepath.Join(out, "board.html")); !strings.Contains(h, "<svg class=\"chart\"") {
		t.Error("board.html has no chart")
	}
	code, stdout, _ = runRunner(t, childEnv(), "board", filepath.Join(results, "alpha"), filepath.Join(results, "beta", "night-1"), "--markdown", "--metrics", "ttft_p95_ms,goodput")
	if code != 0 || !strings.Contains(stdout, "| TTFT p95 (ms) | Goodput (%) |") {
		t.Errorf("--markdown: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runRunner(t, childEnv(), "board", results, "--json")
	if code != 0 || !json.Valid([]byte(stdout)) {
		t.Errorf("--json: exit %d, valid %v", code, json.Valid([]byte(stdout)))
	}
	boardBadInput(t, root, results)
}

// boardBadInput: a board that cannot be drawn is exit 2 with one line
// saying why, and writes nothing.
func boardBadInput(t *testing.T, root, results string) {
	broken := filepath.Join(root, "broken", "run")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "report.json"), []byte(`{"schema_version": 1, "plan": {"na`), 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(root, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(root, "absent")}, "absent"},
		{[]string{filepath.Join(root, "broken")}, "report.json: truncated JSON"},
		{[]string{results, "--rank", "throughput"}, `did you mean "output_tps_total"`},
		{[]string{results, "--rank", "output_tps_total at ttft_p95 < 3"}, "ttft_p95"},
		{[]string{results, "--metrics", "ttft_p95"}, "ttft_p95_ms"},
		{[]string{results, "--out", filepath.Join(results, "alpha", "night-1")}, "is a result directory"},
		{[]string{}, "no result directories"},
		{[]string{results, "--markdown", "--json"}, "choose one"},
	} {
		code, stdout, stderr := runRunner(t, childEnv(), append([]string{"board"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) || stdout != "" || strings.Contains(stderr, "goroutine") {
			t.Errorf("board %v: exit %d, stderr %q, want exit 2 saying %q", c.args, code, stderr, c.want)
		}
	}
	// A broken directory beside good ones is a listed skip, on stderr and
	// in the board.
	code, stdout, stderr := runRunner(t, childEnv(), "board", results, filepath.Join(root, "broken"), "--markdown")
	if code != 0 || !strings.Contains(stderr, "skipped "+filepath.Join(broken, "report.json")) || !strings.Contains(stdout, "## Skipped") {
		t.Errorf("a broken directory beside good ones: exit %d\n%s\n%s", code, stderr, stdout)
	}
	// --out that cannot be written (a file): exit 3, nothing half-written.
	code, _, stderr = runRunner(t, childEnv(), "board", results, "--out", notDir, "--quiet")
	if code != 3 || !strings.Contains(stderr, "board") {
		t.Errorf("--out a file: exit %d\n%s", code, stderr)
	}
}
