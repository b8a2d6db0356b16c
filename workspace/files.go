package workspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wink-mcp/wink-mcp/tools"
)

// Files is one call's access to its session's workspace for a tool that
// reads and writes files on its caller's behalf, such as an evaluator's
// builtins. Each method does the job of a workspace tool, with that
// tool's paths, limits and ignore rules, and under that tool's policies,
// asked through tools.Call.Authorise as apply_edits asks for each of its
// operations: Read is a read_file of the whole file and Write a
// write_file with overwrite: true, so the read-before-write policy holds,
// and Remove is an rm. Every change is a change of the call's
// transaction, undone when the call fails. An error's text is the message
// the model reads.
type Files struct {
	ctx *tools.Context
	v   *view
	s   *settings
}

// CallFiles returns the workspace of the call of ctx, which must run in a
// transaction (a tool that is not read-only).
func CallFiles(ctx *tools.Context) (*Files, error) {
	v, err := viewOf(ctx)
	if err != nil {
		return nil, err
	}
	return &Files{ctx: ctx, v: v, s: &settings{maxFile: v.maxFile, maxMatches: DefaultMaxMatches}}, nil
}

// authorise asks the policies of the named tool whether the call may do
// what a call of it with params would; done runs their OnResult once it
// is done.
func (f *Files) authorise(tool string, params any) (done func(*tools.Outcome) error, err error) {
	if f.ctx.Call.Authorise == nil {
		return func(*tools.Outcome) error { return nil }, nil
	}
	return f.ctx.Call.Authorise(tool, params)
}

// fail turns a store error about path p into the error the model reads.
func (f *Files) fail(err error, p, notExist string) error {
	if d := describe(err, p, notExist, f.s.maxFile); d != nil {
		return d
	}
	return err
}

// Read returns the content of the text file at path.
func (f *Files) Read(path string) (string, error) {
	p, err := normalizeFile(path)
	if err != nil {
		return "", err
	}
	done, err := f.authorise("read_file", ReadFileParams{FilePath: p, Limit: DefaultReadLimit})
	if err != nil {
		return "", err
	}
	data, err := f.v.ReadFile(p)
	if err != nil {
		return "", f.fail(err, p, "File does not exist: "+p)
	}
	if isBinary(data) {
		return "", errors.New(binaryMessage(p))
	}
	return string(data), done(&tools.Outcome{Message: "Read file " + p + ".", Success: true})
}

// Write creates or replaces the text file at path, and its missing parent
// directories, and returns what it did ("Created a (3 bytes).").
func (f *Files) Write(path, content string) (string, error) {
	p := WriteFileParams{FilePath: path, Content: content, Overwrite: true}
	done, err := f.authorise("write_file", p)
	if err != nil {
		return "", err
	}
	return f.step(f.s.doWrite(f.ctx, f.v, p))(done)
}

// Remove removes the file or directory at path and returns what it did.
func (f *Files) Remove(path string) (string, error) {
	p := RmParams{Path: path}
	done, err := f.authorise("rm", p)
	if err != nil {
		return "", err
	}
	return f.step(f.s.doRm(f.ctx, f.v, p))(done)
}

// step turns the result of a tool's job into its message, running the
// policies' OnResult when it succeeded.
func (f *Files) step(r tools.Result[any], err error) func(done func(*tools.Outcome) error) (string, error) {
	return func(done func(*tools.Outcome) error) (string, error) {
		switch {
		case err != nil:
			return "", err
		case !r.Success:
			return "", errors.New(r.Message)
		}
		return r.Message, done(&tools.Outcome{Message: r.Message, Success: true})
	}
}

// List returns the children of the directory at path, directories first,
// leaving out what ls leaves out without all: dot names and what the
// ignore rules skip.
func (f *Files) List(path string) ([]Entry, error) {
	dir, err := Normalize(path)
	if err != nil {
		return nil, err
	}
	infos, err := f.v.st.list(dir)
	if err != nil {
		if errorsIsNotDir(err) {
			return nil, fmt.Errorf("%s is a file, not a directory.", dir)
		}
		return nil, f.fail(err, dir, "Directory does not exist: "+display(dir))
	}
	hides := f.v.hides(dir, false)
	out := []Entry{}
	for _, dirs := range []bool{true, false} {
		for _, in := range infos {
			if in.Dir == dirs && !hides(in) {
				out = append(out, Entry{Name: base(in.Path), Dir: in.Dir, Size: in.Size, Type: in.Special})
			}
		}
	}
	return out, nil
}

// Glob returns the paths of the files whose path matches pattern, as glob
// finds them from the root: at most DefaultMaxMatches, and whether there
// were more.
func (f *Files) Glob(pattern string) (paths []string, capped bool, err error) {
	pattern = strings.TrimPrefix(strings.TrimSpace(pattern), "/")
	if pattern == "" || !doublestar.ValidatePattern(pattern) {
		return nil, false, fmt.Errorf("Invalid glob pattern: %q.", pattern)
	}
	paths = []string{}
	err = f.v.scan("", func(in Info) error {
		if err := f.ctx.Err(); err != nil {
			return err
		}
		if ok, _ := doublestar.Match(pattern, in.Path); ok {
			if len(paths) == f.s.maxMatches {
				capped = true
				return errStop
			}
			paths = append(paths, in.Path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, false, err
	}
	return paths, capped, nil
}

// Grep returns the lines of the text files matching glob (every file when
// empty) that match the regular expression pattern, as grep finds them
// from the root: at most DefaultMaxMatches, and whether there were more.
func (f *Files) Grep(pattern, glob string) (matches []Match, capped bool, err error) {
	m, err := newMatcher(pattern, false, false)
	if err != nil {
		return nil, false, errors.New("Invalid regular expression: " + err.Error())
	}
	filter := strings.TrimPrefix(strings.TrimSpace(glob), "/")
	if glob != "" && (filter == "" || !doublestar.ValidatePattern(filter)) {
		return nil, false, fmt.Errorf("Invalid glob pattern: %q.", glob)
	}
	keep := func(p string) bool {
		ok, _ := doublestar.Match(filter, p)
		return filter == "" || ok
	}
	scan := func(st *scanState, path string, data []byte) fileScan {
		return m.scanFile(st, path, data, scanShow, 0, f.s.maxMatches+1, 0)
	}
	matches = []Match{}
	err = f.v.searchFiles(f.ctx, "", f.s.maxFile, keep, scan, func(j *searchJob) error {
		for _, g := range j.res.groups {
			if len(matches) == f.s.maxMatches {
				capped = true
				return errStop
			}
			matches = append(matches, g.lines...)
		}
		if j.res.more > 0 {
			capped = true
			return errStop
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return matches, capped, nil
}

// MaxFileBytes is the largest file the workspace writes or reads.
func (f *Files) MaxFileBytes() int64 { return f.s.maxFile }

// Snapshot returns every file the workspace tools see (the ignore rules
// apply) with its content, read without counting as read by the session:
// the tree a sandbox starts from. A file larger than the limit is an
// error.
func (f *Files) Snapshot() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := f.v.walk("", func(in Info) error {
		if err := f.ctx.Err(); err != nil {
			return err
		}
		if in.Special != "" {
			return nil
		}
		data, err := f.v.st.readFile(in.Path, f.s.maxFile)
		if err != nil {
			return f.fail(err, in.Path, "File does not exist: "+in.Path)
		}
		out[in.Path] = data
		return nil
	})
	return out, err
}
