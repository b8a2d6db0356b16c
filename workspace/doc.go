// Package workspace is the workspace section: a file workspace for the
// agent with the tools ls, directory_tree, file_info, read_file,
// read_multiple_files, write_file, edit_file, create_directory, move_file,
// glob, grep, rm and apply_edits, the read-before-write policy on by
// default, and every change undone when a call fails.
//
// Listings, searches and mounts follow git's ignore rules (ignore.go):
// they leave out .git and what the .gitignore files on the way ignore,
// unless Config.IncludeIgnored turns the rules off; ls and directory_tree
// also hide dot names unless asked. A file named directly is read and
// written as usual.
//
// # Backends
//
// Two backends sit behind one internal interface (store), and every tool
// behaves the same on both; a shared test suite runs every tool test, and
// a differential property test runs random calls, against both.
//
//   - memory (NewMemory, or Open with Backend "memory"): each session has
//     its own tree of directories, each a persistent sorted map from name
//     to entry (merkle.Map); a change rebuilds only the parts of the
//     directories on its path that hold it. Mounts are loaded once at
//     startup into a base tree every new session starts from; a snapshot
//     keeps the current tree and a restore puts it back, O(1) whatever the
//     size. The tree is stored as it is shaped (statetree.Tree): each node,
//     and each part of a large directory, keeps its hash, so storing the
//     tree after a change hashes and writes only what the change made, and
//     a loaded tree reads a directory, a part of one and a file's content
//     from the store on first use. In a session whose store keeps files'
//     contents as they are written (statetree.Stasher), a write stores a
//     file's content of up to statetree.ChunkSize bytes at once, and the
//     tree names it by the located name the store gave it; a write of
//     the content a file holds already keeps it as it is.
//   - disk (OpenDisk, or Open with Backend "disk"): one host directory
//     shared by every session, and by every process working on it with
//     the same state directory. Every access goes through an os.Root,
//     which resolves each path beneath the directory atomically, so no
//     "..", absolute path or symbolic link, not even one swapped in
//     between a check and a use, reaches outside. Writes are atomic: a
//     temporary file in the same directory, renamed over the target.
//     Calls that change files lock them and keep an undo journal on disk
//     (below). Files are not fsynced, nor the journal's records of what a
//     call is about to leave: atomic against concurrent readers and
//     writers and safe against a killed process, not against a power
//     loss.
//
// Either way the workspace joins transactions as a session.Snapshotter (a
// per-session resource made with session.Provide), not as a special case in
// the pipeline.
//
// # Locks: several sessions and processes on one directory
//
// A call holds a lock on every file it may change, from before the
// read-before-write check (or, with the policy off, before the tool first
// reads the file) until its transaction has committed or restored. A lock
// is an in-process lock plus an exclusive flock(2) on a lock file in the
// workspace's state directory, <state-dir>/journal/<hash of the root's
// real path>/<hash of the path>.lock, so new files are covered and no lock
// file appears in the user's tree; a lock file exists only while it is
// held. Directories are not locked: a call makes the missing parents of a
// file it writes, and a restore removes the ones it made only if they are
// empty.
//
// Workspace.Lock takes locks, and the read-before-write policy takes them
// through it (policy.Locker) before it compares versions: that is the one
// place where the check is made, for write_file, edit_file and move_file
// called by the client and for each step of apply_edits alike. write_file,
// edit_file and rm lock their path before they look at it, move_file its
// source and destination; apply_edits locks every path its operations name
// before the first one; rm locks each file it removes, and a move each
// file of the tree it moves. A call takes locks in path order and waits (until its
// deadline) only for a lock that comes after every one it holds; a lock
// that comes before one it holds is taken only if it is free, and
// otherwise the call fails at once ("File 'p' is being changed by another
// call; try again."), so no two calls ever wait for each other. Waiting
// past the deadline fails the same way.
//
// Reads take no lock: they see a file's old content or its new one, never
// a mix, and may see a write whose call then fails; the read-before-write
// check refuses a write based on such a read, since the file changed
// since.
//
// On systems without flock(2) (Windows), locks hold within one process
// only, and a directory must not be shared by several processes.
//
// # The undo journal and crashes
//
// Each call that changes files writes an undo journal,
// <state-dir>/journal/<hash of the root>/<call id>.journal, flocked by its
// process while the call runs. Before the call first changes a path, the
// journal gets what the path holds (a file's content and mode, a
// directory, a link's target, or nothing), synced to disk with the
// journal's directory entry; before every change, what the call is about
// to leave there (unsynced). Temporary files are named after the journal
// (.wink-tmp-<call id>-...). The commit is the removal of the journal,
// after which the call's locks are released. A failed call replays its
// journal backwards: newest first change first, each path put back as it
// was before the call, then the journal is removed and the locks released.
//
// The rule after a crash: when a process opens the workspace
// (OpenDisk), every journal whose process is gone (nobody holds its
// flock) belongs to a call that had not committed, and is replayed
// backwards whole before the workspace is used: the call is rolled back,
// never half, and its temporary files are removed; then the journal and
// the lock files nobody holds are removed. A call whose journal was
// removed had committed and stays. Journals of live processes are left
// alone. While processes keep running, the lock file of a file that a
// dead process held names that process's journal: the next call to lock
// the file puts it back first, and the rest of the dead call is put back
// as each of its files is locked, and whole at the next start.
//
// Putting back a path (after a failure or a crash) is left out, and
// reported in the log, when the path holds neither what it held before
// the call nor anything the call left there: a program that takes no lock
// changed it since, and undoing the call must not undo its work. A
// journal's torn last record (the crash cut its write short) is ignored:
// its change was never made.
//
// # What readers outside the calls see
//
// The calls of a disk workspace change the directory in place, and
// another program reading it sees their writes as they happen. The
// server's own readers (Workspace.Freeze: resources, subscriptions, the
// console) see it as the last commit left it: they read the directory,
// then the journals of the calls in flight of every session and process on
// the state directory, and answer for each path a journal holds what it
// held before (overlay.go). A put back counts itself in
// <state-dir>/journal/<hash of the root>.rollbacks before its journal
// goes, and a read it overlapped reads again.
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
// The ReadBeforeWrite policy of package policy governs read_file and
// read_multiple_files (reads), write_file, edit_file and move_file over an
// existing file (writes). Its version token is a hash of the file's
// content, so any change by anyone (another session, another process)
// makes a file unknown again; a file the session wrote itself is known,
// and so is a file it knew at the path it was moved from (the content is
// the same); a file it could not read in read_multiple_files is not; paths
// are compared after Normalize. The workspace also tells the
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
// # Moves
//
// The memory backend moves a subtree by reference. The disk backend
// renames once, after journaling every path of the tree without
// following links: each entry of the source as removed (deepest first),
// then each entry of the destination as what it will hold; undone newest
// first, that removes the destination's entries before their directories
// and puts the source back directories first, with its modes and links. A
// tree that holds a named pipe, socket or device is not moved.
//
// # Decisions where the specification is silent
//
//   - read_file past the end, or of an empty file, succeeds with zero
//     lines and says so in its message instead of "lines a-b".
//   - A symbolic link in a disk workspace is followed when it stays inside
//     the root; writing over one replaces the link (the rename never
//     writes through it), and rm removes the link, never its target. walk
//     (glob, grep) does not descend into links to directories.
//   - A directory named as the path of ls, glob or grep is listed and
//     searched even when the .gitignore rules above it ignore it, as
//     ripgrep searches a directory it is given: the rules apply below it.
//     grep skips a file as ripgrep does, for a NUL byte in its first 64
//     KiB, and searches text that is not valid UTF-8.
//   - Mounts into a disk workspace do not overwrite files already there, so
//     a restart never destroys the agent's work. Exclude patterns also
//     prune directories; a pattern without "/" matches a name at any
//     depth.
//   - Lines longer than MaxLineBytes are cut in what read_file and grep
//     show, with a marker; ls, glob and grep stop at Options.MaxMatches
//     results or PageBytes and give a cursor to go on from;
//     directory_tree stops at Options.MaxMatches and says so, walking
//     breadth first so that the cap leaves the upper levels whole.
//   - read_file returns a file as an image (PNG, JPEG, GIF, WebP) or an
//     embedded PDF resource only when its extension and its sniffed
//     content (net/http.DetectContentType) agree, up to MaxMediaBytes; a
//     file named like an image that holds text is read as text.
//   - read_multiple_files shares one page of PageBytes among its files,
//     each getting at least its first line, and at most MaxMediaBytes of
//     images and PDFs in all.
//   - move_file replaces a file only with overwrite, never a directory,
//     and never moves a directory into itself. create_directory succeeds
//     on a directory already there.
//   - file_info gives a modification time on disk only: the memory
//     backend keeps no times.
//   - When edit_file's old_string is not found, the error shows the
//     window of the file's lines that matches it best once whitespace is
//     normalised, as a unified diff (see nearMiss).
package workspace
