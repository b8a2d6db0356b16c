package workspace

import "testing"

// TestCreateDirectory: create_directory makes parents, succeeds on a
// directory already there, and names a file in the way; on both backends.
func TestCreateDirectory(t *testing.T) {
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, sample)
		before := h.dump(h.cs)
		for _, s := range []step{
			{"create_directory", `{"path":"README.md"}`, "README.md is a file; a directory cannot be created there.", true},
			{"create_directory", `{"path":"README.md/x/y"}`, "Cannot use README.md/x/y: README.md is a file, not a directory.", true},
			{"create_directory", `{"path":"a/../b"}`, "Path segments may not include '.' or '..'.", true},
		} {
			s.check(t, h)
		}
		if after := h.dump(h.cs); after != before {
			t.Errorf("failed calls changed the tree:\n%s", after)
		}
		for _, s := range []step{
			{"create_directory", `{"path":"x/y/z"}`, "Created directory x/y/z.", false},
			{"create_directory", `{"path":"/x//y/"}`, "Directory x/y already exists.", false},
			{"create_directory", `{"path":"src"}`, "Directory src already exists.", false},
			{"create_directory", `{"path":""}`, "The workspace root already exists.", false},
			{"ls", `{"path":"x/y"}`, "Listed x/y: 1 entry.\n\nz/", false},
			{"ls", `{"path":"x/y/z"}`, "Listed x/y/z: 0 entries.\n\n(empty directory)", false},
		} {
			s.check(t, h)
		}
	})
}
