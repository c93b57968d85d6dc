#!/usr/bin/env bash
# bench/shards.sh: sharded runs on one machine. For 1, 2 and 4 shard
# processes of one plan against one simulator process (scheduled with
# --start-at, merged with runner merge), prints the total load reached and
# the merged percentiles beside a single process at the same total load, as
# a Markdown table of medians over interleaved rounds (docs/kubernetes.md
# quotes it). Loopback only; about eight minutes with the defaults (three
# rounds). Not run in CI.
#
#   bash bench/shards.sh                      # 10 s levels, 64 streams, 100 req/s
#   bash bench/shards.sh -duration 3s -conc 32
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -eq 0 ]]; then set -- -duration 10s; fi
exec go run ./bench/cmd/shardbench "$@"
