#!/usr/bin/env bash
# Measures wink-mcp's grep and glob against ripgrep, in the same run, over
# the real binary serving a tree with --workspace over stdio (bench/search,
# whose doc says what each case times and checks):
#   go      Go's source tree, $(go env GOROOT)/src, copied into a fresh git
#           repository (about 11,500 files); the regular expression is
#           runtime\.KeepAlive\(
#   N       (a number) a tree of N files that bench/search gen writes:
#           nested directories, source-like files of varied sizes, a
#           .gitignore with ignored directories, a few binaries; the
#           regular expression is sync\.OnceValue\( (200 matching lines)
# For each tree it prints, per case, the median round trip of one
# tools/call against the median of rg's whole run and their ratio, whether
# both found the same, and the server's peak RSS; then the tools/list size
# of a default server. A case whose arguments the server does not know yet
# is reported as unsupported. Installs ripgrep (apt-get) when rg is missing.
#
# Environment:
#   WINK_BIN  the wink-mcp binary (default: built from the repository)
#   TREES     the trees to search, of go and numbers (default "go 40000 100000")
#   RUNS      timed runs of each side of each case, after a warm-up (3)
#   SEED      the seed of the generated trees (1)
#
# Exits non-zero if a build, a tree or a case fails (unsupported is not a
# failure). The machine's load shows in the milliseconds: compare ratios of
# one run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v rg >/dev/null; then
	echo "rg is missing: installing ripgrep (apt-get install -y ripgrep)" >&2
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		sudo=sudo
	fi
	$sudo apt-get install -y ripgrep || { $sudo apt-get update && $sudo apt-get install -y ripgrep; }
fi
echo "$(rg --version | head -1), $(nproc) cores"

cd "$root"
source bench/build.sh
build "$tmp" search

for tree in ${TREES:-go 40000 100000}; do
	case "$tree" in
	go)
		dir="$tmp/gosrc"
		cp -r "$(go env GOROOT)/src" "$dir"
		git -C "$dir" init -q
		echo "go: $(find "$dir" -type f -not -path '*/.git/*' | wc -l) files, $(du -sh --exclude=.git "$dir" | cut -f1)"
		"$tmp/search" run --bin "$tmp/wink" --tree "$dir" --label "Go's source tree" \
			--re 'runtime\.KeepAlive\(' --runs "${RUNS:-3}"
		;;
	*[!0-9]* | "")
		echo "TREES: $tree is neither go nor a number" >&2
		exit 2
		;;
	*)
		dir="$tmp/gen$tree"
		"$tmp/search" gen --dir "$dir" --n "$tree" --seed "${SEED:-1}"
		echo "gen$tree: $(du -sh --exclude=.git "$dir" | cut -f1)"
		"$tmp/search" run --bin "$tmp/wink" --tree "$dir" --label "a generated tree of $tree files" --runs "${RUNS:-3}"
		;;
	esac
	rm -rf "$dir"
done
"$tmp/search" list --bin "$tmp/wink"
