# The build step of the bench scripts, which source this file and call it
# from the repository's root, and the scratch directory of those that start
# servers of their own.

# scratch sets tmp to a new directory and pids to an empty list; when the
# script exits, the processes in pids are killed and waited for, and tmp
# is removed.
scratch() {
	tmp="$(mktemp -d)"
	pids=()
	trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
}

# build DIR TOOL... builds each bench/TOOL into DIR/TOOL, and puts the
# wink-mcp binary to measure at DIR/wink: WINK_BIN when set, else one built
# from the repository.
build() {
	local dir="$1" tool
	shift
	local list
	list="$(printf 'bench/%s, ' "$@")"
	echo "building ${list%, } and (without WINK_BIN) wink-mcp..." >&2
	for tool in "$@"; do
		go build -o "$dir/$tool" "./bench/$tool"
	done
	if [[ -n "${WINK_BIN:-}" ]]; then
		ln -s "$(realpath "$WINK_BIN")" "$dir/wink"
	else
		go build -o "$dir/wink" .
	fi
}
