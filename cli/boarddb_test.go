package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/runnerbench/runner/board"
	"github.com/runnerbench/runner/store/synthrun"
)

// TestBoardDBDecides (issue 38, item 8): a board drawn from the results
// database judges single runs by their requests as the board of their
// directories does: an engine at half the speed per token is decided
// below the fast one, two runs of one engine (other seeds) are tied, and
// the two boards' decisions agree figure for figure.
func TestBoardDBDecides(t *testing.T) {
	root := t.TempDir()
	if err := synthrun.WriteEngines(root); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "results.db")
	if code, out, errs := runCLI(t, nil, "publish", root, "--db", db); code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errs)
	}
	boardOf := func(args ...string) *board.Board {
		t.Helper()
		code, out, errs := runCLI(t, nil, append([]string{"board", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("board %v: exit %d\n%s", args, code, errs)
		}
		var b board.Board
		if err := json.Unmarshal([]byte(out), &b); err != nil {
			t.Fatalf("board %v: %v\n%s", args, err, out)
		}
		if len(b.Groups) != 1 || len(b.Groups[0].Rows) != 3 {
			t.Fatalf("board %v: %+v", args, b.Groups)
		}
		return &b
	}
	fromDB, fromDirs := boardOf("--db", db), boardOf(root)
	rows := fromDB.Groups[0].Rows
	if d := rows[1].VsAbove; rows[0].Name != "engine=fast" || d == nil || d.Verdict != board.Decided || d.By != "requests" || d.Interval == nil || d.Interval.Hi >= 0 {
		t.Errorf("from the database, half the speed below the fast engine: %+v", d)
	}
	if d := rows[2].VsAbove; d == nil || d.Verdict != board.Tied {
		t.Errorf("from the database, two runs of one engine: %+v", d)
	}
	for i := 1; i < 3; i++ {
		a, b := rows[i].VsAbove, fromDirs.Groups[0].Rows[i].VsAbove
		if a == nil || b == nil || a.Verdict != b.Verdict || a.Interval == nil || b.Interval == nil || *a.Interval != *b.Interval {
			t.Errorf("row %d: from the database %+v, from the directories %+v", i, a, b)
		}
	}
}
