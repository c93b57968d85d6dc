package store

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Kinds of database.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// PasswordEnv is the environment variable a PostgreSQL password comes from,
// when the job allows it for the server's host (--allow-env PGPASSWORD@HOST).
const PasswordEnv = "PGPASSWORD"

// Target is a parsed --db: an SQLite file or a PostgreSQL server. It never
// holds a password; the caller passes one to Open, from the environment
// the job allowed.
type Target struct {
	Kind string
	// Path is the SQLite file.
	Path string
	// URL is the PostgreSQL URL (without a password); Host and Port are its
	// server, for the job's allow-list.
	URL        *url.URL
	Host, Port string
}

// ParseDSN parses a --db value: "results.db" or "sqlite:results.db" (an
// SQLite file), or "postgres://USER@HOST:PORT/DB" (also postgresql://). A
// password in the URL is refused: it would sit in the command line, shell
// history and CI logs; it comes only through --allow-env. Errors never
// repeat the value's user info.
func ParseDSN(dsn string) (Target, error) {
	switch {
	case dsn == "":
		return Target{}, errors.New("no database given")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return parsePostgres(dsn)
	case strings.Contains(dsn, "://"):
		return Target{}, fmt.Errorf("%s: not a database this runner knows (an SQLite file's path, sqlite:PATH, or postgres://USER@HOST:PORT/DB)", Redact(dsn))
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	if path == "" {
		return Target{}, errors.New("sqlite: no file path given")
	}
	if strings.ContainsAny(path, "?#") {
		return Target{}, fmt.Errorf("%s: an SQLite path may not hold ? or # (no options are taken)", path)
	}
	return Target{Kind: SQLite, Path: path}, nil
}

func parsePostgres(dsn string) (Target, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return Target{}, fmt.Errorf("%s: not a valid URL", Redact(dsn))
	}
	if _, has := u.User.Password(); has {
		return Target{}, fmt.Errorf("%s: the URL holds a password; give it through the environment instead (PGPASSWORD, allowed for the host with --allow-env PGPASSWORD@%s)", Redact(dsn), u.Hostname())
	}
	if u.Hostname() == "" {
		return Target{}, fmt.Errorf("%s: no host (postgres://USER@HOST:PORT/DB)", Redact(dsn))
	}
	if u.Query().Has("password") {
		return Target{}, fmt.Errorf("%s: the URL holds a password; give it through the environment instead (PGPASSWORD, allowed with --allow-env PGPASSWORD@%s)", Redact(dsn), u.Hostname())
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	return Target{Kind: Postgres, URL: u, Host: strings.ToLower(u.Hostname()), Port: port}, nil
}

// String is the target as messages show it: the SQLite path, or the URL
// without user info or query.
func (t Target) String() string {
	if t.Kind == SQLite {
		return t.Path
	}
	return Redact(t.URL.String())
}

// Redact is a database URL as a message may show it: scheme, host, port and
// database, never the user info or query, where credentials hide. A value
// that is not a URL is shown as it is (an SQLite path).
func Redact(dsn string) string {
	if !strings.Contains(dsn, "://") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "<invalid database URL>"
	}
	h := u.Hostname()
	if p := u.Port(); p != "" {
		h = net.JoinHostPort(h, p)
	}
	return u.Scheme + "://" + h + u.EscapedPath()
}
