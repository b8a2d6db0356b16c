package evaluation

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// limitAddressSpace sets the address-space limit (RLIMIT_AS) of the
// process pid to what it has mapped now plus extra bytes.
func limitAddressSpace(pid int, extra int64) error {
	statm, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return fmt.Errorf("evaluation child: %w", err)
	}
	pages, err := strconv.ParseUint(strings.Fields(string(statm))[0], 10, 64)
	if err != nil {
		return fmt.Errorf("evaluation child: /proc/%d/statm: %w", pid, err)
	}
	n := pages*uint64(os.Getpagesize()) + uint64(extra)
	if err := unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: n, Max: n}, nil); err != nil {
		return fmt.Errorf("evaluation child: limiting its address space: %w", err)
	}
	return nil
}
