package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// cpuTimeOf returns the CPU time that process pid has used so far, to the
// nanosecond: the sum over its threads of the time each has run
// (/proc/PID/task/TID/schedstat), where /proc/PID/stat counts in ticks of
// 10 ms, too coarse for a turn of --interleave. A thread that has exited
// is not counted (a Go process rarely ends one). Where schedstat cannot
// be read, it is the time /proc/PID/stat gives; 0 outside Linux.
func cpuTimeOf(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	read := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has exited
		}
		f := bytes.Fields(b)
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			continue
		}
		sum += time.Duration(ns)
		read++
	}
	if read == 0 {
		return mcpc.CPUTimeOf(pid)
	}
	return sum
}
