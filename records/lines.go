package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// JSONLWriter appends one JSON line per record to a file: requests.jsonl
// (one per finished request) and run.jsonl (the run's, stages' and levels'
// records).
//
// Crash guarantee: each record is encoded in full and handed to the kernel
// with a single write(2) of the complete line before Write returns, on a file
// opened with O_APPEND. So after a kill -9 (or a panic, or Ctrl-C twice) the
// file holds a valid JSON line for every Write that returned, and never a
// partial or interleaved line from them. Only a write in flight at the moment
// of the kill can be missing, or left as one unterminated fragment at the very
// end of the file (Linux stops a write to a regular file at a page boundary
// when a fatal signal arrives): readers skip a last line without a newline. Surviving a machine crash or power loss as well
// needs the data on disk: Flush does an fsync, and the engine calls it at the
// end of every level (cheap: once a level, not once a request).
//
// One syscall per record costs a few microseconds (see BenchmarkJSONLWriter),
// orders of magnitude under the request rates an LLM endpoint sustains, so
// there is nothing to gain from buffering that would be worth the lost lines.
//
// Write is safe for concurrent use: records are encoded outside the lock in
// pooled buffers; the lock covers only the write, so lines never interleave.
type JSONLWriter struct {
	mu     sync.Mutex
	f      *os.File
	closed bool
	err    error // first write error; later writes return it
}

var lineBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// ErrClosed is returned by a JSONLWriter used after Close.
var ErrClosed = errors.New("jsonl writer is closed")

// NewJSONL creates the file at path (replacing any file there), creating its
// directory, and returns a writer that appends records to it. The
// file is made under a temporary name and renamed into place, so a
// record file that is a symbolic link (planted in a checked-out
// repository, say) is replaced, never followed: a run cannot truncate or
// write a file outside its output directory.
func NewJSONL(path string) (*JSONLWriter, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	name := tmp.Name()
	_ = tmp.Close()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		_ = os.Remove(name)
		return nil, fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	return &JSONLWriter{f: f}, nil
}

// Write appends v as one JSON line. When it returns nil the line is in the
// kernel (it survives the process being killed).
func (j *JSONLWriter) Write(v any) error {
	if v == nil {
		return errors.New("write record: nil record")
	}
	buf := lineBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		// Do not keep a freak huge buffer alive in the pool.
		if buf.Cap() <= 64<<10 {
			lineBufs.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the '\n'
		return fmt.Errorf("encode record: %w", err)
	}

	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if j.err != nil {
		return j.err
	}
	// os.File.Write loops over short writes itself; a regular file on a local
	// disk takes the whole line in one write(2).
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		j.err = fmt.Errorf("write %s: %w", filepath.Base(j.f.Name()), err)
		return j.err
	}
	return nil
}

// Flush makes every record written so far durable on disk (fsync), so it
// survives a machine crash, not only a killed process. Call it at level ends.
func (j *JSONLWriter) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if j.err != nil {
		return j.err
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(j.f.Name()), err)
	}
	return nil
}

// Close flushes and closes the file. Closing twice is harmless.
func (j *JSONLWriter) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	errSync := j.f.Sync()
	errClose := j.f.Close()
	if errSync != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(j.f.Name()), errSync)
	}
	if errClose != nil {
		return fmt.Errorf("close %s: %w", filepath.Base(j.f.Name()), errClose)
	}
	return nil
}
