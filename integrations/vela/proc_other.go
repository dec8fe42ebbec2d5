//go:build !unix

package pullcheck

import "os/exec"

// ownProcessGroup does nothing where process groups are not available.
func ownProcessGroup(cmd *exec.Cmd) {}

// killProcessGroup kills the binary.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
