// Package planfs is the plan's file policy: which files a plan may read.
// A plan is often untrusted input (a pull request); the files beside it are
// the job's. It may read inside its own directory and those the job allowed
// on the command line (--allow-dir), never a hidden file or directory (where
// credentials live), never through a symbolic link that leads out, and only
// regular files (a FIFO or device would block or never end). Every field of
// a plan that names a file goes through Roots (the plan loader, package
// scenario, reports a refusal at the field's position), so a new one gets the
// same rules by calling it.
package planfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Roots are the directories whose files a plan may read: the plan's own
// directory first, then the allowed ones.
type Roots struct {
	planDir string // the plan's directory as given, for messages
	roots   []root
	err     error // an allowed directory that cannot be used
}

// root is one readable tree, lexically (abs) and after symlinks (real).
type root struct{ abs, real string }

// New returns the readable trees of a plan in planDir ("" is the current
// directory) and the allowed directories; Err says whether one of the
// allowed directories cannot be used.
func New(planDir string, allowDirs []string) *Roots {
	if planDir == "" {
		planDir = "."
	}
	r := &Roots{planDir: planDir}
	for i, d := range append([]string{planDir}, allowDirs...) {
		abs, err := filepath.Abs(d)
		real := abs
		if err == nil {
			real, err = filepath.EvalSymlinks(abs)
		}
		switch {
		case err == nil:
			r.roots = append(r.roots, root{abs: abs, real: real})
		case i == 0:
			// The plan's own directory cannot be resolved (a plan on stdin
			// in a removed directory): keep it lexically, so every file
			// the plan names fails to resolve inside it.
			r.roots = append(r.roots, root{abs: filepath.Clean(d), real: filepath.Clean(d)})
		case r.err == nil:
			r.err = fmt.Errorf("--allow-dir %s: %s", d, PathErr(err))
		}
	}
	return r
}

// Err is the first allowed directory that cannot be used, or nil.
func (r *Roots) Err() error { return r.err }

// within returns the root that holds p (lexically clean and absolute), and
// p's path relative to it; real says whether to compare with the roots after
// symlinks.
func (r *Roots) within(p string, real bool) (string, bool) {
	for _, root := range r.roots {
		dir := root.abs
		if real {
			dir = root.real
		}
		if rel, err := filepath.Rel(dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return rel, true
		}
	}
	return "", false
}

// hiddenPart returns the first component of a relative path that is hidden
// (.git, .env, .netrc, .aws): where credentials live. actions/checkout, for
// one, leaves the job's token in .git/config.
func hiddenPart(rel string) string {
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		if strings.HasPrefix(c, ".") && c != "." && c != ".." {
			return c
		}
	}
	return ""
}

// Resolve finds name, as the plan wrote it, inside a readable tree: the
// plan's directory or an allowed one, after every symbolic link. It returns
// the resolved path, or why name (a what, "prompt file") is refused. An absolute path or a ".."
// escape is refused before the file system is looked at, so a refusal does
// not tell whether a file outside exists.
func (r *Roots) Resolve(name, what string) (string, string) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Sprintf("%q is not a valid path", name)
	}
	cand := filepath.Clean(name)
	if !filepath.IsAbs(cand) {
		cand = filepath.Join(r.roots[0].abs, cand)
	}
	allow := "; to allow another directory, run with --allow-dir DIR"
	rel, ok := r.within(cand, false)
	if !ok {
		rel, ok = r.within(cand, true)
	}
	switch {
	case !ok && filepath.IsAbs(name):
		return "", fmt.Sprintf("%q is an absolute path: a plan reads files only inside its own directory (%s)%s", name, r.planDir, allow)
	case !ok:
		return "", fmt.Sprintf("%q leads outside the plan's directory (%s)%s", name, r.planDir, allow)
	case hiddenPart(rel) != "":
		return "", fmt.Sprintf("%q is inside a hidden file or directory (%s): a plan may not read hidden files, where credentials live (.git/config, .env, .netrc)", name, hiddenPart(rel))
	}
	real, err := filepath.EvalSymlinks(cand)
	if err != nil {
		return "", fmt.Sprintf("cannot read %s %q: %s", what, name, PathErr(err))
	}
	rel, ok = r.within(real, true)
	switch {
	case !ok:
		return "", fmt.Sprintf("%q is or passes through a symbolic link that leads outside the plan's directory (%s)%s", name, r.planDir, allow)
	case hiddenPart(rel) != "":
		return "", fmt.Sprintf("%q leads through a symbolic link to a hidden file or directory (%s): a plan may not read hidden files, where credentials live", name, hiddenPart(rel))
	}
	return real, ""
}

// Open opens the file the plan names for reading as a stream (for files
// too large to hold: a prompt file's reader keeps only what the plan will
// send): inside the plan's tree, a regular file. what names the file in
// messages ("prompt file"). It returns the file, or why not (the message,
// without the field's position). The caller closes the file.
func (r *Roots) Open(name, what string) (*os.File, string) {
	real, msg := r.Resolve(name, what)
	if msg != "" {
		return nil, msg
	}
	if st, err := os.Stat(real); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Sprintf("%q is not a regular file", name)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, fmt.Sprintf("cannot read %s %q: %s", what, name, PathErr(err))
	}
	// A path swapped for a FIFO between the check and the open would block
	// every read: check what was opened.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Sprintf("%q is not a regular file", name)
	}
	return f, ""
}

// Read reads the file the plan names, through the same gate as Open, at
// most limit bytes. It returns the contents, or why not.
func (r *Roots) Read(name, what string, limit int64) ([]byte, string) {
	f, msg := r.Open(name, what)
	if msg != "" {
		return nil, msg
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Sprintf("cannot read %s %q: %s", what, name, PathErr(err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Sprintf("%s %q is larger than the %d MiB limit", what, name, limit>>20)
	}
	return data, ""
}

// PathErr is err's message without the path an *os.PathError repeats, for
// messages already prefixed by it.
func PathErr(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
