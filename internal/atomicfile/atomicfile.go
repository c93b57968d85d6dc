// Package atomicfile writes a file whole or not at all: into a temporary
// file beside it, synced, then renamed over it. A reader (or a crash) never
// sees half a file, and a symbolic link planted at the path (in a checked-out
// repository, say) is replaced, never followed, so nothing outside the output
// directory is ever written.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to path, mode 0644.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
