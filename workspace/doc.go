// Package workspace is the workspace section: a file workspace for the
// agent with the tools ls, read_file, write_file, edit_file, glob, grep, rm
// and apply_edits, the read-before-write policy on by default, and every
// change undone when a call fails.
//
// # Backends
//
// Two backends sit behind one internal interface (store), and every tool
// behaves the same on both; a shared test suite runs every tool test, and
// a differential property test runs random calls, against both.
//
//   - memory (NewMemory, or Open with Backend "memory"): each session has
//     its own tree, a persistent sorted map from path to file
//     (github.com/benbjohnson/immutable). Mounts are loaded once at startup
//     into a base tree every new session starts from; a snapshot keeps the
//     current tree and a restore puts it back, O(1) whatever the size.
//   - disk (OpenDisk, or Open with Backend "disk"): one host directory
//     shared by every session. Every access goes through an os.Root, which
//     resolves each path beneath the directory atomically, so no "..",
//     absolute path or symbolic link, not even one swapped in between a
//     check and a use, reaches outside. Writes are atomic: a temporary file
//     in the same directory, renamed over the target. Each session has its
//     own undo journal: before a call first changes a path, its prior
//     content and mode (or its absence, or a link's target) are saved; a
//     failed call restores them newest first. A path that someone else
//     changed after the call last touched it is left alone (and reported
//     in the server's log): undoing one session's call never undoes
//     another's work. Writes are not fsynced: atomic against concurrent
//     readers and writers, not durable against power loss.
//
// Either way the workspace joins transactions as a session.Snapshotter (a
// per-session resource made with session.Provide), not as a special case in
// the pipeline.
//
// # Paths
//
// Paths are relative to the root and normalised by Normalize: a leading
// "/" is ignored, repeated slashes collapse, surrounding whitespace is
// trimmed; "", "/" and "." are the root where a directory is expected. A
// "." or ".." segment, NUL bytes, control characters, bytes that are not
// UTF-8, a segment that starts or ends with whitespace, more than 16
// segments or a segment longer than 255 bytes is refused with a message
// naming the rule. On disk, names a path could not hold, symbolic links
// that lead outside the root or nowhere, special files and the temporary
// files of atomic writes are not listed. Listings and walks are in path
// order ("a", "a/b", "a-b"), the same on both backends.
//
// # Read before write
//
// The ReadBeforeWrite policy of package policy governs read_file (reads)
// and write_file and edit_file (writes). Its version token is a hash of the
// file's content, so any change by anyone (another session, another
// process) makes a file unknown again; a file the session wrote itself is
// known; paths are compared after Normalize. The workspace also tells the
// policy which version the call itself read or wrote (policy.Observer), so
// a change made between a read and the end of that call does not count as
// seen. Options.NoReadBeforeWrite turns the policy off.
//
// # apply_edits
//
// Each operation is parsed by the schema of the tool it names, checked by
// that tool's policies (section and server-wide, through
// tools.Call.Authorise) and run by that tool's code; its policies' OnResult
// runs once it succeeds, inside the call's transaction. If one fails, the
// call fails naming it (edits[i]) and the transaction undoes the others;
// there is no hand-written undo here.
//
// # Decisions where the specification is silent
//
//   - read_file past the end, or of an empty file, succeeds with zero
//     lines and says so in its message instead of "lines a-b".
//   - A symbolic link in a disk workspace is followed when it stays inside
//     the root; writing over one replaces the link (the rename never
//     writes through it), and rm removes the link, never its target. walk
//     (glob, grep) does not descend into links to directories.
//   - Mounts into a disk workspace do not overwrite files already there, so
//     a restart never destroys the agent's work. Exclude patterns also
//     prune directories; a pattern without "/" matches a name at any
//     depth.
//   - Lines longer than MaxLineBytes are cut in what read_file and grep
//     show, with a marker; glob and grep stop at Options.MaxMatches and
//     say so.
package workspace
