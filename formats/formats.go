// Package formats holds the migrations of a session store written by an
// older version of wink-mcp, one step a format, for
// store.Options.Migrations: what changed in the heads, blobs, call log
// entries and task records that the store keeps for the sessions. The
// store migrates its own framing itself; see store.Format for the list of
// formats.
//
// A step writes exactly the format it names, with an encoder of its own,
// so that a later change of the live encoders cannot change what an old
// step writes: a store of format 1 opened by a version that writes format
// 6 goes through the steps 1→2, 2→3, 3→4, 4→5 and 5→6 in turn.
//
// # Adding a format
//
// A change of what the store holds is a new format: raise store.Format,
// write a step from the format before it in a file of its own here
// (stepN.go, with its test), add it to Steps, make a fixture of the new
// format with scripts/make-format-fixture, and say in docs/state.md what
// changed.
package formats

import "github.com/wink-mcp/wink-mcp/store"

// Steps returns the migrations from every format before store.Format.
func Steps() []store.Step {
	return []store.Step{
		{From: 1, Migrate: migrate1},
		// Format 3 reads what format 2 stored as it is (docs/state.md): its
		// step only marks the streams, so that builds of format 2 refuse
		// them instead of failing on heads with a history's tail, large
		// directories and policy memories they cannot read.
		{From: 2},
		// Format 4 reads a head of format 3 as it is, its tail's whole
		// root documents included (docs/state.md): its step, as the one
		// before, only marks the streams, so that builds of format 3
		// refuse them instead of failing on tails they cannot read.
		{From: 3},
		// Format 5 reads a history's blob of format 4 (JSON) as it is:
		// its step, as the two before, only marks the streams, so that
		// builds of format 4 refuse them instead of failing on binary
		// history blobs they cannot read.
		{From: 4},
		// Format 6 reads what format 5 stored as it is; a file's content
		// may now be a located blob (store.Store.PutData), which builds
		// of format 5 cannot read, and the state stream is configured
		// for them. Its step, as the three before, only marks the
		// streams: the opening that migrates then configures the state
		// stream as format 6 wants it, and an opening of a stream marked
		// 6 whose process ended before that does it again.
		{From: 5},
	}
}
