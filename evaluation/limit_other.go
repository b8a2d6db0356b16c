//go:build !linux

package evaluation

import "errors"

// limitAddressSpace is available on Linux only.
func limitAddressSpace(int, int64) error {
	return errors.New("evaluation child: limiting a process's address space needs Linux")
}
