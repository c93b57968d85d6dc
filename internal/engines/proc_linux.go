package engines

import "syscall"

// procAttr makes the engine die with the test binary, so a crashed or killed
// test run leaves no server behind.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
