package workspace

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJournalFormat: a state directory's journal/ gets its format file
// when a disk workspace first opens there, and keeps it; one without the
// file (format 1, every earlier version) still opens and puts back the
// calls left in flight; one of a newer format, or a format that is not a
// number, is refused, both formats named, and left as it is.
func TestJournalFormat(t *testing.T) {
	format := func(f *diskFixture) string {
		b, err := os.ReadFile(filepath.Join(f.state, "journal", journalFormatFile))
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	t.Run("marked", func(t *testing.T) {
		f := newDiskFixture(t, nil)
		b, err := OpenDisk(f.dir, f.state, slog.New(slog.DiscardHandler))
		must(t, err)
		must(t, b.Close())
		if got := format(f); got != fmt.Sprintf("%d\n", JournalFormat) {
			t.Errorf("format file %q", got)
		}
	})
	t.Run("format 1 unmarked", func(t *testing.T) {
		f := newDiskFixture(t, map[string]string{"a.txt": "old a"})
		before := f.tree()
		b, err := openDisk(f.dir, f.state, slog.New(slog.DiscardHandler), 0)
		must(t, err)
		s := inFlight(t, b.impl.(*diskBackend), func(s *diskStore) {
			must(t, s.writeFile("a.txt", []byte("new a")))
		})
		die(s)
		must(t, b.Close())
		must(t, os.Remove(filepath.Join(f.state, "journal", journalFormatFile)))
		b, err = openDisk(f.dir, f.state, slog.New(slog.DiscardHandler), 0)
		must(t, err)
		if n := b.impl.(*diskBackend).recovered; n != 1 {
			t.Errorf("put back %d calls, want 1", n)
		}
		must(t, b.Close())
		if tree := f.tree(); tree != before {
			t.Errorf("after the restart:\n%s\nwant:\n%s", tree, before)
		}
		if got := format(f); got != fmt.Sprintf("%d\n", JournalFormat) {
			t.Errorf("format file %q", got)
		}
	})
	for _, tc := range []struct{ name, format, want string }{
		{"newer", fmt.Sprintf("%d\n", JournalFormat+1), fmt.Sprintf("are of format %d, and this version of wink-mcp reads format %d", JournalFormat+1, JournalFormat)},
		{"not a number", "x\n", fmt.Sprintf(`"x\n", which this version of wink-mcp does not read (it reads format %d)`, JournalFormat)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDiskFixture(t, nil)
			must(t, os.MkdirAll(filepath.Join(f.state, "journal"), 0o700))
			must(t, os.WriteFile(filepath.Join(f.state, "journal", journalFormatFile), []byte(tc.format), 0o600))
			_, err := OpenDisk(f.dir, f.state, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("opened: %v, want an error saying %q", err, tc.want)
			}
			if got := format(f); got != tc.format {
				t.Errorf("format file %q, want it left as %q", got, tc.format)
			}
			if entries, _ := os.ReadDir(filepath.Join(f.state, "journal")); len(entries) != 1 {
				t.Errorf("journal/ holds %d entries, want the format file alone", len(entries))
			}
		})
	}
}
