package store

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dialectTypes are the PostgreSQL column types and the SQLite type each
// stands for: the one place the two dialects' migrations may differ.
var dialectTypes = []struct{ postgres, sqlite string }{
	{"TIMESTAMPTZ", "TEXT"},
	{"JSONB", "TEXT"},
	{"BIGINT", "INTEGER"},
	{"BOOLEAN", "INTEGER"},
	{"DOUBLE PRECISION", "REAL"},
}

// statements are a migration's SQL statements, comments dropped and
// whitespace collapsed, with PostgreSQL's types (when pg) written as the
// SQLite types they stand for.
func statements(sql string, pg bool) []string {
	var lines []string
	for _, l := range strings.Split(sql, "\n") {
		l, _, _ = strings.Cut(l, "--")
		lines = append(lines, l)
	}
	var out []string
	for _, st := range strings.Split(strings.Join(lines, "\n"), ";") {
		st = strings.Join(strings.Fields(st), " ")
		st = strings.ReplaceAll(strings.ReplaceAll(st, "( ", "("), " )", ")")
		if st == "" {
			continue
		}
		if pg {
			for _, t := range dialectTypes {
				st = regexp.MustCompile(`\b`+t.postgres+`\b`).ReplaceAllString(st, t.sqlite)
			}
		}
		out = append(out, st)
	}
	return out
}

var createTable = regexp.MustCompile(`^CREATE TABLE (\w+) \((.*)\)$`)

// tablesOf are the tables the statements create, in order, each with its
// columns in order.
func tablesOf(sts []string) (names []string, cols map[string][]string) {
	cols = map[string][]string{}
	for _, st := range sts {
		m := createTable.FindStringSubmatch(st)
		if m == nil {
			continue
		}
		names = append(names, m[1])
		for _, def := range splitTop(m[2]) {
			if name, _, _ := strings.Cut(strings.TrimSpace(def), " "); name != "PRIMARY" {
				cols[m[1]] = append(cols[m[1]], name)
			}
		}
	}
	return names, cols
}

// TestMigrationsAgree: the two dialects' migrations are the same files,
// statement for statement, but for the column types dialectTypes maps; and
// Tables lists every table they create (after schema_version, which the
// code creates), in their order.
func TestMigrationsAgree(t *testing.T) {
	lite, err := migrationsOf(SQLite)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := migrationsOf(Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if len(lite) != len(pg) || len(lite) == 0 {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones", len(lite), len(pg))
	}
	var all []string
	for i := range lite {
		if lite[i].name != pg[i].name {
			t.Errorf("migration %d: %s (SQLite) and %s (PostgreSQL)", i+1, lite[i].name, pg[i].name)
		}
		a, b := statements(lite[i].sql, false), statements(pg[i].sql, true)
		for j := range max(len(a), len(b)) {
			if j >= len(a) || j >= len(b) || a[j] != b[j] {
				t.Errorf("%s: statement %d differs:\n  SQLite:     %s\n  PostgreSQL: %s", lite[i].name, j+1, at(a, j), at(b, j))
				break
			}
		}
		all = append(all, a...)
	}
	names, cols := tablesOf(all)
	if want := append([]string{"schema_version"}, names...); !slices.Equal(Tables, want) {
		t.Errorf("Tables = %v, the migrations create %v", Tables, want)
	}
	if len(cols["requests"]) < 20 || !slices.Contains(cols["runs"], "published_at") {
		t.Errorf("columns read from the migrations: %v", cols)
	}
}

// TestDocsSchemaTable: docs/board.md's schema table names every table of
// the migrations with its columns, in order.
func TestDocsSchemaTable(t *testing.T) {
	b, err := os.ReadFile("../docs/board.md")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrationsOf(SQLite)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, m := range ms {
		all = append(all, statements(m.sql, false)...)
	}
	names, cols := tablesOf(all)
	names = append([]string{"schema_version"}, names...)
	cols["schema_version"] = []string{"version", "applied_at"}
	row := regexp.MustCompile("^\\| `(\\w+)` \\| [^|]+ \\| (.*) \\|$")
	paren := regexp.MustCompile(`\([^)]*\)`)
	tick := regexp.MustCompile("`(\\w+)`")
	var docNames []string
	for _, l := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil || m[1] == "table" {
			continue
		}
		docNames = append(docNames, m[1])
		var got []string
		for _, c := range tick.FindAllStringSubmatch(paren.ReplaceAllString(m[2], ""), -1) {
			got = append(got, c[1])
		}
		if !slices.Equal(got, cols[m[1]]) {
			t.Errorf("docs/board.md: table %s has columns %v, the migrations %v", m[1], got, cols[m[1]])
		}
	}
	if !slices.Equal(docNames, names) {
		t.Errorf("docs/board.md's schema table lists %v, the migrations create %v", docNames, names)
	}
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}

func at(sts []string, i int) string {
	if i < len(sts) {
		return sts[i]
	}
	return "(none)"
}
