package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/synthrun"
	"github.com/runnerbench/runner/store"
)

var (
	pgOnce   sync.Once
	pgServer *engines.Postgres
	pgErr    error
	pgDBs    atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgServer.Stop()
	os.Exit(code)
}

// pgDatabase is a new, empty database on the test binary's PostgreSQL
// server (started on first use): its URL (without a password) and the
// password.
func pgDatabase(t testing.TB) (string, string) {
	t.Helper()
	pgOnce.Do(func() { pgServer, pgErr = engines.StartPostgres(context.Background()) })
	if pgErr != nil {
		engines.Unavailable(t, pgErr)
	}
	admin := openPg(t, pgServer.URL, pgServer.Password)
	name := fmt.Sprintf("t%d", pgDBs.Add(1))
	if err := admin.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(pgServer.URL, "/postgres?", "/"+name+"?", 1), pgServer.Password
}

func openPg(t testing.TB, url, password string) *store.DB {
	t.Helper()
	tg, err := store.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), tg, store.Options{Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestPostgresRoundTrip(t *testing.T) {
	url, pw := pgDatabase(t)
	roundTrip(t, openPg(t, url, pw))
}

// TestPostgresMalformedAndBadPassword: a broken directory leaves nothing in
// PostgreSQL either; a wrong password is exit 3 and never printed.
func TestPostgresMalformedAndBadPassword(t *testing.T) {
	url, pw := pgDatabase(t)
	db := openPg(t, url, pw)
	dir := synth(t, synthrun.Spec{StartedAt: day0, Seed: 4, Requests: 5000})
	if err := corruptLine(dir+"/requests.jsonl", 4500); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Publish(context.Background(), dir); err == nil || exitcode.Of(err) != exitcode.Invalid {
		t.Fatalf("a broken requests.jsonl: %v, want exit 2", err)
	}
	assertNoRows(t, db)

	tg, _ := store.ParseDSN(url)
	wrong := "wrong-" + pw
	_, err := store.Open(context.Background(), tg, store.Options{Password: wrong})
	if err == nil || exitcode.Of(err) != exitcode.RunFailed || strings.Contains(err.Error(), wrong) {
		t.Fatalf("a wrong password: %v, want exit 3 without the password", err)
	}
	t.Logf("wrong password: %v", err)
}
