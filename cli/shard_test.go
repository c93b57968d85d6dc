package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const shardPlan = `version: 1
name: t
endpoints:
  e:
    base_url: http://127.0.0.1:9/v1
prompts:
  p: {synthetic: {input_tokens: 16}}
stages:
  - name: timed
    endpoint: e
    prompts: p
    concurrency: [1, 4]
    duration: 1s
  - name: counted
    endpoint: e
    prompts: p
    rate: [5]
    requests: 10
    max_concurrency: 2
`

// TestShardFlagsRefused: every sharding mistake is a command-line error
// (exit 2) saying what to do, before any traffic (the plan's endpoint does
// not exist).
func TestShardFlagsRefused(t *testing.T) {
	plan := writePlan(t, shardPlan)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no start", nil, []string{"--shard", "1/2", "--stage", "timed"}, "a sharded run needs --start-at"},
		{"bad shard", nil, []string{"--shard", "2/2"}, `--shard "2/2": want i/N with 0 ≤ i < N`},
		{"not i/N", nil, []string{"--shard", "1"}, `--shard "1": want i/N`},
		{"both", nil, []string{"--shard", "0/2", "--shards", "2"}, "--shard and --shards: give one"},
		{"no index", nil, []string{"--shards", "3"}, `$JOB_COMPLETION_INDEX is "", want 0 to 2`},
		{"index too big", map[string]string{"JOB_COMPLETION_INDEX": "3"}, []string{"--shards", "3"}, `$JOB_COMPLETION_INDEX is "3"`},
		{"past", nil, []string{"--shard", "0/2", "--start-at", "2001-01-01T00:00:00Z"}, "--start-at 2001-01-01T00:00:00Z passed"},
		{"not a time", nil, []string{"--start-at", "tomorrow"}, `--start-at "tomorrow": not an RFC 3339 time`},
		{"unbounded stage", nil, []string{"--shard", "0/2", "--start-at", future}, "stage counted has no duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.env, append([]string{plan, "--out", t.TempDir()}, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 saying %q", code, stderr, c.want)
			}
		})
	}
	until := writePlan(t, strings.Replace(shardPlan, "    duration: 1s\n", "    until: decided\n    max_requests: 100\n    checks: [{expr: ttft_p95_ms < 500}]\n", 1))
	code, _, stderr := runCLI(t, nil, until, "--out", t.TempDir(), "--stage", "timed", "--shard", "0/2", "--start-at", future)
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "stage timed runs its levels until: (decided): a sharded or scheduled (--start-at) run refuses it") {
		t.Errorf("until sharded: exit %d\n%s", code, stderr)
	}
	capped := writePlan(t, strings.Replace(shardPlan, "requests: 10", "duration: 1s", 1))
	code, _, stderr = runCLI(t, nil, capped, "--out", t.TempDir(), "--shard", "0/3", "--start-at", future)
	if code != 2 || !strings.Contains(stderr, "stage counted: max_concurrency 2 cannot be split over 3 shards") {
		t.Errorf("cap under the shard count: exit %d\n%s", code, stderr)
	}
}

// TestMergeRefusedCLI: runner merge refuses directories that are not one
// run's shards with exit 2, and needs --out.
func TestMergeRefusedCLI(t *testing.T) {
	code, _, stderr := runCLI(t, nil, "merge", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "--out DIR is required") {
		t.Errorf("no --out: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runCLI(t, nil, "merge", "--out", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "no shard directories given") {
		t.Errorf("no dirs: exit %d\n%s", code, stderr)
	}
	empty := t.TempDir()
	code, _, stderr = runCLI(t, nil, "merge", empty, "--out", filepath.Join(t.TempDir(), "m"))
	if code != 2 || !strings.Contains(stderr, "not a result directory") {
		t.Errorf("not a result directory: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(empty, "plan.yaml")); err == nil {
		t.Error("a refused merge wrote into a shard directory")
	}
}
