package pipeline

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// openFixture writes a whole run's records into a new directory (the fake
// shard 0 of 1: a run of one stage, two levels) and, unless rep is nil,
// rep as its report.json. It returns the directory.
func openFixture(t *testing.T, edit func(s *shardSpec), rep func(dir string) *result.Report) string {
	t.Helper()
	s := fakeShard(0, 1)
	if edit != nil {
		edit(s)
	}
	dir := s.write(t, filepath.Join(t.TempDir(), "run"))
	if rep != nil {
		writeReport(t, dir, rep(dir))
	}
	return dir
}

func writeReport(t *testing.T, dir string, rep *result.Report) {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, records.FileReport), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// reportAlone removes the records of dir, leaving its report.json.
func reportAlone(dir string) string {
	for _, f := range records.Files {
		os.Remove(filepath.Join(dir, f))
	}
	return dir
}

// recomputed is the report the records of dir give, edited.
func recomputed(t *testing.T, edit func(*result.Report)) func(dir string) *result.Report {
	return func(dir string) *result.Report {
		t.Helper()
		rep, err := Recompute(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		edit(rep)
		return rep
	}
}

// TestOpenChoosesTheReport: a report.json that belongs to the records (the
// same plan hash, start and runner version) is the report; one of another
// run, or any with Recompute, gives way to the records'; a report.json alone
// is the report, and Recompute cannot change that.
func TestOpenChoosesTheReport(t *testing.T) {
	const mark = "a mark only report.json carries"
	marked := recomputed(t, func(r *result.Report) { r.Warnings = append(r.Warnings, mark) })
	carries := func(op *Opened) bool { return strings.Contains(strings.Join(op.Report.Warnings, "\n"), mark) }

	own := openFixture(t, nil, marked)
	other := openFixture(t, nil, recomputed(t, func(r *result.Report) {
		r.Warnings = append(r.Warnings, mark)
		r.StartedAt = r.StartedAt.Add(time.Second)
	}))
	alone := reportAlone(openFixture(t, nil, marked))
	for name, c := range map[string]struct {
		dir       string
		o         OpenOptions
		fromFile  bool
		hasHeader bool
	}{
		"its own report":            {own, OpenOptions{}, true, true},
		"its own, recomputed":       {own, OpenOptions{Recompute: true}, false, true},
		"another run's report":      {other, OpenOptions{}, false, true},
		"a report alone":            {alone, OpenOptions{}, true, false},
		"a report alone, recompute": {alone, OpenOptions{Recompute: true}, true, false},
	} {
		op, err := Open(c.dir, c.o)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if carries(op) != c.fromFile {
			t.Errorf("%s: report from report.json %v, want %v", name, carries(op), c.fromFile)
		}
		if (op.Header != nil) != c.hasHeader || op.Records != nil || op.Dir != c.dir {
			t.Errorf("%s: header %v, records %v, dir %s", name, op.Header != nil, op.Records != nil, op.Dir)
		}
	}
	op, err := Open(own, OpenOptions{Records: true})
	if err != nil || op.Records == nil || len(op.Records.Stages) != 1 || len(op.Records.Stages[0].Levels) != 2 || !carries(op) {
		t.Fatalf("with Records: %+v, %v", op, err)
	}
	if got := op.Report.Stages[0].Points[1].Completed; got != 20 {
		t.Errorf("level c=4: %d completed, want the fixture's 20", got)
	}
}

// TestOpenRefuses: each directory Open cannot take is one *OpenError
// naming the file at fault and saying why.
func TestOpenRefuses(t *testing.T) {
	shard := func(s *shardSpec) { s.header.Shard = &result.Shard{Index: 1, Count: 2} }
	badLabels := recomputed(t, func(r *result.Report) { r.Labels = result.Labels{"team": "a\x1b[31m"} })
	same := recomputed(t, func(*result.Report) {})
	noRecords := reportAlone(openFixture(t, nil, same))
	badHeader := openFixture(t, nil, nil)
	os.WriteFile(filepath.Join(badHeader, records.FileRun), []byte("{\"kind\": \"level\"}\n"), 0o644)
	badRequests := openFixture(t, nil, nil)
	os.WriteFile(filepath.Join(badRequests, records.FileRequests), []byte("{\"stage\": oops\n"), 0o644)
	foreign := openFixture(t, nil, nil)
	os.WriteFile(filepath.Join(foreign, records.FileReport), []byte(`{"name": "not ours"}`), 0o644)

	type want struct{ file, says string }
	for name, c := range map[string]struct {
		dir string
		o   OpenOptions
		want
	}{
		"empty":                  {t.TempDir(), OpenOptions{}, want{records.FileRun, "missing: not a result directory"}},
		"report without records": {noRecords, OpenOptions{Records: true}, want{records.FileRun, "missing: the directory holds a report.json alone"}},
		"a shard":                {openFixture(t, shard, nil), OpenOptions{}, want{records.FileRun, "shard 1 of 2 alone: its levels hold a part of each level; merge every shard first (runner merge)"}},
		"a shard's report":       {reportAlone(openFixture(t, shard, same)), OpenOptions{}, want{records.FileReport, "shard 1 of 2 alone"}},
		"labels past limits":     {openFixture(t, nil, badLabels), OpenOptions{}, want{records.FileReport, "not allowed in a value"}},
		"recomputed bad labels":  {openFixture(t, func(s *shardSpec) { s.header.Labels = result.Labels{"team": "a\x1b[31m"} }, nil), OpenOptions{}, want{records.FileRun, "not allowed in a value"}},
		"no header":              {badHeader, OpenOptions{}, want{records.FileRun, "its first line is not a run's header"}},
		"broken requests":        {badRequests, OpenOptions{}, want{"", "recomputing its report from the records: " + filepath.Join(badRequests, records.FileRequests) + ": line 1"}},
		"foreign report":         {foreign, OpenOptions{}, want{records.FileReport, "not a Runner report"}},
	} {
		_, err := Open(c.dir, c.o)
		var oe *OpenError
		if !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an *OpenError", name, err)
			continue
		}
		if at := filepath.Join(c.dir, c.file); oe.Path != at || !strings.Contains(oe.Err.Error(), c.says) {
			t.Errorf("%s: %q at %s, want %q at %s", name, oe.Err, oe.Path, c.says, at)
		}
		if strings.Count(err.Error(), c.dir) != 1+strings.Count(c.says, c.dir) {
			t.Errorf("%s: %q names the directory more often than the file and its cause do", name, err)
		}
	}
	op, err := Open(openFixture(t, shard, nil), OpenOptions{Shard: true})
	if err != nil || op.Report.Shard == nil || op.Report.Shard.Index != 1 {
		t.Errorf("a shard with Shard: %+v, %v", op, err)
	}
}

// TestOpenShards: a sharded run's shards open as the whole run; a set that
// misses a shard is refused as a merge is.
func TestOpenShards(t *testing.T) {
	dirs := writeShards(t, 2, nil)
	op, err := OpenShards([]string{dirs[1], dirs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if op.Dir != dirs[0]+", "+dirs[1] || op.Report.Shard != nil || op.Report.Shards != 2 || op.Header == nil || op.Records != nil {
		t.Errorf("opened %s: shard %v, shards %d, header %v", op.Dir, op.Report.Shard, op.Report.Shards, op.Header != nil)
	}
	if got := op.Report.Stages[0].Points[1].Completed; got != 20 {
		t.Errorf("level c=4: %d completed, want both shards' 20", got)
	}
	if _, err := OpenShards(dirs[:1]); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "shard 1 is missing") {
		t.Errorf("one shard of two: %v", err)
	}
}
