//go:build !unix

package main

import (
	"os/exec"
	"syscall"
)

// sysProcAttr returns no special attributes on this platform.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}

// killTree kills the server process.
func killTree(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
