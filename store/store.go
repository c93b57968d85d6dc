// Package store is the results database: `runner publish` writes runs into
// it (labels, facts, every level's metrics, checks and verdicts, and the
// per-request samples the statistics need), and `runner board --db` and
// `runner history` read them back. The embedded default is an SQLite file
// (modernc.org/sqlite, pure Go: the binary stays static); a team shares one
// PostgreSQL server (github.com/jackc/pgx/v5). The schema is versioned by
// embedded SQL migrations (schema_version) and plain enough for Grafana's
// own SQLite or PostgreSQL data source (docs/board.md).
//
// A run is written in one transaction, keyed by its run id (a hash of its
// run.jsonl header), so publishing a run twice is a no-op and a failure
// leaves nothing half-written.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/redact"
)

// Options of Open.
type Options struct {
	// Password is the PostgreSQL password (from the environment the job
	// allowed for the host); "" for none. It appears in no error.
	Password string
	// ReadOnly opens the database for reading only: an SQLite file must
	// exist, and no migration is applied.
	ReadOnly bool
	// ConnectTimeout bounds connecting to a server (0: 10 s).
	ConnectTimeout time.Duration
}

// DB is an open results database.
type DB struct {
	db     *sql.DB
	kind   string
	target Target
	secret string
}

// Open opens the database at t and brings its schema to this Runner's
// version (unless ReadOnly). Every error carries exit code 3 (the database
// is unreachable, read-only or not Runner's) and never the password.
func Open(ctx context.Context, t Target, o Options) (*DB, error) {
	d := &DB{kind: t.Kind, target: t, secret: o.Password}
	var err error
	switch t.Kind {
	case SQLite:
		err = d.openSQLite(t.Path, o.ReadOnly)
	case Postgres:
		err = d.openPostgres(t, o)
	default:
		err = fmt.Errorf("unknown database kind %q", t.Kind)
	}
	if err != nil {
		return nil, d.fail(err)
	}
	if err := d.db.PingContext(ctx); err != nil {
		_ = d.db.Close()
		return nil, d.fail(err)
	}
	if err := d.migrate(ctx, o.ReadOnly); err != nil {
		_ = d.db.Close()
		return nil, d.fail(err)
	}
	return d, nil
}

func (d *DB) openSQLite(path string, readOnly bool) error {
	mode := "rwc"
	if readOnly {
		mode = "ro"
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no database: %w", err)
		}
	} else if dir := filepath.Dir(path); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("its directory %s does not exist", dir)
		}
	}
	q := url.Values{}
	q.Set("mode", mode)
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "cache_size(-65536)") // 64 MiB: a million-row insert keeps its index pages
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return err
	}
	// One connection: SQLite serialises writers anyway, and one
	// connection never waits on itself.
	db.SetMaxOpenConns(1)
	d.db = db
	return nil
}

func (d *DB) openPostgres(t Target, o Options) error {
	u := *t.URL
	u.User = nil
	if name := t.URL.User.Username(); name != "" {
		u.User = url.User(name)
	}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return errors.New("not a valid PostgreSQL URL")
	}
	// pgx fills a missing password from PGPASSWORD and ~/.pgpass on its
	// own; only the one the job allowed for this host may be used.
	cfg.Password = o.Password
	for _, fb := range cfg.Fallbacks {
		if fb.Host != cfg.Host && !strings.HasPrefix(fb.Host, "/") {
			return errors.New("one host per URL")
		}
	}
	cfg.ConnectTimeout = o.ConnectTimeout
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.User == "" {
		return errors.New("no user in the URL (postgres://USER@HOST:PORT/DB)")
	}
	d.db = stdlib.OpenDB(*cfg)
	d.db.SetMaxOpenConns(4)
	return nil
}

// Close closes the database.
func (d *DB) Close() error { return d.fail(d.db.Close()) }

// Kind is SQLite or Postgres.
func (d *DB) Kind() string { return d.kind }

// String names the database as messages may: the SQLite path, or the
// server URL without credentials.
func (d *DB) String() string { return d.target.String() }

// fail wraps a database error for the command line: exit code 3, the
// target named, the password (should any layer ever echo it) and any URL's
// user info removed.
func (d *DB) fail(err error) error {
	if err == nil {
		return nil
	}
	if exitcode.Of(err) == exitcode.Invalid {
		return err // a result directory's problem, already said
	}
	msg := redact.Error(err).Error()
	if d.secret != "" {
		msg = strings.ReplaceAll(msg, d.secret, redact.Marker)
	}
	return exitcode.Errorf(exitcode.RunFailed, "database %s: %s", d.target, msg)
}

// rebind turns the ? placeholders of q into PostgreSQL's $1, $2, ...
func (d *DB) rebind(q string) string {
	if d.kind != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// timeArg is t as a query argument: RFC 3339 text in UTC for SQLite (so
// text order is time order), a timestamptz for PostgreSQL.
func (d *DB) timeArg(t time.Time) any {
	if d.kind == Postgres {
		return t.UTC()
	}
	return formatTime(t)
}

// timeFormat has a fixed number of fraction digits, so text order is
// time order.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }
