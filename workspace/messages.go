package workspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// errRoot: the root cannot be removed.
var errRoot = errors.New("the workspace root cannot be removed")

// failure is a tool failure whose message the model reads; handlers return
// it as a failed result (failed), anything else as a Go error.
type failure struct {
	msg string
	// absent is the path that does not exist, when that is the failure.
	absent string
}

func (f *failure) Error() string { return f.msg }

func failf(format string, args ...any) *failure { return &failure{msg: fmt.Sprintf(format, args...)} }

// describe turns a store error about path p into the message the model
// reads, or returns nil for an error that is not about the path (an I/O
// error), which the handler returns as a Go error. notExist is the message
// for a missing path, which depends on the tool.
func describe(err error, p, notExist string, maxFile int64) *failure {
	var pe *PathError
	var parentErr *parentError
	var busy *busyError
	var special *specialError
	switch {
	case errors.As(err, &pe):
		return &failure{msg: pe.Msg}
	case errors.As(err, &busy):
		return &failure{msg: busy.Error()}
	case errors.As(err, &parentErr):
		return failf("Cannot use %s: %s is a file, not a directory.", p, parentErr.path)
	case errors.Is(err, errNotExist):
		return &failure{msg: notExist, absent: p}
	case errors.Is(err, errIsDir):
		return failf("%s is a directory, not a file.", display(p))
	case errors.Is(err, errNotDir):
		return failf("%s is a file, not a directory.", p)
	case errors.Is(err, errEscapes):
		return failf("Path %s leads outside the workspace (through a symbolic link); it cannot be used.", p)
	case errors.Is(err, errTooLarge):
		return failf("File %s is larger than the limit of %d bytes.", p, maxFile)
	case errors.As(err, &special):
		return failf("%s is a %s, not a regular file or directory; the workspace does not open it.", display(p), special.kind)
	case errors.Is(err, errRoot):
		return failf("The workspace root cannot be removed.")
	}
	return nil
}

// failed is the failed result of f, a failure of a call on w. A path that
// does not exist in a memory workspace is what the call's session lacks
// (tools.Missing): the session may have been started for the call, empty,
// because its client did not pass the handle back.
func failed[R any](w *view, f *failure) tools.Result[R] {
	if f.absent != "" && w.Backend() == "memory" {
		return tools.Missing[R](f.absent+" in its workspace", f.msg)
	}
	return tools.Fail[R](f.msg)
}

// lockFiles takes, for the call of ctx, the locks of the files at paths
// (see Workspace.Lock), so that the tool's reads and writes of them happen
// under one lock.
func lockFiles(ctx *tools.Context, w *view, paths ...string) error {
	_, err := w.Lock(ctx, ctx.Call.ID, paths)
	return err
}

// plural returns "1 file", "2 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// truncateLine shortens a line the model reads to at most max bytes, with a
// marker saying how much was left out.
func truncateLine(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" [... %d more bytes]", len(s)-cut)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// splitLines splits text into lines; a final newline does not start another
// line, and empty text has none.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

func errorsIsNotDir(err error) bool { return errors.Is(err, errNotDir) && !isParentError(err) }

func isParentError(err error) bool {
	var pe *parentError
	return errors.As(err, &pe)
}

func errorsIsEscape(err error) bool { return errors.Is(err, errEscapes) }
