package workspace

import "github.com/bmatcuk/doublestar/v4"

// fileTypes are the file types grep's type narrows to: the common ones of
// ripgrep 13's list (rg --type-list), by name, each with the globs of
// ripgrep, matched against a file's name.
var fileTypes = map[string][]string{
	"c":        {"*.[chH]", "*.[chH].in", "*.cats"},
	"clojure":  {"*.clj", "*.cljc", "*.cljs", "*.cljx"},
	"cmake":    {"*.cmake", "CMakeLists.txt"},
	"cpp":      {"*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in", "*.cc", "*.cc.in", "*.hh", "*.hh.in", "*.inl"},
	"cs":       {"*.cs"},
	"css":      {"*.css", "*.scss"},
	"csv":      {"*.csv"},
	"dart":     {"*.dart"},
	"docker":   {"*Dockerfile*"},
	"elixir":   {"*.eex", "*.ex", "*.exs"},
	"elm":      {"*.elm"},
	"erlang":   {"*.erl", "*.hrl"},
	"go":       {"*.go"},
	"h":        {"*.h", "*.hpp"},
	"haskell":  {"*.c2hs", "*.cpphs", "*.hs", "*.hsc", "*.lhs"},
	"html":     {"*.ejs", "*.htm", "*.html"},
	"java":     {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"js":       {"*.js", "*.jsx", "*.vue"},
	"json":     {"*.json", "composer.lock"},
	"jsonl":    {"*.jsonl"},
	"julia":    {"*.jl"},
	"kotlin":   {"*.kt", "*.kts"},
	"lisp":     {"*.el", "*.jl", "*.lisp", "*.lsp", "*.sc", "*.scm"},
	"lua":      {"*.lua"},
	"make":     {"*.mak", "*.mk", "[Gg][Nn][Uu]makefile", "[Gg][Nn][Uu]makefile.am", "[Gg][Nn][Uu]makefile.in", "[Mm]akefile", "[Mm]akefile.am", "[Mm]akefile.in"},
	"markdown": {"*.markdown", "*.md", "*.mdown", "*.mkdn"},
	"md":       {"*.markdown", "*.md", "*.mdown", "*.mkdn"},
	"ocaml":    {"*.ml", "*.mli", "*.mll", "*.mly"},
	"perl":     {"*.PL", "*.perl", "*.pl", "*.plh", "*.plx", "*.pm", "*.t"},
	"php":      {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
	"protobuf": {"*.proto"},
	"py":       {"*.py"},
	"r":        {"*.R", "*.Rmd", "*.Rnw", "*.r"},
	"ruby":     {"*.gemspec", "*.rb", "*.rbw", ".irbrc", "Gemfile", "Rakefile", "config.ru"},
	"rust":     {"*.rs"},
	"scala":    {"*.sbt", "*.scala"},
	"sh":       {"*.bash", "*.bashrc", "*.csh", "*.cshrc", "*.ksh", "*.kshrc", "*.sh", "*.tcsh", "*.zsh", ".bash_login", ".bash_logout", ".bash_profile", ".bashrc", ".cshrc", ".kshrc", ".login", ".logout", ".profile", ".tcshrc", ".zlogin", ".zlogout", ".zprofile", ".zshenv", ".zshrc", "bash_login", "bash_logout", "bash_profile", "bashrc", "profile", "zlogin", "zlogout", "zprofile", "zshenv", "zshrc"},
	"sql":      {"*.psql", "*.sql"},
	"swift":    {"*.swift"},
	"tex":      {"*.bib", "*.cls", "*.dtx", "*.ins", "*.ltx", "*.sty", "*.tex"},
	"toml":     {"*.toml", "Cargo.lock"},
	"ts":       {"*.ts", "*.tsx"},
	"txt":      {"*.txt"},
	"xml":      {"*.dtd", "*.rng", "*.sch", "*.xhtml", "*.xjb", "*.xml", "*.xml.dist", "*.xsd", "*.xsl", "*.xslt"},
	"yaml":     {"*.yaml", "*.yml"},
	"zig":      {"*.zig"},
}

// matchesType reports whether the file name matches one of globs.
func matchesType(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, name); ok {
			return true
		}
	}
	return false
}
