package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrations are the schema's versions, one SQL file each per dialect:
// migrations/<kind>/NNNN_what.sql, applied in order, each in its own
// transaction with its row in schema_version.
//
//go:embed migrations
var migrations embed.FS

// SchemaVersion is the schema version this Runner writes and reads.
var SchemaVersion = len(mustMigrations(SQLite))

type migration struct {
	version int
	name    string
	sql     string
}

func mustMigrations(kind string) []migration {
	ms, err := migrationsOf(kind)
	if err != nil {
		panic(err) // embedded at build time: a broken file is a build bug
	}
	return ms
}

func migrationsOf(kind string) ([]migration, error) {
	dir := path.Join("migrations", kind)
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql", e.Name())
		}
		b, err := migrations.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.name, i+1)
		}
	}
	return out, nil
}

const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_version (
  version    INTEGER PRIMARY KEY,
  applied_at TEXT NOT NULL
)`

// version is the database's schema version: 0 for an empty database.
func (d *DB) version(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := d.db.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_version").Scan(&v)
	if err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// migrate brings the schema to SchemaVersion. A read-only open only checks
// it; a database of a newer Runner is refused either way, since its
// tables may mean something this Runner does not know.
func (d *DB) migrate(ctx context.Context, readOnly bool) error {
	if readOnly {
		v, err := d.version(ctx)
		switch {
		case err != nil && d.empty(ctx):
			return errors.New("no Runner results in it (no schema_version table); runner publish creates them")
		case err != nil:
			return err
		case v != SchemaVersion:
			return versionError(v)
		}
		return nil
	}
	if v, err := d.version(ctx); err == nil && v == SchemaVersion {
		return nil // up to date: nothing to write, so a read-only role gets as far as its first INSERT
	}
	ms, err := migrationsOf(d.kind)
	if err != nil {
		return err
	}
	if _, err := d.db.ExecContext(ctx, createVersionTable); err != nil {
		return err
	}
	for _, m := range ms {
		if err := d.apply(ctx, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	v, err := d.version(ctx)
	if err != nil {
		return err
	}
	if v != SchemaVersion {
		return versionError(v)
	}
	return nil
}

func versionError(v int) error {
	if v > SchemaVersion {
		return fmt.Errorf("its schema is version %d, newer than this Runner's %d: use a newer Runner", v, SchemaVersion)
	}
	return fmt.Errorf("its schema is version %d, this Runner reads %d: runner publish migrates it", v, SchemaVersion)
}

// empty reports whether the database holds no tables at all.
func (d *DB) empty(ctx context.Context) bool {
	q := "SELECT COUNT(*) FROM sqlite_master"
	if d.kind == Postgres {
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()"
	}
	var n int
	return d.db.QueryRowContext(ctx, q).Scan(&n) == nil && n == 0
}

// apply runs one migration unless it is applied already, in a transaction
// that also records it, so two publishers migrating at once apply it once.
func (d *DB) apply(ctx context.Context, m migration) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if d.kind == Postgres {
		// Serialise concurrent migrations (SQLite's immediate transactions
		// already do).
		if _, err := tx.ExecContext(ctx, "LOCK TABLE schema_version IN EXCLUSIVE MODE"); err != nil {
			return err
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, d.rebind("SELECT COUNT(*) FROM schema_version WHERE version = ?"), m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, d.rebind("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)"),
		m.version, formatTime(time.Now())); err != nil {
		return err
	}
	return tx.Commit()
}
