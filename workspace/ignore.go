package workspace

import (
	"io/fs"
	"strings"

	"github.com/wink-mcp/wink-mcp/gitignore"
)

// ignoreFile is the name of the files whose patterns the walks honour.
const ignoreFile = ".gitignore"

// maxIgnoreFile is the largest .gitignore file read; a larger one is not
// honoured.
const maxIgnoreFile = 1 << 20

// ignoreRules say which paths the listings, searches and mounts leave out,
// as git does: a directory or file named .git, and what the patterns of
// the .gitignore files on the way ignore. The zero value leaves out .git
// only. Rules are immutable: with returns new ones that share r's.
type ignoreRules struct {
	top *ignoreLevel
}

// ignoreLevel is the compiled .gitignore file of a directory, and the
// levels above it.
type ignoreLevel struct {
	dir  string // the directory, from where the rules' domains start
	list *gitignore.List
	up   *ignoreLevel
}

// skips reports whether the rules leave out the entry at p, a slash path
// from where the rules' domains start; dir says whether it is a directory.
// It tests p at its own name only, against the deepest file's patterns
// first: the walks do not enter a directory the rules leave out, so p's
// ancestors are not left out.
func (r ignoreRules) skips(p string, dir bool) bool {
	if base(p) == ".git" {
		return true
	}
	for l := r.top; l != nil; l = l.up {
		if ignored, ok := l.list.Match(relTo(p, l.dir), dir); ok {
			return ignored
		}
	}
	return false
}

// with returns the rules with the patterns of data, the content of the
// .gitignore file of the directory dir, added after r's own, so that they
// take precedence as the deeper file's do in git.
func (r ignoreRules) with(dir string, data []byte) ignoreRules {
	l := gitignore.Parse(data)
	if l.Len() == 0 {
		return r
	}
	return ignoreRules{top: &ignoreLevel{dir: dir, list: l, up: r.top}}
}

// rulesAt returns the rules that hold inside the directory dir of st: the
// .gitignore files of the root and of each directory down to dir, dir's
// own included. A .gitignore that cannot be read is not honoured.
func rulesAt(st store, dir string) ignoreRules {
	r := ignoreRules{}.enter(st, "")
	if dir == "" {
		return r
	}
	prefix := ""
	for _, seg := range strings.Split(dir, "/") {
		prefix = join(prefix, seg)
		r = r.enter(st, prefix)
	}
	return r
}

// enter returns the rules inside the directory dir of st, given r, the
// rules of its parent.
func (r ignoreRules) enter(st store, dir string) ignoreRules {
	data, err := st.readFile(join(dir, ignoreFile), maxIgnoreFile)
	if err != nil || len(data) == 0 {
		return r
	}
	return r.with(dir, data)
}

// walk calls fn for every file under the directory at dir, in path order,
// leaving out, unless the workspace includes ignored files, what the
// ignore rules skip (whole directories at once).
func (w *Workspace) walk(dir string, fn func(Info) error) error {
	return w.visit(dir, walkOpts{sizes: true, opens: true}, fn)
}

// scan is walk for the searches: Info.Size may be 0 (see store.scan).
func (w *Workspace) scan(dir string, fn func(Info) error) error {
	return w.visit(dir, walkOpts{opens: true}, fn)
}

// names is walk for glob, which needs the paths only: Info.Size may be 0
// and Info.open nil.
func (w *Workspace) names(dir string, fn func(Info) error) error {
	return w.visit(dir, walkOpts{}, fn)
}

// ruleWalker is a store that applies the ignore rules as it walks (the
// disk's, which tests each entry in its listing workers and lists no
// ignored directory), and gives only what walkOpts ask.
type ruleWalker interface {
	walkTree(dir string, o walkOpts, fn func(Info) error) error
}

// visit is walk, with what o asks (o.rules is set here).
func (w *Workspace) visit(dir string, o walkOpts, fn func(Info) error) error {
	files := func(in Info) error {
		if in.Dir {
			return nil
		}
		return fn(in)
	}
	if rw, ok := w.st.(ruleWalker); ok {
		if !w.includeIgnored {
			r := ignoreRules{}
			if dir != "" {
				r = rulesAt(w.st, parent(dir))
			}
			o.rules = &r
		}
		return rw.walkTree(dir, o, files)
	}
	walk := w.st.scan
	if o.sizes {
		walk = w.st.walk
	}
	if w.includeIgnored {
		return walk(dir, files)
	}
	rules := map[string]ignoreRules{dir: rulesAt(w.st, dir)}
	return walk(dir, func(in Info) error {
		r := rules[parent(in.Path)]
		switch skip := r.skips(in.Path, in.Dir); {
		case skip && in.Dir:
			return fs.SkipDir
		case skip:
			return nil
		case in.Dir && in.noIgnoreFile:
			rules[in.Path] = r
			return nil
		case in.Dir:
			rules[in.Path] = r.enter(w.st, in.Path)
			return nil
		}
		return fn(in)
	})
}
