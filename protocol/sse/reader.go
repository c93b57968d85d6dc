// Package sse reads the Server-Sent Events streams that OpenAI-compatible
// servers send for streaming completions, and scans each chunk's JSON for the
// few facts a benchmark needs (is there a token, is it reasoning or answer,
// has the stream finished, what usage or error did the server report) without
// decoding it into maps or structs.
//
// Both halves are on the hot path of every request: the Reader hands out each
// event's data as a slice into its own buffer, and Parse walks that slice once
// without allocating, so the client's CPU cost per token stays far below the
// server's inter-token latency even at hundreds of concurrent streams.
package sse

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLine is the longest line the Reader accepts by default. Servers
// with logprobs or long tool-call arguments send single lines of several MiB.
const DefaultMaxLine = 16 << 20

// ErrLineTooLong is returned when a line exceeds the Reader's limit.
var ErrLineTooLong = errors.New("sse: line too long")

// Reader splits an SSE byte stream into events and returns each event's data.
// It handles LF and CRLF line ends, `data:` with or without the space, comment
// lines, ignored fields (event, id, retry), and events split across reads.
//
// The buffer grows to fit the longest line and every byte is searched for a
// line end once, so an 8 MiB line costs linear time, not quadratic.
type Reader struct {
	src     io.Reader
	buf     []byte
	r, w    int // unread bytes are buf[r:w]
	scan    int // buf[r:scan] is known to hold no '\n'
	maxLine int
	err     error  // sticky error from src
	data    []byte // the pending event's data lines, joined by '\n'
	pending bool   // at least one data line seen since the last dispatch
}

// NewReader returns a Reader over src with a 1 KiB initial buffer: a
// chunk's line is a few hundred bytes, and the buffer doubles for a longer
// one. One Reader is kept per stream, so at tens of thousands of streams
// this is the reader's memory (a read of several queued events takes them
// a buffer at a time from the transport's own).
func NewReader(src io.Reader) *Reader {
	return &Reader{src: src, buf: make([]byte, initialBuf), maxLine: DefaultMaxLine}
}

// initialBuf is a new Reader's buffer size.
const initialBuf = 1024

// Reset makes the Reader read from src, keeping its buffers for reuse.
func (rd *Reader) Reset(src io.Reader) {
	rd.src = src
	rd.r, rd.w, rd.scan = 0, 0, 0
	rd.err = nil
	rd.data = rd.data[:0]
	rd.pending = false
}

// SetMaxLine sets the longest line accepted (at least 1 KiB).
func (rd *Reader) SetMaxLine(n int) {
	rd.maxLine = max(n, 1024)
}

// Next returns the data of the next event: the values of its `data:` fields
// joined by '\n'. An event is dispatched at the blank line that ends it, or at
// the end of the stream when the stream stops without one. The returned slice
// is valid until the next call. At the end of the stream Next returns io.EOF;
// a read error is returned as is.
func (rd *Reader) Next() ([]byte, error) {
	rd.data = rd.data[:0]
	rd.pending = false
	for {
		line, err := rd.readLine()
		if err != nil {
			if rd.pending && (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) {
				// A stream that ends without the final blank line still
				// delivered the event; hand it out and report EOF next time.
				rd.pending = false
				return rd.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if rd.pending {
				return rd.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // comment, often a keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue // event, id, retry and unknown fields do not change the data
		}
		if !rd.pending {
			// The usual event is one data line, and its blank line came in
			// the same read: hand out the value where it lies, without
			// copying it. (Only a later read can move the buffer, and the
			// slice is valid until the next call anyway.)
			if b := rd.buf[rd.r:rd.w]; len(b) > 0 && b[0] == '\n' {
				rd.r++
				rd.scan = rd.r
				return value, nil
			} else if len(b) > 1 && b[0] == '\r' && b[1] == '\n' {
				rd.r += 2
				rd.scan = rd.r
				return value, nil
			}
		}
		if rd.pending {
			rd.data = append(rd.data, '\n')
		}
		// Copy: the next readLine may move the buffer before the blank line arrives.
		rd.data = append(rd.data, value...)
		rd.pending = true
	}
}

// readLine returns the next line without its line end. The slice points into
// the buffer and is valid until the next call.
func (rd *Reader) readLine() ([]byte, error) {
	for {
		if i := bytes.IndexByte(rd.buf[rd.scan:rd.w], '\n'); i >= 0 {
			end := rd.scan + i
			line := rd.buf[rd.r:end]
			rd.r = end + 1
			rd.scan = rd.r
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		}
		rd.scan = rd.w
		if rd.err != nil {
			if rd.r < rd.w {
				// The last line of a stream that does not end in a newline.
				line := rd.buf[rd.r:rd.w]
				rd.r, rd.scan = rd.w, rd.w
				if n := len(line); n > 0 && line[n-1] == '\r' {
					line = line[:n-1]
				}
				return line, nil
			}
			return nil, rd.err
		}
		if rd.w == len(rd.buf) {
			if rd.r > 0 {
				// Slide the partial line to the front; it is scanned already.
				n := copy(rd.buf, rd.buf[rd.r:rd.w])
				rd.scan -= rd.r
				rd.r, rd.w = 0, n
			} else {
				if len(rd.buf) >= rd.maxLine {
					return nil, ErrLineTooLong
				}
				nb := make([]byte, min(2*len(rd.buf), rd.maxLine))
				copy(nb, rd.buf[:rd.w])
				rd.buf = nb
			}
		}
		n, err := rd.src.Read(rd.buf[rd.w:])
		rd.w += n
		if err != nil {
			rd.err = err
		} else if n == 0 {
			// A reader that returns 0, nil forever would spin; io.Reader
			// discourages it, and a stalled server is bounded by the caller's
			// idle timeout, which closes the body and makes Read fail.
			continue
		}
	}
}
