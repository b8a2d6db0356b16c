package policy

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/benbjohnson/immutable"

	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/session"
)

// inlineFiles is the most files the read-before-write policy's memory
// holds as a JSON object, which travels inline in the session's root
// document; a larger memory is a merkle.Map stored as blobs of its own,
// so that a call that reads or writes a file stores what it changed, not
// the memory.
const inlineFiles = 32

// Persist declares how the policies' memory is stored: the files the
// read-before-write policy knows, from path to version (a JSON object up
// to inlineFiles files, a merkle.Map of merkle.Strings above), and the
// tools that have succeeded, as a sorted JSON array. Neither is shown in
// a dry run's diff nor listed in the session's history.
func Persist(r *session.Registry) {
	session.Persist(r, known, session.Codec[merkle.Map[string]]{
		Marshal: func(m merkle.Map[string]) ([]byte, error) {
			out := make(map[string]string, m.Len())
			for k, v := range m.All() {
				out[k] = v
			}
			return json.Marshal(out) // map keys are sorted: equal maps, equal bytes
		},
		Text: bookkeeping[merkle.Map[string]],
		Unmarshal: func(b []byte) (merkle.Map[string], error) {
			var in map[string]string
			if err := json.Unmarshal(b, &in); err != nil {
				return merkle.Map[string]{}, err
			}
			keys := slices.Sorted(maps.Keys(in))
			vals := make([]string, len(keys))
			for i, k := range keys {
				vals[i] = in[k]
			}
			return merkle.FromSorted(keys, vals), nil
		},
		Store: func(m merkle.Map[string], prev *merkle.Map[string], put func(string, []byte)) (string, error) {
			if m.Len() <= inlineFiles {
				return "", nil
			}
			return m.Store(prev, merkle.Strings, put)
		},
		Load: func(hash string, get func(string) ([]byte, error)) (merkle.Map[string], error) {
			return merkle.LoadMap(hash, get, merkle.Strings)
		},
	})
	session.Persist(r, succeeded, session.Codec[immutable.Set[string]]{
		Marshal: func(s immutable.Set[string]) ([]byte, error) {
			items := s.Items()
			slices.Sort(items)
			return json.Marshal(items)
		},
		Unmarshal: func(b []byte) (immutable.Set[string], error) {
			var items []string
			err := json.Unmarshal(b, &items)
			return immutable.NewSet(nil, items...), err
		},
		Text: bookkeeping[immutable.Set[string]],
	})
}

// bookkeeping is the Text of the policies' memory: a dry run's diff and
// the session's history leave it out.
func bookkeeping[T any](T) string { return "" }
