-- Runner results database, schema version 1 (SQLite). docs/board.md
-- describes every table. Times are RFC 3339 text in UTC with nanoseconds
-- (sortable as text; Grafana's SQLite data source reads them as times).

CREATE TABLE runs (
  run_id         TEXT PRIMARY KEY,  -- sha256 (first 32 hex digits) of run.jsonl's header line
  source         TEXT NOT NULL,     -- the result directory it was published from
  plan           TEXT NOT NULL,     -- the plan's name
  plan_path      TEXT NOT NULL,
  plan_hash      TEXT NOT NULL,     -- sha256 of plan.yaml
  runner_version TEXT NOT NULL,
  host           TEXT NOT NULL,
  started_at     TEXT NOT NULL,
  ended_at       TEXT,
  started_ns     INTEGER NOT NULL,  -- started_at and ended_at in Unix nanoseconds, exactly
  ended_ns       INTEGER,
  stop_reason    TEXT NOT NULL,     -- completed | interrupted | error
  verdict        TEXT NOT NULL,     -- pass | fail
  shards         INTEGER NOT NULL,  -- shards a merged run came from (0: one run)
  warnings       TEXT NOT NULL,     -- JSON array of strings
  requests       INTEGER NOT NULL,  -- rows in requests
  published_at   TEXT NOT NULL
);
CREATE INDEX runs_plan_started ON runs (plan, started_at);

CREATE TABLE run_labels (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  key    TEXT NOT NULL,
  value  TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE INDEX run_labels_key_value ON run_labels (key, value);

CREATE TABLE stages (
  run_id   TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  position INTEGER NOT NULL,        -- order in the report
  stage    TEXT NOT NULL,
  endpoint TEXT NOT NULL,           -- the endpoint's name
  base_url TEXT NOT NULL,           -- never with credentials
  model    TEXT NOT NULL,
  api      TEXT NOT NULL,
  mode     TEXT NOT NULL,
  load     TEXT NOT NULL,
  error    TEXT NOT NULL,
  detail   TEXT NOT NULL,           -- JSON: the report's stage without points and checks
  PRIMARY KEY (run_id, stage)
);

CREATE TABLE levels (
  run_id      TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  stage       TEXT NOT NULL,
  position    INTEGER NOT NULL,     -- the point's order in its stage
  label       TEXT NOT NULL,        -- "c=16", "rate=4", "c=4 turn=2", "probe 3 c=24"
  level       INTEGER,              -- the level record's index (requests.level); NULL when none
  concurrency INTEGER NOT NULL,
  rate        REAL,
  probe       INTEGER NOT NULL,
  turn        INTEGER NOT NULL,
  replicates  INTEGER NOT NULL,
  interrupted INTEGER NOT NULL,     -- 0 | 1
  client_bottleneck INTEGER NOT NULL,
  point       TEXT NOT NULL,        -- JSON: the report's point (without its baseline comparison)
  PRIMARY KEY (run_id, stage, position)
);

CREATE TABLE level_metrics (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  stage  TEXT NOT NULL,
  label  TEXT NOT NULL,
  metric TEXT NOT NULL,             -- a catalogue name: ttft_p95_ms, output_tps_total, ...
  value  REAL NOT NULL,             -- as report.json has it (a metric the run could not produce has no row)
  PRIMARY KEY (run_id, stage, label, metric)
);
CREATE INDEX level_metrics_metric ON level_metrics (metric, stage, label);

CREATE TABLE level_records (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  stage  TEXT NOT NULL,
  level  INTEGER NOT NULL,
  label  TEXT NOT NULL,
  record TEXT NOT NULL,             -- JSON: run.jsonl's level record (window, token gaps, counters)
  PRIMARY KEY (run_id, stage, level)
);

CREATE TABLE checks (
  run_id      TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  stage       TEXT NOT NULL,
  position    INTEGER NOT NULL,
  name        TEXT NOT NULL,
  expr        TEXT NOT NULL,
  scope       TEXT NOT NULL,        -- level | stage
  severity    TEXT NOT NULL,        -- fail | warn
  level       INTEGER,
  level_label TEXT NOT NULL,
  status      TEXT NOT NULL,        -- pass | fail | warn | skipped
  message     TEXT NOT NULL,
  vals        TEXT NOT NULL,        -- JSON object: the values the expression read
  PRIMARY KEY (run_id, stage, position)
);

CREATE TABLE requests (
  run_id        TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  stage         TEXT NOT NULL,
  level         INTEGER NOT NULL,
  seq           INTEGER NOT NULL,
  replicate     INTEGER NOT NULL,
  shard         INTEGER NOT NULL,
  turn          INTEGER NOT NULL,
  warmup        INTEGER NOT NULL,
  nonce         TEXT NOT NULL,
  start_ns      INTEGER NOT NULL,   -- Unix nanoseconds
  dispatch_lag_ms REAL NOT NULL,
  ok            INTEGER NOT NULL,
  status        INTEGER NOT NULL,
  error_kind    TEXT NOT NULL,
  ttft_ms       REAL,
  ttfat_ms      REAL,
  reasoning_chunks INTEGER NOT NULL,
  tpot_ms       REAL,
  e2e_ms        REAL NOT NULL,
  ttft_from_schedule_ms REAL,
  e2e_from_schedule_ms  REAL,
  max_itl_ms    REAL,
  server_prompt_ms REAL,            -- the server's own prompt time (llama.cpp timings)
  input_tokens  INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  max_tokens    INTEGER NOT NULL,
  finish_reason TEXT NOT NULL
);
CREATE INDEX requests_level ON requests (run_id, stage, level);
