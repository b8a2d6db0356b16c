package workspace

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/tools"
)

// Depths of directory_tree.
const (
	// DefaultTreeDepth is how many levels directory_tree shows by default.
	DefaultTreeDepth = 3
	// MaxTreeDepth is the most levels it shows.
	MaxTreeDepth = 10
)

// DirectoryTreeParams are the arguments of directory_tree.
type DirectoryTreeParams struct {
	Path  string `json:"path,omitempty" jsonschema:"Directory to show, relative to the workspace root; the root when empty."`
	Depth int    `json:"depth,omitempty" jsonschema:"How many levels to show, 1 to 10; 1 is the directory's own children." default:"3"`
	All   bool   `json:"all,omitempty" jsonschema:"Also show hidden entries: names starting with a dot, and what .gitignore files ignore."`
}

// TreeNode is one entry of a directory tree.
type TreeNode struct {
	// Name is the entry's name in its directory.
	Name string `json:"name"`
	// Type is file, directory, symlink, or what ls calls a special file.
	Type string `json:"type"`
	// Size is a file's size in bytes.
	Size int64 `json:"size,omitempty"`
	// Children are a directory's entries, directories first; absent when
	// the depth or the entry cap stopped the walk above them.
	Children []*TreeNode `json:"children,omitempty"`
	// Hidden counts the entries left out (dot names, ignored paths).
	Hidden int `json:"hidden,omitempty"`

	// listed says the walk listed the directory's entries.
	listed bool
}

// DirectoryTree is the result of directory_tree.
type DirectoryTree struct {
	Path    string `json:"path" jsonschema:"The directory shown; empty for the root."`
	Depth   int    `json:"depth" jsonschema:"The levels shown."`
	Entries int    `json:"entries" jsonschema:"How many entries the tree holds."`
	Capped  bool   `json:"capped,omitempty" jsonschema:"Whether the entry cap stopped the walk: some directories are shown without their children."`
	Hidden  int    `json:"hidden,omitempty" jsonschema:"How many of the directory's own entries were left out: names starting with a dot, and what .gitignore files ignore; all shows them."`
	// Tree holds a []*TreeNode; it is typed any because a schema cannot be
	// inferred for a recursive type.
	Tree any `json:"tree" jsonschema:"The directory's entries, directories first, then files, each sorted by name: objects with name, type (file, directory, symlink, named pipe, socket, device), size (files), children (a directory's entries, absent when the depth or the cap stopped above it) and hidden (how many of its entries were left out)."`
}

// Render indents each level by two spaces; directories end with a slash,
// and one whose children are not shown with "/ ...".
func (d *DirectoryTree) Render() string {
	var b strings.Builder
	var walk func(nodes []*TreeNode, indent string)
	walk = func(nodes []*TreeNode, indent string) {
		for _, n := range nodes {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(indent + n.Name)
			switch {
			case n.Type == "directory" && !n.listed:
				b.WriteString("/ ...")
			case n.Type == "directory":
				b.WriteByte('/')
			case n.Type == "file":
				fmt.Fprintf(&b, " (%s)", plural(int(n.Size), "byte", "bytes"))
			default:
				fmt.Fprintf(&b, " (%s)", n.Type)
			}
			if n.Hidden > 0 {
				fmt.Fprintf(&b, " [%d hidden]", n.Hidden)
			}
			walk(n.Children, indent+"  ")
		}
	}
	nodes, _ := d.Tree.([]*TreeNode)
	walk(nodes, "")
	if b.Len() == 0 {
		return "(empty directory)"
	}
	return b.String()
}

func (s *settings) directoryTree() *tools.Tool {
	return tools.New("directory_tree",
		"Show a workspace directory as a tree, up to depth levels (default 3, at most 10), as JSON in the structured result; hidden entries (dot names, .gitignore'd paths) only with all.",
		tools.Annotations{Title: "Directory tree", ReadOnly: true, Idempotent: true},
		func(ctx *tools.Context, p DirectoryTreeParams) (tools.Result[*DirectoryTree], error) {
			if p.Depth < 1 || p.Depth > MaxTreeDepth {
				return tools.Fail[*DirectoryTree](fmt.Sprintf("depth must be between 1 and %d.", MaxTreeDepth)), nil
			}
			w := From(ctx.Session)
			dir, err := Normalize(p.Path)
			if err != nil {
				return tools.Fail[*DirectoryTree](err.Error()), nil
			}
			top := &TreeNode{Type: "directory"}
			out := &DirectoryTree{Path: dir, Depth: p.Depth}
			// Breadth first, so that the cap leaves the upper levels whole.
			type pending struct {
				node  *TreeNode
				path  string
				level int
			}
			queue := []pending{{top, dir, 1}}
			for len(queue) > 0 && !out.Capped {
				if err := ctx.Err(); err != nil {
					return tools.Result[*DirectoryTree]{}, err
				}
				d := queue[0]
				queue = queue[1:]
				infos, err := w.st.list(d.path)
				if err != nil {
					if d.node != top {
						continue // gone, or not listable, since its parent was listed
					}
					if errorsIsNotDir(err) {
						return tools.Fail[*DirectoryTree]("Cannot show a tree of a file path; provide a directory."), nil
					}
					if f := describe(err, dir, "Directory does not exist: "+display(dir), s.maxFile); f != nil {
						return tools.Fail[*DirectoryTree](f.msg), nil
					}
					return tools.Result[*DirectoryTree]{}, err
				}
				hides := w.hides(d.path, p.All)
				d.node.listed, d.node.Children = true, []*TreeNode{}
				for _, dirs := range []bool{true, false} {
					for _, in := range infos {
						switch {
						case in.Dir != dirs:
							continue
						case hides(in):
							d.node.Hidden++
							continue
						case out.Entries >= s.maxMatches:
							out.Capped = true
							continue
						}
						n := &TreeNode{Name: base(in.Path), Type: nodeType(in), Size: in.Size}
						d.node.Children = append(d.node.Children, n)
						out.Entries++
						if n.Type == "directory" && d.level < p.Depth {
							queue = append(queue, pending{n, in.Path, d.level + 1})
						}
					}
				}
			}
			out.Tree, out.Hidden = top.Children, top.Hidden
			msg := fmt.Sprintf("Tree of %s, %s, %s.", display(dir), plural(p.Depth, "level", "levels"), plural(out.Entries, "entry", "entries"))
			if out.Hidden > 0 {
				msg += fmt.Sprintf(" %s hidden (dot names or ignored by .gitignore); all: true shows them.", plural(out.Hidden, "entry", "entries"))
			}
			if out.Capped {
				msg += fmt.Sprintf(" Capped at %d entries: directories ending in \"/ ...\" are not expanded; show them on their own.", s.maxMatches)
			}
			return tools.OK(msg, out), nil
		},
		tools.WithExamples(tools.Example{
			Description: "Show two levels of a directory.",
			Input:       `{"path":"src","depth":2}`,
			Output:      "Tree of src, 2 levels, 4 entries.\n\nutil/\n  strings.go (310 bytes)\n  testdata/ ...\nmain.go (120 bytes)",
		}),
	)
}

// nodeType names an entry as directory_tree and file_info do.
func nodeType(in Info) string {
	switch {
	case in.Link:
		return "symlink"
	case in.Dir:
		return "directory"
	case in.Special != "":
		return in.Special
	}
	return "file"
}
