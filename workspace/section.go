package workspace

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Key is the section's key.
const Key = "workspace"

// Resources that show the workspace to clients and people.
const (
	// TreeURI lists every file of the session's workspace.
	TreeURI = "wink://workspace/tree"
	// FileURITemplate is one file's content.
	FileURITemplate = "wink://workspace/files/{+path}"
	fileURIPrefix   = "wink://workspace/files/"
)

// FileURI returns the resource URI of the file at p (a normalised path).
func FileURI(p string) string { return fileURIPrefix + p }

// Options tunes the section. The zero value is the default.
type Options struct {
	// NoReadBeforeWrite turns the ReadBeforeWrite policy off.
	NoReadBeforeWrite bool
	// MaxFileBytes is the largest file the tools write, read or search;
	// DefaultMaxFileBytes when zero.
	MaxFileBytes int64
	// MaxMatches caps the entries ls, the files glob and the lines grep
	// return in one page; DefaultMaxMatches when zero.
	MaxMatches int
}

// settings are what the tools' handlers need from Options.
type settings struct {
	maxFile    int64
	maxMatches int
}

//go:embed guidance.md
var guidance string

// New returns the workspace section over backend b: the tools ls,
// directory_tree, file_info, read_file, read_multiple_files, write_file,
// edit_file, create_directory, move_file, glob, grep, rm and apply_edits, the
// ReadBeforeWrite policy (unless turned off), a per-session Workspace that
// every transaction covers, and the workspace as MCP resources.
func New(b *Backend, opts Options) *sections.Section {
	s := &settings{maxFile: opts.MaxFileBytes, maxMatches: opts.MaxMatches}
	if s.maxFile <= 0 {
		s.maxFile = DefaultMaxFileBytes
	}
	if s.maxMatches <= 0 {
		s.maxMatches = DefaultMaxMatches
	}
	write, edit, rm, move := s.writeFile(), s.editFile(), s.rm(), s.moveFile()
	sec := &sections.Section{
		Key:      Key,
		Title:    "Workspace",
		Guidance: guidance,
		Data: map[string]any{
			"Backend":         b.Kind(),
			"ReadBeforeWrite": !opts.NoReadBeforeWrite,
			"IncludeIgnored":  b.includeIgnored,
		},
		Tools: []*tools.Tool{
			s.ls(), s.directoryTree(), s.fileInfo(), s.readFile(), s.readMultipleFiles(),
			write, edit, s.createDirectory(), move, s.glob(), s.grep(), rm,
			s.applyEdits(write, edit, rm, move),
		},
		// Files on disk are outside the session: a call that wrote one is
		// never run twice.
		Contained: b.Kind() == "memory",
		// Searches and edits of a large tree may run long.
		Tasks: true,
		Setup: func(r *session.Registry) {
			session.Provide(r, resourceKey, func(*session.Session) (*Workspace, error) {
				return newWorkspace(b, s.maxFile)
			})
			session.ProvidePerCall(r, viewKey, newView)
		},
		Resources: []sections.Resource{{
			URI:         TreeURI,
			Name:        "Workspace tree",
			Description: "Every file of the session's workspace, with its size and resource URI.",
			MIMEType:    "text/plain",
			Read:        s.readTree,
		}},
		Templates: []sections.ResourceTemplate{{
			URITemplate: FileURITemplate,
			Name:        "Workspace file",
			Description: "The content of one text file of the session's workspace.",
			MIMEType:    "text/plain",
			Read:        s.readFileResource,
		}},
	}
	if !opts.NoReadBeforeWrite {
		sec.Policies = []policy.Policy{ReadBeforeWrite()}
	}
	return sec
}

// ReadBeforeWrite returns the policy the section attaches by default:
// write_file (with overwrite: true), edit_file and move_file (over an
// existing file, with overwrite: true) may change an existing file only
// when the session has read it with read_file or read_multiple_files, or
// written it itself, and nobody changed it since. write_file and
// move_file without overwrite never change an existing file: the tools
// themselves refuse it, saying how to proceed, so the policy leaves them
// alone; what write_file creates, the session knows, as it knows what it
// reads; what it knew of a file it moves, it knows at the new path.
func ReadBeforeWrite() *policy.ReadBeforeWrite {
	filePath := func(p any) []string {
		switch p := p.(type) {
		case ReadFileParams:
			return []string{p.FilePath}
		case ReadMultipleFilesParams:
			return p.Paths
		case WriteFileParams:
			return []string{p.FilePath}
		case EditFileParams:
			return []string{p.FilePath}
		}
		return nil
	}
	overwritten := func(p any) []string {
		switch p := p.(type) {
		case WriteFileParams:
			if p.Overwrite {
				return []string{p.FilePath}
			}
		case MoveFileParams:
			if p.Overwrite {
				return []string{p.Destination}
			}
		}
		return nil
	}
	moved := func(p any) []policy.Move {
		m := p.(MoveFileParams)
		return []policy.Move{{From: m.Source, To: m.Destination}}
	}
	return policy.NewReadBeforeWrite(
		map[string]policy.PathsFunc{"read_file": filePath, "read_multiple_files": filePath, "write_file": filePath},
		map[string]policy.PathsFunc{"write_file": overwritten, "edit_file": filePath, "move_file": overwritten},
		map[string]policy.MovesFunc{"move_file": moved},
		func(call *tools.Call) (policy.Files, error) {
			if call.Tx != nil {
				return session.CallResource(call.Tx, viewKey)
			}
			if w := From(call.Session); w != nil {
				return w, nil
			}
			return nil, errNoWorkspace
		},
	)
}

func (s *settings) readTree(ctx context.Context, sess *session.Session) (string, error) {
	w := From(sess)
	if w == nil {
		return "", sections.ErrNotFound
	}
	var b strings.Builder
	n := 0
	err := w.walk("", func(in Info) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n++
		fmt.Fprintf(&b, "%s (%s) %s\n", in.Path, plural(int(in.Size), "byte", "bytes"), FileURI(in.Path))
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s workspace, %s.\n\n", w.kind, plural(n, "file", "files")) + b.String(), nil
}

func (s *settings) readFileResource(_ context.Context, sess *session.Session, _ string, args map[string]string) (string, error) {
	w := From(sess)
	if w == nil {
		return "", sections.ErrNotFound
	}
	p, err := normalizeFile(args["path"])
	if err != nil {
		return "", fmt.Errorf("%w: %v", sections.ErrNotFound, err)
	}
	data, err := w.st.readFile(p, s.maxFile)
	switch {
	case errors.Is(err, errNotExist), errors.Is(err, errIsDir), errors.Is(err, errEscapes), errors.Is(err, errSpecial):
		return "", sections.ErrNotFound
	case err != nil:
		return "", err
	case isBinary(data):
		return "", fmt.Errorf("%s is a binary file", p)
	}
	return string(data), nil
}
