//go:build linux

package store

import "testing"

// TestProcessSampling checks that the store found the file of the
// embedded server's CPU sampling (pse) where it looks for it, to end the
// sampling (pse_norace.go).
func TestProcessSampling(t *testing.T) {
	if pseSampled == "" {
		t.Fatal("pse has no procStatFile: the store no longer ends its sampling; look for another way")
	}
}
