//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so that killTree
// reaches anything it spawns.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killTree kills the server's process group.
func killTree(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
