//go:build unix

package servers

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts a stdio vendor in its own process group, so that
// stopping it also stops what it started (npx → node, shells …).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the vendor's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		_ = cmd.Process.Kill() // no group (left already): the process alone
	}
}
