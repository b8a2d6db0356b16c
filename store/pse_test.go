//go:build linux

package store

import "testing"

// TestProcessSamplingStopped checks that the store found the file of the
// embedded server's CPU sampling (pse) where it looked, and cleared it,
// which ends the sampling.
func TestProcessSamplingStopped(t *testing.T) {
	if pseSampled == "" {
		t.Fatal("pse has no procStatFile: the store no longer stops its sampling; look for another way")
	}
	if pseProcStatFile != "" {
		t.Fatalf("pse samples %s", pseProcStatFile)
	}
}
