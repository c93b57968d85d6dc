package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runnerbench/runner/board"
	"github.com/runnerbench/runner/internal/atomicfile"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/records"
)

const boardSynopsis = `runner board DIR... [flags]  |  runner board --db DSN [--where key=value] [--since 30d]

Put many runs side by side: DIR is a result directory, or a directory holding
them (searched below; the shards of a sharded run are merged first). One
leaderboard per comparable group (the same plan, stage and load shape), each
run named by its labels (then its endpoint and model), ranked by --rank,
each ranked run judged against the one above it (vs above: decided at
--confidence for the group, tied, or undecided), with the Pareto frontier of
total against per-user throughput. Runs that failed their checks, or a level
of which every request failed, are listed after the ranking with the reason;
runs that differ only by a --replicate-label (a night, a date) are one row,
their mean, with their spread. Runs that cannot be compared are listed apart
with the reason; a directory that cannot be read is listed as skipped, naming
the file. Prints the board as a table (--markdown: as Markdown; --json: as
JSON); --out DIR writes board.md, board.html and board.json. With --db DSN
the runs come from a results database (runner publish), the same board as
their directories', narrowed by --where key=value and --since 30d.`

// boardOptions are the flags of "runner board".
type boardOptions struct {
	paths     []string
	out       string
	metrics   string
	rank      string
	markdown  bool
	json      bool
	quiet     bool
	recompute bool
	// replicate are --replicate-label keys; confidence the ranking's.
	replicate  stringList
	confidence float64
	wide       bool
	// db draws the board from a results database (--db, --where, --since).
	db boardDB
}

// cmdBoard implements "runner board DIR...".
func cmdBoard(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("board")
	o := &boardOptions{}
	fs.StringVar(&o.out, "out", "", "write board.md, board.html and board.json into this `dir`ectory")
	fs.StringVar(&o.metrics, "metrics", strings.Join(board.DefaultMetrics, ","), "comma-separated `metrics`, one column each, taken at the level that ranks the run")
	fs.StringVar(&o.rank, "rank", "", "rank `key`: METRIC, 'METRIC at CONDITION' (the best value over the levels that meet it, e.g. 'output_tps_total at ttft_p95_ms < 500') or capacity:TARGET (a search stage's); default: a search's first target's capacity, else the best output_tps_total")
	fs.BoolVar(&o.markdown, "markdown", false, "print the board as Markdown (a README section or a pull-request comment)")
	fs.BoolVar(&o.json, "json", false, "print the board as JSON")
	fs.BoolVar(&o.quiet, "quiet", false, "print nothing on stdout (with --out)")
	fs.BoolVar(&o.recompute, "recompute", false, "compute every run's report from its records, even where a report.json that belongs to them is present (slower, the same numbers)")
	fs.Var(&o.replicate, "replicate-label", "a label `key` that tells replicates apart (night, date): runs that differ only by it are one row, with their spread (repeatable)")
	fs.Float64Var(&o.confidence, "confidence", 0.95, "the `confidence` of the ranking's decisions, for each group's together")
	registerWide(fs, &o.wide)
	o.db.register(fs)
	pos, err := parseArgs(env, fs, boardSynopsis, args)
	if err != nil {
		return err
	}
	o.paths = pos
	opts, err := o.boardOptions()
	if err != nil {
		return err
	}
	runs, skips, samples, done, err := o.load(ctx, env)
	if err != nil {
		return err
	}
	defer done()
	opts.Samples = samples
	for _, s := range skips {
		fmt.Fprintf(env.Stderr, "runner: board: skipped %s\n", oneLine(s.String()))
	}
	b, err := board.Build(runs, opts)
	if err != nil {
		return exitcode.Errorf(exitcode.Invalid, "board: %v", err)
	}
	b.Skipped = skips
	if o.out != "" {
		if err := writeBoard(o.out, b); err != nil {
			return err
		}
	}
	return printBoard(env, o, b)
}

