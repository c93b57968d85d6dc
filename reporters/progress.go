package reporters

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/runnerbench/runner/result"
)

// ProgressUpdate is one tick of a running level, mirroring what the engine's
// progress callback reports.
type ProgressUpdate struct {
	Stage     string
	Level     int // index of the level within the stage
	Label     string
	Done      int // requests finished (ok or failed)
	Total     int // requests the level will send; 0 or less when unknown
	Failed    int
	Elapsed   time.Duration // since the level's measured window began
	OutputTPS float64       // current output tokens/s over the level so far
	// TTFTP50Ms and ITLP50Ms are the level's medians so far (0: none yet).
	TTFTP50Ms, ITLP50Ms float64
	// Duration is the level's planned measured window (0: bounded by requests).
	Duration time.Duration
}

// progressInterval bounds how often the bar is redrawn: often enough to look
// live, rare enough that a level finishing thousands of requests a second
// does not spend its time repainting a terminal.
const progressInterval = 100 * time.Millisecond

// Progress draws one progress bar per level on a terminal. It is safe for
// concurrent use, and a disabled Progress (stdout not a terminal, --quiet)
// writes nothing at all, so piped output and CI logs stay clean.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	enabled  bool
	bar      *progressbar.ProgressBar
	key      string // stage + level of the bar on screen
	last     ProgressUpdate
	lastDraw time.Time
	dirty    bool   // last update not drawn yet (throttled)
	desc     string // description on screen
	now      func() time.Time
}

// NewProgress returns a Progress writing to w. With enabled false every
// method is a no-op.
func NewProgress(w io.Writer, enabled bool) *Progress {
	return &Progress{w: w, enabled: enabled && w != nil, now: time.Now}
}

// Update moves the bar of u's level, starting a new bar (and finishing the
// previous one) when the level changes.
func (p *Progress) Update(u ProgressUpdate) {
	if p == nil || !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := u.Stage + "\x00" + strconv.Itoa(u.Level)
	if p.bar == nil || key != p.key {
		p.finishLocked()
		p.key = key
		p.bar = p.newBar(u)
		p.desc = describe(u)
		p.lastDraw = time.Time{}
	}
	p.last = u
	now := p.now()
	if now.Sub(p.lastDraw) < progressInterval && (u.Total <= 0 || u.Done < u.Total) {
		p.dirty = true
		return
	}
	p.drawLocked(now)
}

// LevelDone draws the level's final state and ends its line.
func (p *Progress) LevelDone() {
	if p == nil || !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
}

// Close ends any bar still on screen. The Progress must not be used after.
func (p *Progress) Close() {
	p.LevelDone()
}

func (p *Progress) newBar(u ProgressUpdate) *progressbar.ProgressBar {
	total := int64(u.Total)
	if total <= 0 {
		total = -1 // unknown: the library draws a spinner
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetWidth(24),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(false), // we print the engine's elapsed
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionThrottle(0), // throttled here, so a final frame is never dropped
		progressbar.OptionSetDescription(describe(u)),
		progressbar.OptionShowDescriptionAtLineEnd(),
	)
}

func (p *Progress) drawLocked(now time.Time) {
	// Describe and Set each repaint the line; skip Describe when the text has
	// not changed so a draw is usually one repaint.
	if d := describe(p.last); d != p.desc {
		p.desc = d
		p.bar.Describe(d)
	}
	_ = p.bar.Set(p.last.Done)
	p.lastDraw = now
	p.dirty = false
}

func (p *Progress) finishLocked() {
	if p.bar == nil {
		return
	}
	if p.dirty || p.lastDraw.IsZero() {
		p.drawLocked(p.now())
	}
	_ = p.bar.Exit()
	_, _ = io.WriteString(p.w, "\n")
	p.bar = nil
	p.key = ""
}

// describe is the text beside the bar: which level, how far through it
// (the bar counts requests; a level bounded by its duration says how much
// of it has passed), and how it goes: tokens/s, the TTFT and ITL medians so
// far, failures.
func describe(u ProgressUpdate) string {
	var b strings.Builder
	b.WriteString(u.Stage + " " + u.Label)
	fmt.Fprintf(&b, "  %.1f tok/s  p50 TTFT %s · ITL %s  %d failed", u.OutputTPS, msOrDash(u.TTFTP50Ms), msOrDash(u.ITLP50Ms), u.Failed)
	if u.Duration > 0 {
		fmt.Fprintf(&b, "  %.1fs/%s", u.Elapsed.Seconds(), u.Duration)
	} else {
		fmt.Fprintf(&b, "  %.1fs", u.Elapsed.Seconds())
	}
	return b.String()
}

// msOrDash prints a median so far, or a dash before there is one.
func msOrDash(ms float64) string {
	if ms > 0 {
		return result.FormatMs(ms)
	}
	return "–"
}
