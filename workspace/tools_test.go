package workspace

import (
	"strings"
	"testing"
)

// step is one call of a scenario: the tool, its arguments, and the text
// and error flag expected. A want ending in "..." is a prefix.
type step struct {
	tool, args string
	want       string
	isErr      bool
}

func (s step) check(t *testing.T, h *harness) {
	t.Helper()
	got, isErr := h.call(s.tool, s.args)
	ok := got == s.want
	if prefix, cut := strings.CutSuffix(s.want, "..."); cut {
		ok = strings.HasPrefix(got, prefix)
	}
	if !ok || isErr != s.isErr {
		t.Errorf("%s %s:\n got (isError=%v) %q\nwant (isError=%v) %q", s.tool, s.args, isErr, got, s.isErr, s.want)
	}
}

var sample = map[string]string{
	"README.md":       "# Title\n\nBody text.\n",
	"src/main.go":     "package main\n\n// TODO: more\nfunc main() {}\n",
	"src/util/a.go":   "package util\n\n// TODO: a\n",
	"src/util/b.txt":  "b\n",
	"docs/guide.md":   "guide\n",
	"a-b/file.txt":    "dash\n",
	"bin/blob.bin":    "\x00\x01\x02binary",
	"notes/empty.txt": "",
}

// TestTools is the shared suite: every tool's messages, on both backends.
func TestTools(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"ls root", []step{
			{"ls", `{}`, "Listed /: 6 entries.\n\na-b/\nbin/\ndocs/\nnotes/\nsrc/\nREADME.md (20 bytes)", false},
			{"ls", `{"path":"/"}`, "Listed /: 6 entries....", false},
			{"ls", `{"path":"."}`, "Listed /: 6 entries....", false},
			{"ls", `{"path":"  //src// "}`, "Listed src: 2 entries.\n\nutil/\nmain.go (43 bytes)", false},
		}},
		{"ls errors", []step{
			{"ls", `{"path":"nope"}`, "Directory does not exist: nope", true},
			{"ls", `{"path":"README.md"}`, "Cannot list a file path; provide a directory.", true},
			{"ls", `{"path":"src/../etc"}`, "Path segments may not include '.' or '..'.", true},
			{"ls", `{"path":"notes/empty.txt/x"}`, "Cannot use notes/empty.txt/x: notes/empty.txt is a file, not a directory.", true},
		}},
		{"read_file", []step{
			{"read_file", `{"file_path":"README.md"}`, "Read file README.md (lines 1-3 of 3).\n\n   1 | # Title\n   2 | \n   3 | Body text.", false},
			{"read_file", `{"file_path":"/src//main.go","offset":2,"limit":1}`, "Read file src/main.go (lines 3-3 of 4); more follow: call again with offset 3.\n\n   3 | // TODO: more", false},
			{"read_file", `{"file_path":"README.md","offset":3}`, "Read file README.md (0 lines: offset 3 is past the end; the file has 3 lines).\n\n(no lines)", false},
			{"read_file", `{"file_path":"notes/empty.txt"}`, "Read file notes/empty.txt (0 lines: the file is empty).\n\n(no lines)", false},
			{"read_file", `{"file_path":"README.md","offset":-1}`, "Read file README.md (lines 3-3 of 3).\n\n   3 | Body text.", false},
			{"read_file", `{"file_path":"README.md","offset":-9,"limit":1}`, "Read file README.md (lines 1-1 of 3); more follow: call again with offset 1.\n\n   1 | # Title", false},
		}},
		{"read_file errors", []step{
			{"read_file", `{"file_path":"missing.txt"}`, "File does not exist: missing.txt", true},
			{"read_file", `{"file_path":"src"}`, "src is a directory, not a file.", true},
			{"read_file", `{"file_path":"bin/blob.bin"}`, "File bin/blob.bin is binary; only UTF-8 text can be read or edited.", true},
			{"read_file", `{"file_path":"/"}`, "A file path is required; \"/\" names the workspace root.", true},
			{"read_file", `{"file_path":"a/./b"}`, "Path segments may not include '.' or '..'.", true},
			{"read_file", `{"file_path":"README.md","limit":2001}`, "limit must be between 1 and 2000.", true},
			{"read_file", `{"file_path":"README.md","limit":0}`, "limit must be between 1 and 2000.", true},
			{"read_file", `{"file_path":"README.md","offset":"1"}`, "Invalid arguments: /offset: expected integer, got string", true},
		}},
		{"write_file", []step{
			{"write_file", `{"file_path":"new/deep/file.txt","content":"hello"}`, "Created new/deep/file.txt (5 bytes).", false},
			{"read_file", `{"file_path":"new/deep/file.txt"}`, "Read file new/deep/file.txt (lines 1-1 of 1).\n\n   1 | hello", false},
			{"write_file", `{"file_path":"new/deep/file.txt","content":"again"}`, "File already exists; use edit_file or overwrite: true.", true},
			{"write_file", `{"file_path":"new/deep/file.txt","content":"again","overwrite":true}`, "Overwrote new/deep/file.txt (5 bytes).", false},
			{"write_file", `{"file_path":"one.txt","content":"x"}`, "Created one.txt (1 byte).", false},
			{"write_file", `{"file_path":"empty","content":""}`, "Created empty (0 bytes).", false},
		}},
		{"write_file errors", []step{
			{"write_file", `{"file_path":"src","content":"x","overwrite":true}`, "src is a directory, not a file.", true},
			{"write_file", `{"file_path":"README.md/x","content":"x"}`, "Cannot use README.md/x: README.md is a file, not a directory.", true},
			{"write_file", `{"file_path":"nul.txt","content":"a\u0000b"}`, "Content must be UTF-8 text; it contains a NUL byte.", true},
			{"write_file", `{"file_path":"../up.txt","content":"x"}`, "Path segments may not include '.' or '..'.", true},
			{"write_file", `{"file_path":"x.txt"}`, "Invalid arguments: /content: required field is missing", true},
		}},
		{"edit_file", []step{
			{"read_file", `{"file_path":"src/main.go"}`, "Read file src/main.go (lines 1-4 of 4)....", false},
			{"edit_file", `{"file_path":"src/main.go","old_string":"TODO: more","new_string":"DONE"}`, "Replaced 1 occurrence in src/main.go.", false},
			{"read_file", `{"file_path":"src/main.go","offset":2,"limit":1}`, "Read file src/main.go (lines 3-3 of 4); more follow: call again with offset 3.\n\n   3 | // DONE", false},
			{"edit_file", `{"file_path":"src/main.go","old_string":"main","new_string":"app"}`, "old_string matches 2 times in src/main.go; add context or set replace_all.", true},
			{"edit_file", `{"file_path":"src/main.go","old_string":"main","new_string":"app","replace_all":true}`, "Replaced 2 occurrences in src/main.go.", false},
			{"edit_file", `{"file_path":"src/main.go","old_string":"absent","new_string":"x"}`, "old_string not found in src/main.go.", true},
			{"edit_file", `{"file_path":"src/main.go","old_string":"","new_string":"x"}`, "old_string must not be empty.", true},
			{"edit_file", `{"file_path":"missing.go","old_string":"a","new_string":"b"}`, "File does not exist: missing.go", true},
		}},
		{"glob", []step{
			{"glob", `{"pattern":"**/*.go"}`, "Found 2 files matching **/*.go under /.\n\nsrc/main.go\nsrc/util/a.go", false},
			{"glob", `{"pattern":"*.go","path":"src"}`, "Found 1 file matching *.go under src.\n\nsrc/main.go", false},
			{"glob", `{"pattern":"**","path":"src"}`, "Found 3 files matching ** under src.\n\nsrc/main.go\nsrc/util/a.go\nsrc/util/b.txt", false},
			{"glob", `{"pattern":"*"}`, "Found 1 file matching * under /.\n\nREADME.md", false},
			{"glob", `{"pattern":"**/*.{md,txt}"}`, "Found 5 files matching **/*.{md,txt} under /.\n\nREADME.md\na-b/file.txt\ndocs/guide.md\nnotes/empty.txt\nsrc/util/b.txt", false},
			{"glob", `{"pattern":"*.rs"}`, "Found 0 files matching *.rs under /.\n\n(no files match)", false},
			{"glob", `{"pattern":"[a-"}`, "Invalid glob pattern: \"[a-\".", true},
			{"glob", `{"pattern":"*","path":"nope"}`, "Directory does not exist: nope", true},
			{"glob", `{"pattern":"*","path":"README.md"}`, "README.md is a file, not a directory; give a directory as path.", true},
		}},
		{"grep", []step{
			{"grep", `{"pattern":"TODO"}`, "Found 2 matches in 2 files.\n\nsrc/main.go:3: // TODO: more\nsrc/util/a.go:3: // TODO: a", false},
			{"grep", `{"pattern":"^package","path":"src","glob":"util/*.go"}`, "Found 1 match in 1 file.\n\nsrc/util/a.go:1: package util", false},
			{"grep", `{"pattern":"binary"}`, "Found 0 matches in 0 files.\n\n(no matches)", false},
			{"grep", `{"pattern":"(unclosed"}`, "Invalid regular expression: error parsing regexp: missing closing ): `(unclosed`", true},
			{"grep", `{"pattern":"x","path":"nope"}`, "Directory does not exist: nope", true},
		}},
		{"rm", []step{
			{"rm", `{"path":"src"}`, "Removed directory src (3 files).", false},
			{"ls", `{"path":"src"}`, "Directory does not exist: src", true},
			{"rm", `{"path":"README.md"}`, "Removed file README.md.", false},
			{"rm", `{"path":"README.md"}`, "No such file or directory: README.md", true},
			{"rm", `{"path":"/"}`, "The workspace root cannot be removed.", true},
			{"rm", `{"path":""}`, "The workspace root cannot be removed.", true},
			{"rm", `{"path":".."}`, "Path segments may not include '.' or '..'.", true},
		}},
		{"apply_edits", []step{
			{"read_file", `{"file_path":"README.md"}`, "Read file README.md...", false},
			{"apply_edits", `{"edits":[{"op":"edit","file_path":"README.md","old_string":"Title","new_string":"Heading"},{"op":"write","file_path":"new.txt","content":"n"},{"op":"edit","file_path":"new.txt","old_string":"n","new_string":"m"},{"op":"rm","path":"docs"}]}`,
				"Applied 4 edits to 3 files.\n\nedits[0]: Replaced 1 occurrence in README.md.\nedits[1]: Created new.txt (1 byte).\nedits[2]: Replaced 1 occurrence in new.txt.\nedits[3]: Removed directory docs (1 file).", false},
			{"read_file", `{"file_path":"new.txt"}`, "Read file new.txt (lines 1-1 of 1).\n\n   1 | m", false},
		}},
		{"apply_edits errors", []step{
			{"apply_edits", `{"edits":[]}`, "Provide at least one edit.", true},
			{"apply_edits", `{"edits":[{"op":"write","file_path":"a.txt","content":"a"},{"op":"write","file_path":"b.txt","content":"b","old_string":"x"}]}`, "edits[1] (write b.txt) failed: field old_string does not apply to op write. No edit was applied.", true},
			{"apply_edits", `{"edits":[{"op":"write","file_path":"a.txt"}]}`, "edits[0] (write a.txt) failed: Invalid arguments: /content: required field is missing. No edit was applied.", true},
			{"apply_edits", `{"edits":[{"op":"copy","path":"a"}]}`, "Invalid arguments: /edits/0/op: ...", true},
			{"apply_edits", `{"edits":[{"op":"write","file_path":"a.txt","content":"a"},{"op":"write","file_path":"b.txt","content":"b"},{"op":"edit","file_path":"a.txt","old_string":"zzz","new_string":"y"}]}`, "edits[2] (edit a.txt) failed: old_string not found in a.txt. No edit was applied.", true},
			{"ls", `{}`, "Listed /: 6 entries....", false},
			{"read_file", `{"file_path":"a.txt"}`, "File does not exist: a.txt", true},
		}},
		{"read before write", []step{
			{"write_file", `{"file_path":"README.md","content":"x"}`, "File already exists; use edit_file or overwrite: true.", true},
			{"write_file", `{"file_path":"README.md","content":"x","overwrite":true}`, "File 'README.md' must be read before overwriting.", true},
			{"edit_file", `{"file_path":"//README.md","old_string":"Title","new_string":"T"}`, "File 'README.md' must be read before overwriting.", true},
			{"apply_edits", `{"edits":[{"op":"write","file_path":"ok.txt","content":"a"},{"op":"edit","file_path":"README.md","old_string":"Title","new_string":"T"}]}`, "edits[1] (edit README.md) failed: File 'README.md' must be read before overwriting. No edit was applied.", true},
			{"read_file", `{"file_path":"ok.txt"}`, "File does not exist: ok.txt", true},
			{"read_file", `{"file_path":"README.md","limit":1}`, "Read file README.md (lines 1-1 of 3); more follow: call again with offset 1....", false},
			{"edit_file", `{"file_path":"README.md","old_string":"Title","new_string":"T"}`, "Replaced 1 occurrence in README.md.", false},
			{"edit_file", `{"file_path":"README.md","old_string":"Body","new_string":"B"}`, "Replaced 1 occurrence in README.md.", false},
			{"write_file", `{"file_path":"mine.txt","content":"1"}`, "Created mine.txt (1 byte).", false},
			{"edit_file", `{"file_path":"mine.txt","old_string":"1","new_string":"2"}`, "Replaced 1 occurrence in mine.txt.", false},
			{"write_file", `{"file_path":"mine.txt","content":"3","overwrite":true}`, "Overwrote mine.txt (1 byte).", false},
			{"rm", `{"path":"docs/guide.md"}`, "Removed file docs/guide.md.", false},
			{"write_file", `{"file_path":"docs/guide.md","content":"new"}`, "Created docs/guide.md (3 bytes).", false},
		}},
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				h := newHarness(t, bk, sample)
				for _, s := range c.steps {
					s.check(t, h)
				}
			})
		}
	})
}
