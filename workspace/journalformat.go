package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// JournalFormat is the format of the undo journals (and the lock files
// and root files beside them) that this version keeps under a state
// directory's journal/. The file journal/format names the format of what
// is there; without it, format 1, which every version before the file
// wrote. A directory of a newer format is refused, both formats named,
// and left as it is: its journals are of calls in flight that only the
// version that wrote them can put back. A new format adds here the
// putting back of the calls that the older format's journals hold, with
// the older format's reader, before the file is rewritten.
const JournalFormat = 1

// journalFormatFile is the file, in a state directory's journal/, that
// names the format of what is under it.
const journalFormatFile = "format"

// journalFormat returns the format of the journals under dir (a state
// directory's journal/), 0 if dir does not name it. It refuses a newer
// one than JournalFormat.
func journalFormat(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, journalFormatFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	switch {
	case err != nil || n < 1:
		return 0, fmt.Errorf("the undo journals in %s name their format %q, which this version of wink-mcp does not read (it reads format %d)", dir, b, JournalFormat)
	case n > JournalFormat:
		return 0, fmt.Errorf("the undo journals in %s are of format %d, and this version of wink-mcp reads format %d: written by a newer version, which alone can put back the calls they hold (wink-mcp recover)", dir, n, JournalFormat)
	}
	return n, nil
}

// markJournalFormat writes JournalFormat in dir's format file, whole or
// not at all, unless a process did first.
func markJournalFormat(dir string) error {
	tmp, err := os.CreateTemp(dir, ".format-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(strconv.Itoa(JournalFormat) + "\n")
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, journalFormatFile)); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
