package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
)

// Codec turns the values of a STATE slice into bytes and back, so that a
// session can be stored and loaded. Marshal must be deterministic: equal
// values give equal bytes, which is what lets a store keep one copy of
// them.
type Codec[T any] struct {
	Marshal   func(T) ([]byte, error)
	Unmarshal func([]byte) (T, error)
	// Text, when set, is how a person reads a value of the slice: a dry
	// run shows a change of the slice as a line diff of it, and the
	// session's history lists the slice when it differs. A Text that is
	// "" for every value marks the slice as bookkeeping, never shown.
	// Without it, the value's indented JSON is shown.
	Text func(T) string
	// Store, when set, stores a value as blobs of its own, named by hash,
	// rather than as Marshal's bytes: a value that can hold thousands of
	// entries, such as a merkle.Map, whose storing should cost what
	// changed. It passes to put the blobs of v that prev, the value Store
	// last stored or Load loaded (nil for none), did not hold, and
	// returns the hash that names v, or "" to leave v to Marshal (a
	// small value, which travels inline). Load reads back the value
	// stored under hash, its blobs from get. Unmarshal still reads
	// Marshal's bytes, of a small value or one stored before Store was
	// set.
	Store func(v T, prev *T, put func(hash string, blob []byte)) (string, error)
	Load  func(hash string, get func(hash string) ([]byte, error)) (T, error)
}

// JSON returns the codec of encoding/json, for values that marshal to JSON
// and back to an equal value.
func JSON[T any]() Codec[T] {
	return Codec[T]{
		Marshal: func(v T) ([]byte, error) { return json.Marshal(v) },
		Unmarshal: func(b []byte) (T, error) {
			var v T
			err := json.Unmarshal(b, &v)
			return v, err
		},
	}
}

// codec is a Codec with its type erased.
type codec struct {
	marshal   func(any) ([]byte, error)
	unmarshal func([]byte) (any, error)
	text      func(any) string // nil: indented JSON
	store     func(v, prev any, put func(string, []byte)) (string, error)
	load      func(hash string, get func(string) ([]byte, error)) (any, error)
}

// Persist declares how the STATE slice k is stored. Every STATE slice that
// holds a value when a session is stored must be declared; declaring a
// slice twice panics.
func Persist[T any](r *Registry, k Key[T], c Codec[T]) {
	if _, ok := r.codecs[k.name]; ok {
		panic(fmt.Sprintf("session: slice %q is declared twice", k.name))
	}
	cd := codec{
		marshal:   func(v any) ([]byte, error) { return c.Marshal(v.(T)) },
		unmarshal: func(b []byte) (any, error) { return c.Unmarshal(b) },
	}
	if c.Text != nil {
		cd.text = func(v any) string { return c.Text(v.(T)) }
	}
	if c.Store != nil {
		cd.store = func(v, prev any, put func(string, []byte)) (string, error) {
			var p *T
			if t, ok := prev.(T); ok {
				p = &t
			}
			return c.Store(v.(T), p, put)
		}
		cd.load = func(hash string, get func(string) ([]byte, error)) (any, error) { return c.Load(hash, get) }
	}
	r.codecs[k.name] = cd
}

// Slices returns the values of the session's STATE slices by name. The map
// is a copy; the values are shared and must not be changed.
func (s *Session) Slices() map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.state)
}

// MarshalSlice returns v, a value of the STATE slice called name, in the
// form its codec (Persist) gives it.
func (s *Session) MarshalSlice(name string, v any) ([]byte, error) {
	c, ok := s.registry.codecs[name]
	if !ok {
		return nil, fmt.Errorf("session: slice %q has no codec; declare one with session.Persist", name)
	}
	b, err := c.marshal(v)
	if err != nil {
		return nil, fmt.Errorf("session: slice %q: %w", name, err)
	}
	return b, nil
}

