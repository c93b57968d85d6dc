//go:build !linux

package engines

import "syscall"

// procAttr has nothing to add where the kernel cannot tie a child's life to
// its parent's; Stop still ends the engine.
func procAttr() *syscall.SysProcAttr { return nil }