// boardOptions checks the flags and turns them into the board's options.
func (o *boardOptions) boardOptions() (board.Options, error) {
	var opts board.Options
	if o.db.used() && len(o.paths) > 0 {
		return opts, exitcode.Errorf(exitcode.Invalid, "board: give result directories or --db, not both")
	}
	if len(o.paths) == 0 && !o.db.used() {
		return opts, exitcode.Errorf(exitcode.Invalid, "board: no result directories given (usage: runner board DIR...)")
	}
	if o.markdown && o.json {
		return opts, exitcode.Errorf(exitcode.Invalid, "board: --markdown and --json both print the board: choose one")
	}
	for _, m := range strings.Split(o.metrics, ",") {
		if m = strings.TrimSpace(m); m != "" {
			opts.Metrics = append(opts.Metrics, m)
		}
	}
	if len(opts.Metrics) == 0 {
		return opts, exitcode.Errorf(exitcode.Invalid, "board: --metrics: name at least one metric")
	}
	rank, err := board.ParseRank(o.rank)
	if err != nil {
		return opts, exitcode.Errorf(exitcode.Invalid, "board: --rank: %v", err)
	}
	opts.Rank = rank
	if !(o.confidence > 0 && o.confidence < 1) {
		return opts, exitcode.Errorf(exitcode.Invalid, "board: --confidence %g is not between 0 and 1 (e.g. 0.95)", o.confidence)
	}
	opts.Replicate, opts.Confidence = o.replicate, o.confidence
	return opts, nil
}

// load reads the runs of the given directories (or the database), with the
// SamplesFunc the ranking's decisions read their requests by and done to
// call when the board is built; a path that is not there or holds no run,
// or a board of nothing, is a command-line error.
func (o *boardOptions) load(ctx context.Context, env *Env) ([]board.Run, []board.Skip, board.SamplesFunc, func(), error) {
	if o.db.used() {
		runs, samples, done, err := o.db.load(ctx, env)
		return runs, nil, samples, done, err
	}
	runs, skips, err := board.Load(o.paths, board.LoadOptions{Recompute: o.recompute})
	if err != nil {
		return nil, nil, nil, nil, exitcode.Errorf(exitcode.Invalid, "board: %v", err)
	}
	if len(runs) == 0 {
		msgs := make([]string, len(skips))
		for i, s := range skips {
			msgs[i] = "skipped " + oneLine(s.String())
		}
		return nil, nil, nil, nil, exitcode.Errorf(exitcode.Invalid, "board: no run could be read:\n%s", strings.Join(msgs, "\n"))
	}
	return runs, skips, board.DirSamples(runs), func() {}, nil
}

// writeBoard renders board.md, board.html and board.json in memory first,
// then writes each whole (atomicfile): a failure leaves no half-written
// file. A result directory is refused as --out: its next run would find
// files it did not write there.
func writeBoard(dir string, b *board.Board) error {
	if records.IsResultDir(dir) {
		return exitcode.Errorf(exitcode.Invalid, "board: --out %s is a result directory: write the board elsewhere", dir)
	}
	files := []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"board.md", func(w *bytes.Buffer) error { return board.WriteMarkdown(w, b) }},
		{"board.html", func(w *bytes.Buffer) error { return board.WriteHTML(w, b) }},
		{"board.json", func(w *bytes.Buffer) error { return board.WriteJSON(w, b) }},
	}
	data := make([][]byte, len(files))
	for i, f := range files {
		var buf bytes.Buffer
		if err := f.render(&buf); err != nil {
			return exitcode.Errorf(exitcode.RunFailed, "board: %s: %v", f.name, err)
		}
		data[i] = buf.Bytes()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exitcode.Errorf(exitcode.RunFailed, "board: --out: %v", err)
	}
	for i, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.name), data[i]); err != nil {
			return exitcode.Errorf(exitcode.RunFailed, "board: %v", err)
		}
	}
	return nil
}

// printBoard prints the board on stdout in the chosen form.
func printBoard(env *Env, o *boardOptions, b *board.Board) error {
	var err error
	switch {
	case o.quiet:
	case o.markdown:
		err = board.WriteMarkdown(env.Stdout, b)
	case o.json:
		err = board.WriteJSON(env.Stdout, b)
	default:
		err = board.WriteTable(env.Stdout, b, fitWidth(env, o.wide))
	}
	if err != nil {
		return exitcode.Errorf(exitcode.RunFailed, "board: %v", err)
	}
	return nil
}

// oneLine keeps a message to one line of stderr.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
