#!/usr/bin/env bash
# html-check.sh REPORT.html OUT.png [--dark]
#
# Renders an HTML report in headless Chromium, fails if the page logged any
# console message, and writes a 1400x2400 screenshot to OUT.png. --dark
# renders with the browser in dark mode (prefers-color-scheme: dark).
#
# The report has no script and fetches nothing, so any console output is a bug:
# an uncaught JS error, a console.error, or a Content-Security-Policy violation
# (the report's CSP is default-src 'none', so any attempted load of an image,
# font, script or stylesheet is blocked and logged to the console).
#
# Installs Debian's chromium if missing (needs root). The browser is kept off
# the network: every host name resolves to nothing and every other request goes
# to a dead loopback proxy, so a page that tries to fetch shows up as a console
# error here instead of reaching the internet.
set -euo pipefail

usage() { echo "usage: $0 REPORT.html OUT.png [--dark]" >&2; exit 2; }
[[ $# -ge 2 && $# -le 3 ]] || usage
report=$1 out=$2 dark=
if [[ $# -eq 3 ]]; then
	[[ $3 == --dark ]] || usage
	dark=--force-dark-mode
fi
[[ -f $report ]] || { echo "html-check: no such file: $report" >&2; exit 2; }

browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "html-check: chromium is not installed and installing it needs root" >&2
		exit 2
	fi
	echo "html-check: installing chromium" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
	browser=$(command -v chromium)
fi

abs=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
profile=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$profile" "$log"' EXIT
rm -f "$out"

# timeout: a hung browser must fail the check, not hang CI.
set +e
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$profile" \
	--host-resolver-rules='MAP * ~NOTFOUND' --proxy-server='http://127.0.0.1:9' \
	--enable-logging=stderr --v=0 $dark \
	--hide-scrollbars --window-size=1400,2400 --screenshot="$out" \
	"file://$abs" >"$log" 2>&1
rc=$?
set -e

# Console output looks like: [pid:tid:time:INFO:CONSOLE:12] "Uncaught ReferenceError: ...", source: file:///... (12)
# (older builds print INFO:CONSOLE(12)); uncaught exceptions always carry "Uncaught".
errors=$(grep -E ':CONSOLE[:(]|Uncaught' "$log" || true)
if [[ -n $errors ]]; then
	echo "html-check: $report: console errors:" >&2
	echo "$errors" >&2
	exit 1
fi
if [[ $rc -ne 0 ]]; then
	echo "html-check: chromium exited with status $rc" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
if [[ ! -s $out ]]; then
	echo "html-check: no screenshot written to $out" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
echo "html-check: $report: no console errors; screenshot $out"
