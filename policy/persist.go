package policy

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/benbjohnson/immutable"

	"github.com/wink-mcp/wink-mcp/session"
)

// Persist declares how the policies' memory is stored: the files the
// read-before-write policy knows, as a JSON object from path to version,
// and the tools that have succeeded, as a sorted JSON array. Neither is
// shown in a dry run's diff nor listed in the session's history.
func Persist(r *session.Registry) {
	session.Persist(r, known, session.Codec[*immutable.Map[string, string]]{
		Marshal: func(m *immutable.Map[string, string]) ([]byte, error) {
			out := make(map[string]string, m.Len())
			for itr := m.Iterator(); !itr.Done(); {
				k, v, _ := itr.Next()
				out[k] = v
			}
			return json.Marshal(out) // map keys are sorted: equal maps, equal bytes
		},
		Text: bookkeeping[*immutable.Map[string, string]],
		Unmarshal: func(b []byte) (*immutable.Map[string, string], error) {
			var in map[string]string
			if err := json.Unmarshal(b, &in); err != nil {
				return nil, err
			}
			bld := immutable.NewMapBuilder[string, string](nil)
			for _, k := range slices.Sorted(maps.Keys(in)) {
				bld.Set(k, in[k])
			}
			return bld.Map(), nil
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
