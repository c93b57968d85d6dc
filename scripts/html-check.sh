#!/usr/bin/env bash
# html-check.sh REPORT.html OUT.png [--dark]
#
# Renders an HTML report in headless Chromium, fails if the page logged any
# console message or scrolls sideways at 1280 px (the page itself, or any
# element that scrolls, such as a wide table's box), and writes a 1280x2400
# screenshot to OUT.png. --dark renders with the browser in dark mode
# (prefers-color-scheme: dark). HTML_CHECK_WIDTH=N checks at N px instead.
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
width=${HTML_CHECK_WIDTH:-1280}
[[ $width =~ ^[0-9]+$ ]] || { echo "html-check: HTML_CHECK_WIDTH=$width is not a number of pixels" >&2; exit 2; }
profile=$(mktemp -d)
log=$(mktemp)
wrapper=$(mktemp --suffix=.html)
trap 'rm -rf "$profile" "$log" "$wrapper"' EXIT
rm -f "$out"

# timeout: a hung browser must fail the check, not hang CI.
set +e
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$profile" \
	--host-resolver-rules='MAP * ~NOTFOUND' --proxy-server='http://127.0.0.1:9' \
	--enable-logging=stderr --v=0 $dark \
	--hide-scrollbars --window-size=$width,2400 --screenshot="$out" \
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
# Sideways scroll: the report forbids scripts (its CSP), so a page of our own
# holds it in a frame $width px wide and measures it once it has loaded; the
# frame is same-origin only with --allow-file-access-from-files. The verdict
# is read from the page's DOM (--dump-dom), written before its load event.
cat >"$wrapper" <<WRAPPER
<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="file://$abs" style="width:${width}px;height:2400px;border:0"></iframe>
<pre id="verdict">UNMEASURED</pre>
<script>
document.getElementById("f").onload = function () {
  var d = this.contentDocument, e = d && d.documentElement, bad = [];
  if (!e) { document.getElementById("verdict").textContent = "UNMEASURED no access to the report"; return; }
  if (e.scrollWidth > e.clientWidth) bad.push("the page: " + e.scrollWidth + " px wide in " + e.clientWidth);
  d.querySelectorAll("*").forEach(function (n) {
    var o = getComputedStyle(n).overflowX;
    if ((o === "auto" || o === "scroll") && n.scrollWidth > n.clientWidth + 1) {
      var kid = n.firstElementChild;
      var what = n.tagName.toLowerCase() + (kid ? " holding " + kid.tagName.toLowerCase() + "." + kid.className : "");
      bad.push(what + ": " + n.scrollWidth + " px wide in " + n.clientWidth);
    }
  });
  document.getElementById("verdict").textContent = bad.length ? "SCROLLS " + bad.join("; ") : "FITS";
};
</script></body></html>
WRAPPER
set +e
dom=$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$profile" --allow-file-access-from-files \
	--host-resolver-rules='MAP * ~NOTFOUND' --proxy-server='http://127.0.0.1:9' \
	--window-size=$((width + 40)),2400 --dump-dom "file://$wrapper" 2>/dev/null)
set -e
verdict=$(printf '%s' "$dom" | sed -n 's|.*<pre id="verdict">\([^<]*\)</pre>.*|\1|p')
case $verdict in
FITS) ;;
SCROLLS*)
	echo "html-check: $report scrolls sideways at $width px: ${verdict#SCROLLS }" >&2
	exit 1 ;;
*)
	echo "html-check: could not measure $report's width at $width px: ${verdict:-no verdict in the DOM}" >&2
	exit 1 ;;
esac
echo "html-check: $report: no console errors, no sideways scroll at $width px; screenshot $out"
