//go:build unix

package evaluation

import (
	"os/exec"
	"syscall"
)

// runAs makes cmd run as the user and group uid.
func runAs(cmd *exec.Cmd, uid uint32) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
}

// signalMeaning says what a signal that killed a sandboxed command
// usually means here, or nothing.
func signalMeaning(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return ": it reached a limit, or was killed"
	case syscall.SIGXCPU:
		return ": it used up its CPU time"
	case syscall.SIGXFSZ:
		return ": it wrote a file larger than the workspace's largest file"
	}
	return ""
}
