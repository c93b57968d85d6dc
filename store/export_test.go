package store

import "context"

// Exec runs one statement (tests: creating databases, breaking rows).
func (d *DB) Exec(ctx context.Context, q string) error {
	_, err := d.db.ExecContext(ctx, q)
	return d.fail(err)
}
