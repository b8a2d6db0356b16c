// Command search measures wink-mcp's grep and glob against ripgrep, over
// the real binary, on a tree on disk:
//
//	search gen  --dir DIR --n 100000 [--seed 1]
//	search run  --bin wink-mcp --tree DIR [--rg rg] [--label NAME]
//	            [--absent LITERAL] [--re REGEXP] [--runs 3]
//	search list --bin wink-mcp
//
// gen writes a tree of --n files to DIR, which must not exist: nested
// directories of varying depth (up to 9), source-like text files
// of the common kinds and of varied sizes (log-normal around 2 KiB, up to
// 256 KiB), one in five .go files a _test.go, a .gitignore (with a .git
// directory, so that both sides honour it) that ignores node_modules/,
// build/, /dist/ and *.log, with about 4.5% of the files beneath those, and
// 0.2% binaries. The regular expression sync\.OnceValue\( matches exactly
// 200 lines of the files searched (and some in ignored files, which must
// not count); the literal wink_bench_absent_Q7zX occurs nowhere.
//
// run starts the server with --workspace DIR over stdio (initialized
// before anything is timed, with a deadline of 10 minutes), and for each
// case times the round trip of one tools/call against rg's whole run in
// DIR, alternating, once to warm up and then --runs times each. It prints
// the medians, their ratio, and the least and greatest ratio of one run's
// two times. The cases: grep of --absent (a literal found nowhere) against
// rg LITERAL; grep of --re against rg RE; glob **/*_test.go against
// rg --files -g '*_test.go'; grep's output_mode files_with_matches against
// rg -l, with type go against rg -t go -l, count against rg -c, count
// with case_insensitive against rg -i -c, context 2 against rg -C 2, and
// multiline (--re, the rest of its line and the next line up to its last
// non-space) against rg -U --multiline-dotall.
// After the timing it checks what each found against rg's output (paging
// with cursor): the same number of matching lines, the same files, the
// same total; and prints whether they are equal. A case whose arguments
// the server does not know is reported as unsupported. Last it prints the
// server's peak RSS (VmHWM) over the whole run.
//
// list starts a default server (a state directory of its own, no other
// flag) and prints the size in bytes of each tool's name, description and
// inputSchema as compact JSON, and their sum.
//
// The timings are of a shared machine: compare the ratios of one run, not
// milliseconds across runs.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	var err error
	switch os.Args[1] {
	case "gen":
		dir := fs.String("dir", "", "the directory to create")
		n := fs.Int("n", 100_000, "files to write")
		seed := fs.Uint64("seed", 1, "the seed of the random tree")
		_ = fs.Parse(os.Args[2:])
		if *dir == "" || *n < 1 {
			usage()
		}
		var wrote int
		if wrote, err = gen(*dir, *n, *seed); err == nil {
			fmt.Printf("wrote %d files to %s\n", wrote, *dir)
		}
	case "run":
		var o runOpts
		fs.StringVar(&o.bin, "bin", "", "the wink-mcp binary")
		fs.StringVar(&o.rg, "rg", "rg", "the ripgrep binary")
		fs.StringVar(&o.tree, "tree", "", "the directory to search")
		fs.StringVar(&o.label, "label", "tree", "the tree's name in the output")
		fs.StringVar(&o.absent, "absent", Absent, "a literal found nowhere in the tree")
		fs.StringVar(&o.re, "re", Planted, "a regular expression with some matches")
		fs.IntVar(&o.runs, "runs", 3, "timed runs of each side of each case")
		_ = fs.Parse(os.Args[2:])
		if o.bin == "" || o.tree == "" || o.runs < 1 {
			usage()
		}
		err = run(o)
	case "list":
		bin := fs.String("bin", "", "the wink-mcp binary")
		_ = fs.Parse(os.Args[2:])
		if *bin == "" {
			usage()
		}
		var sizes map[string]int
		var total int
		if sizes, total, err = toolsListSize(*bin); err == nil {
			names := make([]string, 0, len(sizes))
			for name := range sizes {
				names = append(names, name)
			}
			sort.Strings(names)
			fmt.Println("\n=== tools/list of a default server: bytes of name, description and inputSchema")
			for _, name := range names {
				fmt.Printf("%-28s %6d\n", name, sizes[name])
			}
			fmt.Printf("%-28s %6d (%d tools)\n", "total", total, len(sizes))
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "search:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: search gen --dir DIR [--n N] [--seed S]\n"+
		"       search run --bin WINK --tree DIR [--rg RG] [--label NAME] [--absent LITERAL] [--re REGEXP] [--runs N]\n"+
		"       search list --bin WINK")
	os.Exit(2)
}
