package cli

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/scenario/envpolicy"
	"github.com/runnerbench/runner/store"
)

const publishSynopsis = `runner publish DIR... --db DSN [flags]

Write runs into a results database: each result directory (or every result
directory under DIR), with its labels, facts, levels and every metric,
checks and verdict, and its requests, in one transaction per run. A run
already in the database is left as it is. DSN is an SQLite file (results.db,
sqlite:results.db; created when missing) or postgres://USER@HOST:PORT/DB,
whose password comes from PGPASSWORD when --allow-env PGPASSWORD@HOST allows
it for that host.`

// dbFlags are the flags of the commands that open a results database.
type dbFlags struct {
	dsn      string
	allowEnv stringList
}

func (f *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dsn, "db", "", "the results database: an SQLite `file` (results.db, sqlite:PATH) or postgres://USER@HOST:PORT/DB")
	fs.Var(&f.allowEnv, "allow-env", "`NAME@HOST` may be read: PGPASSWORD@HOST gives the PostgreSQL password for that host (repeatable; also "+envpolicy.AllowEnvVar+")")
}

// openDB opens the database dsn names. A malformed DSN is exit 2; a
// database that cannot be opened exit 3, the password never shown.
func openDB(ctx context.Context, env *Env, cmd, dsn string, allowEnv []string, readOnly bool) (*store.DB, error) {
	t, err := parseDB(cmd, dsn)
	if err != nil {
		return nil, err
	}
	o := store.Options{ReadOnly: readOnly}
	hint := ""
	if t.Kind == store.Postgres {
		allow := &envpolicy.AllowList{}
		if v := env.lookup(envpolicy.AllowEnvVar); v != "" {
			if err := allow.Add(envpolicy.AllowEnvVar, v); err != nil {
				return nil, exitcode.Errorf(exitcode.Invalid, "%s: %v", cmd, err)
			}
		}
		for _, spec := range allowEnv {
			if err := allow.Add("--allow-env", spec); err != nil {
				return nil, exitcode.Errorf(exitcode.Invalid, "%s: %v", cmd, err)
			}
		}
		pw, set := env.Getenv(store.PasswordEnv)
		switch {
		case allow.AllowsCredential(store.PasswordEnv, t.Host, t.Port):
			o.Password = pw
		case set:
			hint = fmt.Sprintf(" (%s is set but not allowed for %s: --allow-env %s@%s)", store.PasswordEnv, t.Host, store.PasswordEnv, t.Host)
		}
	}
	db, err := store.Open(ctx, t, o)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Of(err), "%s: %v%s", cmd, err, hint)
	}
	return db, nil
}

func parseDB(cmd, dsn string) (store.Target, error) {
	if dsn == "" {
		return store.Target{}, exitcode.Errorf(exitcode.Invalid, "%s: no --db given (an SQLite file such as results.db, or postgres://USER@HOST:PORT/DB)", cmd)
	}
	t, err := store.ParseDSN(dsn)
	if err != nil {
		return store.Target{}, exitcode.Errorf(exitcode.Invalid, "%s: --db: %v", cmd, err)
	}
	return t, nil
}

// cmdPublish implements "runner publish".
func cmdPublish(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("publish")
	var df dbFlags
	df.register(fs)
	quiet := fs.Bool("quiet", false, "print nothing but errors")
	pos, err := parseArgs(env, fs, publishSynopsis, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return exitcode.Errorf(exitcode.Invalid, "publish: no result directory given (usage: runner publish DIR... --db DSN)")
	}
	if _, err := parseDB("publish", df.dsn); err != nil {
		return err
	}
	var dirs []string
	for _, p := range pos {
		found, err := resultDirs(p)
		if err != nil {
			return exitcode.Errorf(exitcode.Invalid, "publish: %v", err)
		}
		dirs = append(dirs, found...)
	}
	db, err := openDB(ctx, env, "publish", df.dsn, df.allowEnv, false)
	if err != nil {
		return err
	}
	defer db.Close()
	return publishDirs(ctx, env, db, dirs, *quiet)
}

// publishDirs publishes each directory in its own transaction. A broken
// directory is listed and the others still go in (exit 2 at the end); a
// database error stops at once (exit 3).
func publishDirs(ctx context.Context, env *Env, db *store.DB, dirs []string, quiet bool) error {
	var bad []string
	for _, dir := range dirs {
		p, err := db.Publish(ctx, dir)
		switch {
		case err != nil && exitcode.Of(err) == exitcode.Invalid:
			bad = append(bad, err.Error())
			continue
		case err != nil:
			return err
		}
		if quiet {
			continue
		}
		if p.Already {
			fmt.Fprintf(env.Stdout, "%s: already in %s as run %s (nothing written)\n", dir, db, p.RunID)
		} else {
			fmt.Fprintf(env.Stdout, "%s: published to %s as run %s (%d requests)\n", dir, db, p.RunID, p.Requests)
		}
	}
	if len(bad) > 0 {
		return exitcode.Errorf(exitcode.Invalid, "publish: %d of %d result directories not published:\n%s", len(bad), len(dirs), strings.Join(bad, "\n"))
	}
	return nil
}

// resultDirs is p when it is a result directory (it holds run.jsonl), else
// every result directory below it (hidden directories and symbolic links
// not followed), in name order.
func resultDirs(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", p)
	}
	if records.HasRun(p) {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != p && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if records.HasRun(path) {
			out = append(out, path)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no result directory in it (one holds %s)", p, records.FileRun)
	}
	slices.Sort(out)
	return out, nil
}

// publishAfter is --publish of run and merge: the database is checked
// before the run (a database that cannot be opened is exit 3 before any
// traffic), and the result directory published once the reports are
// written.
type publishAfter struct {
	dsn      string
	allowEnv []string
	quiet    bool
}

func (p *publishAfter) check(ctx context.Context, env *Env, cmd string) error {
	if p.dsn == "" {
		return nil
	}
	db, err := openDB(ctx, env, cmd+" --publish", p.dsn, p.allowEnv, false)
	if err != nil {
		return err
	}
	return db.Close()
}

// publish publishes dir and, unless quiet, says on stderr where it went
// and as which run (a line in CI's log naming the database that holds it).
func (p *publishAfter) publish(ctx context.Context, env *Env, cmd, dir string) error {
	if p.dsn == "" {
		return nil
	}
	db, err := openDB(context.WithoutCancel(ctx), env, cmd+" --publish", p.dsn, p.allowEnv, false)
	if err != nil {
		return err
	}
	defer db.Close()
	pub, err := db.Publish(context.WithoutCancel(ctx), dir)
	if err != nil {
		return fmt.Errorf("--publish: %w", err)
	}
	if p.quiet {
		return nil
	}
	if pub.Already {
		fmt.Fprintf(env.Stderr, "%s: %s already in %s as run %s (nothing written)\n", cmd, dir, db, pub.RunID)
	} else {
		fmt.Fprintf(env.Stderr, "%s: %s published to %s as run %s (%d requests)\n", cmd, dir, db, pub.RunID, pub.Requests)
	}
	return nil
}
