#!/usr/bin/env bash
# bench/run.sh: rerunnable performance figures for the runner, written to
# docs/performance.md (and printed). Loopback only; bounded to a few minutes
# (about 8 on a loaded 2-core machine, most of it the million-request run).
# Not run in CI.
#
#   bash bench/run.sh            # full run: 10,000 streams, 1,000,000 requests
#   bash bench/run.sh -quick     # 1,000 streams, 200,000 requests
#
# Steps:
#   1. go test -bench of the SSE hot path, -count 10, summarised by benchstat
#      (median ± variation; installs golang.org/x/perf/cmd/benchstat if missing);
#   2. instructions per chunk of the same path (chat, and the Responses and
#      Messages scanners and decoders: ssecost -api) under valgrind's callgrind
#      (if valgrind is installed): a figure independent of machine load;
#   3. bench/cmd/runnerbench: throughput, memory at N streams, heap over a
#      long run, accuracy against the simulator's truth, open-loop send
#      precision (dispatch lag and client CPU, Go's timer alone vs precise
#      waiting, at 200, 1,000 and 2,000 requests/s), and whether a level of
#      embeddings requests at 2,000 requests/s keeps its schedule (embedlag).
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/performance.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
quick=()
if [[ "${1:-}" == "-quick" ]]; then quick=(-quick); fi

benchstat=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
if [[ ! -x "$benchstat" ]]; then
	go install golang.org/x/perf/cmd/benchstat@latest
fi

echo "bench/run.sh: SSE micro-benchmarks (count 10)..." >&2
go test -run '^$' -bench 'Parse$|ReadParse$' -benchmem -count 10 ./protocol/sse > "$tmp/sse.txt"
{
	echo "### SSE hot path (go test -bench, -count 10)"
	echo
	echo "\`go test -run '^\$' -bench 'Parse\$|ReadParse\$' -benchmem -count 10 ./protocol/sse\`, summarised by benchstat (median, ± the 95% confidence interval's spread):"
	echo
	echo '```'
	"$benchstat" "ns=$tmp/sse.txt" | grep -v "^ *¹\|^ *²\|geomean"
	echo '```'
} > "$tmp/sse.md"

extras="$tmp/sse.md"
if command -v valgrind > /dev/null; then
	echo "bench/run.sh: instruction counts (callgrind)..." >&2
	go build -o "$tmp/ssecost" ./bench/cmd/ssecost
	count() { # api mode n -> instructions of the whole process
		GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
			--callgrind-out-file=/dev/null "$tmp/ssecost" -api "$1" -mode "$2" -n "$3" 2>&1 |
			sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
	}
	{
		echo "### SSE hot path: instructions per chunk (callgrind)"
		echo
		echo "\`bench/cmd/ssecost\` run under \`valgrind --tool=callgrind\` (GOGC=off, GOMAXPROCS=1, async preemption off) for 10,000 and 20,000 chunks; the difference divided by 10,000 is the cost of one chunk, free of start-up and of machine load."
		echo
		echo "| path | instructions per chunk |"
		echo "|---|---|"
		for api in chat responses messages; do
			for mode in parse read decode; do
				a=$(count "$api" "$mode" 10000)
				b=$(count "$api" "$mode" 20000)
				case $api/$mode in
				chat/parse) label="sse.Parse of one vLLM chat chunk" ;;
				chat/read) label="sse.Reader framing + sse.Parse" ;;
				chat/decode) label="the chat protocol's decoder (the engine's path: framing + Parse behind protocol)" ;;
				responses/parse) label="sse.ParseResponses of one response.output_text.delta event (\`-api responses\`)" ;;
				messages/parse) label="sse.ParseMessages of one content_block_delta text_delta event (\`-api messages\`)" ;;
				*/read) label="sse.Reader framing (with the event: line) + the $api scanner" ;;
				*/decode) label="the $api protocol's decoder (the engine's path)" ;;
				esac
				echo "| $label | $(((b - a) / 10000)) |"
			done
		done
	} > "$tmp/instr.md"
	extras="$extras,$tmp/instr.md"
fi

echo "bench/run.sh: a board over 1,000 result directories..." >&2
go test -run '^$' -bench 'Board1000Dirs' -benchtime 3x ./board > "$tmp/board.txt"
{
	echo "### A board over 1,000 result directories"
	echo
	echo "\`go test -run '^\$' -bench Board1000Dirs -benchtime 3x ./board\`: 1,000 copies of a real small run (a three-level sweep against the simulator) with their own labels, in a temporary directory; each op is \`runner board DIR --out\`'s work: find the directories, read every run, build the board, render Markdown, HTML and JSON. \`report\` reads each run's report.json (the default), \`recompute\` computes each from its records. Wall time depends on what else the machine runs; CPU time (user + system of the process) less so. Issue 24 asks for under 5 s."
	echo
	echo "| input | wall s/board | CPU s/board |"
	echo "|---|---|---|"
	awk '/^BenchmarkBoard1000Dirs\// { split($1, n, "/"); sub(/-[0-9]+$/, "", n[2]); for (i = 1; i <= NF; i++) { if ($(i+1) == "s/board") w = $i; if ($(i+1) == "cpu-s/board") c = $i }; print "| " n[2] " | " w " | " c " |" }' "$tmp/board.txt"
	echo
	echo "Load average during the run: $(cut -d' ' -f1-3 /proc/loadavg)."
} > "$tmp/board.md"
extras="$extras,$tmp/board.md"

echo "bench/run.sh: end-to-end experiments..." >&2
go build -o "$tmp/runnerbench" ./bench/cmd/runnerbench
rc=0
# Give the simulator and the runner a core each when the machine has two.
pin=()
if command -v taskset > /dev/null && (($(nproc) >= 2)); then pin=(-pin); fi
"$tmp/runnerbench" "${quick[@]}" "${pin[@]}" -extra "$extras" > "$tmp/figures.md" || rc=$?
cat bench/intro.md "$tmp/figures.md" > "$out"
cat "$tmp/figures.md"
echo "bench/run.sh: wrote $out (runnerbench exit $rc)" >&2
exit "$rc"
