package cli

import (
	"context"
	"flag"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/board"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/store"
)

// boardDB are the flags with which runner board draws its board from a
// results database (--db) instead of result directories: the same board,
// since the database holds the reports the directories did.
type boardDB struct {
	dbFlags
	where stringList
	since string
}

func (b *boardDB) register(fs *flag.FlagSet) {
	b.dbFlags.register(fs)
	fs.Var(&b.where, "where", "with --db: only runs labelled `key=value` (repeatable)")
	fs.StringVar(&b.since, "since", "", "with --db: only runs started in the last `DURATION` (30d, 12h, 2w) or since a date (2026-01-31)")
}

// used reports whether the board comes from a database.
func (b *boardDB) used() bool { return b.dsn != "" }

// load reads the runs the flags select from the database, and the
// SamplesFunc that reads their requests back for the ranking's decisions
// (store.Samples: the same samples their directories would give). The
// database stays open for it until done is called.
func (b *boardDB) load(ctx context.Context, env *Env) (runs []board.Run, samples board.SamplesFunc, done func(), err error) {
	var f store.Filter
	if f.Where, err = parseWhere(b.where); err != nil {
		return nil, nil, nil, exitcode.Errorf(exitcode.Invalid, "board: %v", err)
	}
	if f.Since, err = parseSince(b.since, time.Now()); err != nil {
		return nil, nil, nil, exitcode.Errorf(exitcode.Invalid, "board: --since: %v", err)
	}
	db, err := openDB(ctx, env, "board", b.dsn, b.allowEnv, true)
	if err != nil {
		return nil, nil, nil, err
	}
	published, err := db.Runs(ctx, f)
	if err != nil {
		db.Close()
		return nil, nil, nil, exitcode.Errorf(exitcode.RunFailed, "board: %v", err)
	}
	runs = board.FromStore(published)
	if len(runs) == 0 {
		db.Close()
		return nil, nil, nil, exitcode.Errorf(exitcode.Invalid, "board: no published run in %s matches", db)
	}
	// A board row names its run by the directory it was published from;
	// one published twice is two runs, and neither's requests are picked.
	ids := map[string][]string{}
	for _, r := range published {
		ids[r.Source] = append(ids[r.Source], r.ID)
	}
	samples = func(source, stage, level string) *aggregate.Samples {
		if len(ids[source]) != 1 {
			return nil
		}
		s, err := db.Samples(ctx, ids[source][0], stage, level)
		if err != nil {
			return nil
		}
		return s
	}
	return runs, samples, func() { db.Close() }, nil
}
