package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/store/synthrun"
)

// TestPublishAndHistory: runner publish of a parent directory, again (a
// no-op), a broken directory beside good ones (exit 2 naming the file, the
// others published), then runner history finding the step and failing the
// gate on it, and a --publish run of the quickstart plan.
func TestPublishAndHistory(t *testing.T) {
	parent := t.TempDir()
	day0 := time.Date(2030, 3, 1, 2, 0, 0, 0, time.UTC)
	for i := range 14 {
		ttft := 100.0
		if i >= 10 {
			ttft = 130
		}
		err := synthrun.Write(filepath.Join(parent, fmt.Sprintf("run%02d", i)), synthrun.Spec{
			StartedAt: day0.Add(time.Duration(i) * 24 * time.Hour), Seed: uint64(i + 1), TTFTMs: ttft, Requests: 300,
			Labels: map[string]string{"commit": fmt.Sprintf("c%02d", i)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "results.db")
	code, out, errs := runCLI(t, nil, "publish", parent, "--db", db)
	if code != 0 || strings.Count(out, "published to") != 14 {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runCLI(t, nil, "publish", parent, "--db", "sqlite:"+db)
	if code != 0 || strings.Count(out, "already in") != 14 {
		t.Fatalf("publish again: exit %d, want 14 runs already there:\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "run.jsonl"), []byte("{\"kind\": \"run\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI(t, nil, "publish", bad, filepath.Join(parent, "run00"), "--db", db)
	if code != 2 || !strings.Contains(errs, filepath.Join(bad, "run.jsonl")) {
		t.Errorf("a broken directory: exit %d, want 2 naming its run.jsonl:\n%s", code, errs)
	}

	code, out, errs = runCLI(t, nil, "history", "--db", db, "--plan", "nightly", "--metric", "ttft_p50_ms", "--metric", "tpot_p50_ms", "--fail-on-change")
	if code != 1 || !strings.Contains(errs, "ttft_p50_ms: worse") || strings.Contains(errs, "tpot_p50_ms") {
		t.Errorf("history --fail-on-change: exit %d, want 1 for ttft_p50_ms alone:\n%s%s", code, out, errs)
	}
	// The step is at run 10 (commit c10): the change is said to begin there.
	if !strings.Contains(out, "ttft_p50_ms") || !strings.Contains(out, "!") || !strings.Contains(out, "from 2030-03-11 02:00 c10 ") {
		t.Errorf("history: no sparkline with a change marked where it began:\n%s", out)
	}
	html := filepath.Join(t.TempDir(), "h.html")
	code, out, errs = runCLI(t, nil, "history", "--db", db, "--plan", "nightly", "--markdown", "--html", html, "--metric", "tpot_p50_ms")
	if code != 0 || !strings.Contains(out, "| sweep | c=4 | `tpot_p50_ms` |") {
		t.Errorf("history --markdown: exit %d:\n%s%s", code, out, errs)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("history --html: %v", err)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"history", "--db", filepath.Join(t.TempDir(), "none.db"), "--plan", "nightly"}, 3},
		{[]string{"history", "--db", db, "--plan", "nightly", "--metric", "ttft_p59_ms"}, 2},
		{[]string{"history", "--db", db}, 2},
		{[]string{"history", "--db", db, "--plan", "other"}, 2},
		{[]string{"publish", parent}, 2},
		{[]string{"publish", parent, "--db", "mysql://x@127.0.0.1/db"}, 2},
	} {
		if code, _, errs := runCLI(t, nil, c.args...); code != c.want || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, want %d with one line:\n%s", c.args, code, c.want, errs)
		}
	}
}

// TestPublishPostgresPassword: the PostgreSQL password is used only when
// --allow-env allows PGPASSWORD for the server's host, and no message ever
// shows it.
func TestPublishPostgresPassword(t *testing.T) {
	pg, err := engines.StartPostgres(context.Background())
	if err != nil {
		engines.Unavailable(t, err)
	}
	defer pg.Stop()
	dir := filepath.Join(t.TempDir(), "run")
	if err := synthrun.Write(dir, synthrun.Spec{Requests: 50}); err != nil {
		t.Fatal(err)
	}
	url := pg.URL
	env := map[string]string{"PGPASSWORD": pg.Password}
	code, _, errs := runCLI(t, env, "publish", dir, "--db", url)
	if code != 3 || !strings.Contains(errs, "PGPASSWORD is set but not allowed for 127.0.0.1") || strings.Contains(errs, pg.Password) {
		t.Errorf("without --allow-env: exit %d, want 3 saying PGPASSWORD is not allowed:\n%s", code, errs)
	}
	code, _, errs = runCLI(t, env, "publish", dir, "--db", url, "--allow-env", "PGPASSWORD@example.com")
	if code != 3 || strings.Contains(errs, pg.Password) {
		t.Errorf("allowed for another host: exit %d, want 3:\n%s", code, errs)
	}
	code, out, errs := runCLI(t, env, "publish", dir, "--db", url, "--allow-env", "PGPASSWORD@127.0.0.1")
	if code != 0 || !strings.Contains(out, "published to postgres://127.0.0.1:") || strings.Contains(out+errs, pg.Password) {
		t.Fatalf("allowed: exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, map[string]string{"PGPASSWORD": pg.Password, "RUNNER_ALLOW_ENV": "PGPASSWORD@localhost"}, "board", "--db", url)
	if code != 0 || !strings.Contains(out, "nightly") {
		t.Errorf("board --db: exit %d:\n%s%s", code, out, errs)
	}
	wrong := map[string]string{"PGPASSWORD": "not-" + pg.Password}
	code, _, errs = runCLI(t, wrong, "publish", dir, "--db", url, "--allow-env", "PGPASSWORD@127.0.0.1")
	if code != 3 || !strings.Contains(errs, "password authentication failed") || strings.Contains(errs, wrong["PGPASSWORD"]) {
		t.Errorf("a wrong password: exit %d, want 3 saying authentication failed, without the password:\n%s", code, errs)
	}
}
