package session

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
)

// Codec turns the values of a STATE slice into bytes and back, so that a
// session can be stored and loaded. Marshal must be deterministic: equal
// values give equal bytes, which is what lets a store keep one copy of
// them.
type Codec[T any] struct {
	Marshal   func(T) ([]byte, error)
	Unmarshal func([]byte) (T, error)
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
}

// Persist declares how the STATE slice k is stored. Every STATE slice that
// holds a value when a session is stored must be declared; declaring a
// slice twice panics.
func Persist[T any](r *Registry, k Key[T], c Codec[T]) {
	if _, ok := r.codecs[k.name]; ok {
		panic(fmt.Sprintf("session: slice %q is declared twice", k.name))
	}
	r.codecs[k.name] = codec{
		marshal:   func(v any) ([]byte, error) { return c.Marshal(v.(T)) },
		unmarshal: func(b []byte) (any, error) { return c.Unmarshal(b) },
	}
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
