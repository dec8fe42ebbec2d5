//go:build unix

package pullcheck

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts the binary in a process group of its own.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills the binary and everything it started.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// The group's id is the binary's pid (Setpgid with Pgid 0).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
