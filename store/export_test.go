package store

import "context"

// Exec runs one statement (tests: creating databases, breaking rows).
func (d *DB) Exec(ctx context.Context, q string) error {
	_, err := d.db.ExecContext(ctx, q)
	return d.fail(err)
}

// QueryRows runs a query and counts its rows (tests: the Grafana
// dashboard's SQL against the schema).
func (d *DB) QueryRows(ctx context.Context, q string) (int, error) {
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}
