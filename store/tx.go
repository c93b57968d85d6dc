package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// writer is one publishing transaction, in either dialect: statements with
// ? placeholders, and many rows of one table at once (a multi-row INSERT
// for SQLite, COPY for PostgreSQL).
type writer interface {
	exec(ctx context.Context, q string, args ...any) (int64, error)
	insertRows(ctx context.Context, table string, cols []string, rows [][]any) error
}

// inTx runs fn in one transaction, committed only when fn returns nil.
func (d *DB) inTx(ctx context.Context, fn func(writer) error) error {
	if d.kind == Postgres {
		return d.inPgTx(ctx, fn)
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	w := &sqliteTx{tx: tx, d: d, stmts: map[string]*sql.Stmt{}}
	defer w.close()
	if err := fn(w); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// inPgTx runs fn in a transaction of pgx's own on one connection, since
// COPY is not in database/sql.
func (d *DB) inPgTx(ctx context.Context, fn func(writer) error) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		if err := fn(&pgTx{tx: tx, d: d}); err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return err
		}
		return tx.Commit(ctx)
	})
}

type sqliteTx struct {
	tx    *sql.Tx
	d     *DB
	stmts map[string]*sql.Stmt
}

func (w *sqliteTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	st, err := w.prepared(ctx, q)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// prepared keeps each statement prepared for the transaction: a run's
// metrics are thousands of the same INSERT.
func (w *sqliteTx) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if st := w.stmts[q]; st != nil {
		return st, nil
	}
	st, err := w.tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	w.stmts[q] = st
	return st, nil
}

func (w *sqliteTx) insertRows(ctx context.Context, table string, cols []string, rows [][]any) error {
	// SQLite binds at most 32766 variables per statement.
	per := max(1, 32766/len(cols))
	args := make([]any, 0, min(len(rows), per)*len(cols))
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), per)]
		rows = rows[len(chunk):]
		args = args[:0]
		for _, r := range chunk {
			args = append(args, r...)
		}
		q := fmt.Sprintf("INSERT INTO %s (%s) VALUES %s", table, strings.Join(cols, ", "), placeholders(len(chunk), len(cols)))
		if _, err := w.exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

func (w *sqliteTx) close() {
	for _, st := range w.stmts {
		_ = st.Close()
	}
}

type pgTx struct {
	tx pgx.Tx
	d  *DB
}

func (w *pgTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := w.tx.Exec(ctx, w.d.rebind(q), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (w *pgTx) insertRows(ctx context.Context, table string, cols []string, rows [][]any) error {
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
	return err
}
