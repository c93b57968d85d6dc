package board

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// TestLoadBadInput: every kind of bad result directory is one listed skip
// naming the file at fault, beside the good runs, never a panic or a
// half-read run; a path that is not there, or holds no run, is an error.
func TestLoadBadInput(t *testing.T) {
	good := filepath.Join(realRuns(t), "alpha", "night-1")
	root := t.TempDir()
	put := func(dir, name, body string) string {
		t.Helper()
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(d, name)
	}
	report, err := os.ReadFile(filepath.Join(good, records.FileReport))
	if err != nil {
		t.Fatal(err)
	}
	copyDir(t, good, filepath.Join(root, "ok"))
	want := map[string]string{
		put("truncated", records.FileReport, string(report[:len(report)/2])):                                                                      "truncated JSON",
		put("foreign", records.FileReport, `{"name": "not ours", "items": [1, 2]}`):                                                               "not a Runner report",
		put("newer", records.FileReport, `{"schema_version": 2, "plan": {"name": "p", "hash": "h"}, "stages": []}`):                               "written by a newer Runner",
		put("typed", records.FileReport, `{"schema_version": 1, "plan": {"name": "p", "hash": "h"}, "stages": 7}`):                                "not a Runner report",
		put("garbage", records.FileReport, "\x00\x01 not json"):                                                                                   "malformed JSON",
		put("badrun", records.FileRun, "{\"kind\": \"level\"}\n"):                                                                                 "not a run's header",
		put("shard", records.FileReport, strings.Replace(string(report), `"stop_reason"`, `"shard": {"index": 1, "count": 2}, "stop_reason"`, 1)): "shard 1 of 2 alone",
		put("hostile", records.FileReport, strings.Replace(string(report), `"hardware": "sim"`, `"hardware": "sim\u001b[31m"`, 1)):                "not allowed in a value",
	}
	// Records beside a malformed report.json: the report is at fault, named.
	copyDir(t, good, filepath.Join(root, "badreport"))
	want[put("badreport", records.FileReport, "{\"schema_version\": 1,")] = "truncated JSON"
	// A shard without its sibling: its directory is skipped, saying which
	// shard is missing.
	lone := filepath.Join(root, "lone-shard")
	copyDir(t, good, lone)
	os.Remove(filepath.Join(lone, records.FileReport))
	editHeader(t, lone, func(h *records.Header) { h.Shard = &result.Shard{Index: 0, Count: 2} })
	want[lone] = "shard 1 is missing"
	runs, skips, err := Load([]string{root}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Source != filepath.Join(root, "ok") {
		t.Errorf("runs: %d (want the good copy alone)", len(runs))
	}
	got := map[string]string{}
	for _, s := range skips {
		got[s.Path] = s.Reason
	}
	for path, reason := range want {
		if !strings.Contains(got[path], reason) {
			t.Errorf("%s: skip %q, want one saying %q", path, got[path], reason)
		}
	}
	if len(skips) != len(want) {
		t.Errorf("%d skips, want %d: %v", len(skips), len(want), skips)
	}
	if _, _, err := Load([]string{filepath.Join(root, "absent")}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("a missing path: %v", err)
	}
	empty := t.TempDir()
	if _, _, err := Load([]string{empty}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no result directory") {
		t.Errorf("an empty directory: %v", err)
	}
}

// TestLoadFromRecords: a run killed before its end (run.jsonl without its
// end, no report.json) is recomputed from its records and set apart as
// interrupted; a report.json that belongs to other records is ignored for
// the records'; relabelled copies keep their own labels.
func TestLoadFromRecords(t *testing.T) {
	good := filepath.Join(realRuns(t), "beta", "night-1")
	root := t.TempDir()
	killed := filepath.Join(root, "killed")
	copyDir(t, good, killed)
	if err := os.Remove(filepath.Join(killed, records.FileReport)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(killed, records.FileRun)
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(bytes.TrimRight(data, "\n"), []byte("\n"))
	if !bytes.Contains(lines[len(lines)-1], []byte(`"kind":"end"`)) {
		t.Fatalf("last line of run.jsonl: %s", lines[len(lines)-1])
	}
	if err := os.WriteFile(path, bytes.Join(lines[:len(lines)-1], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, "stale")
	copyDir(t, good, stale)
	other, _ := os.ReadFile(filepath.Join(realRuns(t), "alpha", "night-1", records.FileReport))
	if err := os.WriteFile(filepath.Join(stale, records.FileReport), other, 0o644); err != nil {
		t.Fatal(err)
	}
	relabel(t, stale, labelsOf("engine=gamma"))
	runs, skips, err := Load([]string{root}, LoadOptions{})
	if err != nil || len(skips) != 0 || len(runs) != 2 {
		t.Fatalf("Load: %d runs, skips %v, err %v", len(runs), skips, err)
	}
	b := mustBuild(t, runs, Options{})
	if len(b.Apart) != 1 || b.Apart[0].Source != killed || !strings.Contains(b.Apart[0].Reason, "interrupted") {
		t.Errorf("apart: %+v", b.Apart)
	}
	if len(b.Groups) != 1 || len(b.Groups[0].Rows) != 1 {
		t.Fatalf("groups: %+v", b.Groups)
	}
	row := b.Groups[0].Rows[0]
	if row.Source != stale || row.Labels.String() != "engine=gamma" || *row.Key != bestOf(t, runs, stale, "output_tps_total") {
		t.Errorf("the stale report.json's numbers were used: %+v", row)
	}
	beta := bestOf(t, runs, stale, "output_tps_total")
	if alpha := mustLoadOne(t, filepath.Join(realRuns(t), "alpha", "night-1")); beta == bestOf(t, alpha, alpha[0].Source, "output_tps_total") {
		t.Error("the stale copy reports the other run's throughput")
	}
}

func mustLoadOne(t *testing.T, dir string) []Run {
	t.Helper()
	runs, skips, err := Load([]string{dir}, LoadOptions{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("Load %s: %v %v", dir, skips, err)
	}
	return runs
}
