package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
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

// TestGrafanaDashboard: every query of the sample dashboard
// (docs/grafana-dashboard.json) runs against the PostgreSQL schema and finds
// the published runs, with Grafana's macros and variables filled in as
// Grafana would.
func TestGrafanaDashboard(t *testing.T) {
	url, pw := pgDatabase(t)
	db := openPg(t, url, pw)
	ctx := context.Background()
	for i := range 2 {
		if _, err := db.Publish(ctx, synth(t, synthrun.Spec{StartedAt: day0.Add(time.Duration(i) * time.Hour), Seed: uint64(i)})); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct{ Name, Query string } `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string
			Targets []struct {
				RawSQL string `json:"rawSql"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("$__timeFilter(r.started_at)", "r.started_at BETWEEN '2000-01-01' AND '2100-01-01'",
		"$plan", "nightly", "$stage", "sweep", "$metric", "ttft_p95_ms")
	queries := 0
	for _, v := range dash.Templating.List {
		queries++
		if n, err := db.QueryRows(ctx, fill.Replace(v.Query)); err != nil || n == 0 {
			t.Errorf("variable %s: %d rows, %v", v.Name, n, err)
		}
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			if n, err := db.QueryRows(ctx, fill.Replace(tg.RawSQL)); err != nil || n == 0 {
				t.Errorf("panel %q: %d rows, %v", p.Title, n, err)
			}
		}
	}
	if queries < 6 {
		t.Errorf("%d queries in the dashboard, want its 3 variables and 3 panels", queries)
	}
}

// TestPostgresReadOnlyRole: a role that may read but not write is exit 3
// on publish, with the server's reason, and can still draw the board.
func TestPostgresReadOnlyRole(t *testing.T) {
	url, pw := pgDatabase(t)
	db := openPg(t, url, pw)
	ctx := context.Background()
	if _, err := db.Publish(ctx, synth(t, synthrun.Spec{StartedAt: day0, Seed: 5})); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE ROLE reader LOGIN PASSWORD 'reader-pw'", "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader"} {
		if err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	roURL := strings.Replace(url, "postgres://runner@", "postgres://reader@", 1)
	reader := openPg(t, roURL, "reader-pw")
	_, err := reader.Publish(ctx, synth(t, synthrun.Spec{StartedAt: day0.Add(time.Hour), Seed: 6}))
	if err == nil || exitcode.Of(err) != exitcode.RunFailed || !strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), "reader-pw") {
		t.Fatalf("publish as a read-only role: %v (exit %d), want exit 3 saying permission denied", err, exitcode.Of(err))
	}
	runs, err := reader.Runs(ctx, store.Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("the read-only role's board: %d runs, %v", len(runs), err)
	}
}
