//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package workspace

import "os"

// crossProcess says whether locks exclude other processes: without
// flock(2), only the in-process locks hold, and one directory must not be
// shared by several processes.
const crossProcess = false

// tryFlock always succeeds: there is no flock(2) here.
func tryFlock(*os.File) (bool, error) { return true, nil }
