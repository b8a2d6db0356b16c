//go:build !unix

package evaluation

import (
	"os/exec"
	"syscall"
)

// runAs does nothing where there are no user ids to run as: run_command's
// sandbox (bubblewrap) runs on Linux only.
func runAs(*exec.Cmd, uint32) {}

// signalMeaning says nothing where signals do not kill a command.
func signalMeaning(syscall.Signal) string { return "" }
