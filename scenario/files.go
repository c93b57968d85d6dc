package scenario

import (
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxCAFileBytes bounds a tls.ca_file: a system's whole CA bundle is a few
// hundred KiB.
const MaxCAFileBytes = 4 << 20

// fileRoots are the directories whose files a plan may read: the plan's own
// directory, and those the job allowed on the command line (--allow-dir). A
// plan is often untrusted input (a pull request); the files beside it are the
// job's. Every field that names a file goes through readPlanFile, so a new
// one (a trace file, say) gets the same rules by calling it.
type fileRoots struct {
	planDir string // the plan's directory as given, for messages
	roots   []fileRoot
	err     error // an allowed directory that cannot be used
}

// fileRoot is one readable tree, lexically (abs) and after symlinks (real).
type fileRoot struct{ abs, real string }

func newFileRoots(planDir string, allowDirs []string) *fileRoots {
	if planDir == "" {
		planDir = "."
	}
	r := &fileRoots{planDir: planDir}
	for i, d := range append([]string{planDir}, allowDirs...) {
		abs, err := filepath.Abs(d)
		real := abs
		if err == nil {
			real, err = filepath.EvalSymlinks(abs)
		}
		switch {
		case err == nil:
			r.roots = append(r.roots, fileRoot{abs: abs, real: real})
		case i == 0:
			// The plan's own directory cannot be resolved (a plan on stdin
			// in a removed directory): keep it lexically, so every file
			// the plan names fails to resolve inside it.
			r.roots = append(r.roots, fileRoot{abs: filepath.Clean(d), real: filepath.Clean(d)})
		case r.err == nil:
			r.err = fmt.Errorf("--allow-dir %s: %s", d, unwrapPathError(err))
		}
	}
	return r
}

// within returns the root that holds p (lexically clean and absolute), and
// p's path relative to it; real says whether to compare with the roots after
// symlinks.
func (r *fileRoots) within(p string, real bool) (string, bool) {
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

// resolve finds name, as the plan wrote it, inside a readable tree: the
// plan's directory or an allowed one, after every symbolic link. It returns
// the resolved path, or why name (a what, "prompt file") is refused. An absolute path or a ".."
// escape is refused before the file system is looked at, so a refusal does
// not tell whether a file outside exists.
func (r *fileRoots) resolve(name, what string) (string, string) {
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
		return "", fmt.Sprintf("cannot read %s %q: %s", what, name, unwrapPathError(err))
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

// readPlanFile reads the file that the plan names at field path (such as
// prompts.x.file or endpoints.e.tls.ca_file): inside the plan's tree (see
// fileRoots), a regular file (a FIFO or device would block or never end), at
// most limit bytes. what names the file in messages ("prompt file").
// Problems are reported at path's position; ok is false after one.
func (v *validator) readPlanFile(path, name, what string, limit int64) ([]byte, bool) {
	f, ok := v.openPlanFile(path, name, what)
	if !ok {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		v.errf(path, "%s: cannot read %s %q: %s", path, what, name, unwrapPathError(err))
		return nil, false
	}
	if int64(len(data)) > limit {
		v.errf(path, "%s: %s %q is larger than the %d MiB limit", path, what, name, limit>>20)
		return nil, false
	}
	return data, true
}

// openPlanFile opens the file the plan names at field path for reading as
// a stream, through the same gate as readPlanFile (inside the plan's tree, a
// regular file), for files too large to hold: a prompt file's reader keeps
// only what the plan will send. Problems are reported at path's position;
// ok is false after one. The caller closes the file.
func (v *validator) openPlanFile(path, name, what string) (*os.File, bool) {
	real, msg := v.files.resolve(name, what)
	if msg != "" {
		v.errf(path, "%s: %s", path, msg)
		return nil, false
	}
	if st, err := os.Stat(real); err == nil && !st.Mode().IsRegular() {
		v.errf(path, "%s: %q is not a regular file", path, name)
		return nil, false
	}
	f, err := os.Open(real)
	if err != nil {
		v.errf(path, "%s: cannot read %s %q: %s", path, what, name, unwrapPathError(err))
		return nil, false
	}
	// A path swapped for a FIFO between the check and the open would block
	// every read: check what was opened.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		v.errf(path, "%s: %q is not a regular file", path, name)
		return nil, false
	}
	return f, true
}

// loadCAFiles reads every endpoint's tls.ca_file, so the engine trusts
// exactly the certificates the loader checked, and a missing or empty file is
// a plan error with its position rather than a failure after start-up.
func (v *validator) loadCAFiles() {
	for _, name := range slices.Sorted(maps.Keys(v.plan.Endpoints)) {
		ep := v.plan.Endpoints[name]
		if ep == nil || ep.TLS == nil || ep.TLS.CAFile == "" {
			continue
		}
		path := "endpoints." + name + ".tls.ca_file"
		data, ok := v.readPlanFile(path, ep.TLS.CAFile, "CA file", MaxCAFileBytes)
		if !ok {
			continue
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			v.errf(path, "%s: no PEM certificates found in CA file %q", path, ep.TLS.CAFile)
			continue
		}
		ep.TLS.CAPEM = data
	}
}