// StoreSlice stores v, a value of the STATE slice called name whose codec
// has a Store, and returns the hash naming it (see Codec.Store; prev is
// the value last stored so, or nil); ok is false when the codec has no
// Store or leaves v to Marshal, and the slice is stored as MarshalSlice's
// bytes.
func (s *Session) StoreSlice(name string, v, prev any, put func(hash string, blob []byte)) (hash string, ok bool, err error) {
	c, found := s.registry.codecs[name]
	if !found || c.store == nil {
		return "", false, nil
	}
	if hash, err = c.store(v, prev, put); err != nil {
		return "", true, fmt.Errorf("session: slice %q: %w", name, err)
	}
	return hash, hash != "", nil
}

// LoadSlice sets the STATE slice called name to the value that its
// codec's Load reads from the blobs stored under hash.
func (s *Session) LoadSlice(name, hash string, get func(hash string) ([]byte, error)) error {
	c, ok := s.registry.codecs[name]
	if !ok || c.load == nil {
		return fmt.Errorf("session: slice %q is not stored as blobs of its own; declare a Codec with Store and Load", name)
	}
	v, err := c.load(hash, get)
	if err != nil {
		return fmt.Errorf("session: slice %q: %w", name, err)
	}
	s.mu.Lock()
	s.state[name] = v
	s.mu.Unlock()
	return nil
}

// SliceText returns how a person reads the value of the STATE slice name
// in values (see Codec.Text), ending with a newline; "" when values has
// none.
func (s *Session) SliceText(name string, values map[string]any) (string, error) {
	v, ok := values[name]
	if !ok {
		return "", nil
	}
	c, ok := s.registry.codecs[name]
	if ok && c.text != nil {
		if t := c.text(v); t != "" {
			return strings.TrimSuffix(t, "\n") + "\n", nil
		}
		return "", nil
	}
	b, err := s.MarshalSlice(name, v)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return "", fmt.Errorf("session: slice %q: %w", name, err)
	}
	return out.String() + "\n", nil
}

// SliceChange is a STATE slice whose value changed, as a person reads it
// before and after (SliceText).
type SliceChange struct {
	Name          string
	Before, After string
}

// ChangedSlices returns, sorted by name, the STATE slices whose text in
// after differs from their text in before (the values of Slices at two
// moments, such as Tx.Before and now). A slice that holds the same value
// in both is not read: a value of a slice never changes.
func (s *Session) ChangedSlices(before, after map[string]any) ([]SliceChange, error) {
	names := map[string]bool{}
	for n := range before {
		names[n] = true
	}
	for n := range after {
		names[n] = true
	}
	var out []SliceChange
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if b, a := before[name], after[name]; b != nil && a != nil && sameValue(b, a) {
			continue
		}
		x, err := s.SliceText(name, before)
		if err != nil {
			return nil, err
		}
		y, err := s.SliceText(name, after)
		if err != nil {
			return nil, err
		}
		if x != y {
			out = append(out, SliceChange{Name: name, Before: x, After: y})
		}
	}
	return out, nil
}

// sameValue reports whether a and b are the same comparable value (the
// same pointer, say).
func sameValue(a, b any) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // not comparable
		}
	}()
	return a == b
}

// UnmarshalSlice sets the STATE slice called name to the value its codec
// reads from data.
func (s *Session) UnmarshalSlice(name string, data []byte) error {
	c, ok := s.registry.codecs[name]
	if !ok {
		return fmt.Errorf("session: slice %q has no codec; declare one with session.Persist", name)
	}
	v, err := c.unmarshal(data)
	if err != nil {
		return fmt.Errorf("session: slice %q: %w", name, err)
	}
	s.mu.Lock()
	s.state[name] = v
	s.mu.Unlock()
	return nil
}

// Resources returns the session's per-session resources (those made with
// Provide) by name, in registration order.
func (s *Session) Resources() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, p := range s.registry.providers {
			if !p.perSession {
				continue
			}
			s.mu.RLock()
			v, ok := s.resources[p.name]
			s.mu.RUnlock()
			if ok && !yield(p.name, v) {
				return
			}
		}
	}
}
