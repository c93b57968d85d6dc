//go:build !unix

package engines

import "context"

// lockFile is a no-op where flock is not available: concurrent builds of a
// tool are then not serialised.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
