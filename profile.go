package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts profiling the process's CPU into the file at
// path (--cpu-profile), and returns what stops it and writes the file out
// when the server exits, logging a failure to logger.
func startCPUProfile(path string, logger *slog.Logger) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			logger.Error("writing the CPU profile failed", "file", path, "err", err)
		}
	}, nil
}
