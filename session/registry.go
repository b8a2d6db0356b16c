package session

import (
	"fmt"
	"reflect"
	"time"

	"golang.org/x/sync/semaphore"
)

// Registry holds what every session of a server shares: reducers, codecs
// and resource providers. Build it at startup,
// before the first session; it must not change afterwards.
type Registry struct {
	reducers  map[reflect.Type][]reducer
	providers []provider
	perCall   map[string]func(*Session) (any, error)
	codecs    map[string]codec
}

type reducer struct {
	slice string
	fn    func(old any, ok bool, ev any) (any, error)
}

type provider struct {
	name       string
	perSession bool
	shared     any
	factory    func(*Session) (any, error)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		reducers: map[reflect.Type][]reducer{},
		perCall:  map[string]func(*Session) (any, error){},
		codecs:   map[string]codec{},
	}
}

// On registers a reducer: every event of type E dispatched to a session
// replaces the STATE slice k with fn's result. fn gets the slice's current
// value and whether it has one. It must not modify the old value.
func On[E, T any](r *Registry, k Key[T], fn func(old T, ok bool, ev E) (T, error)) {
	t := reflect.TypeFor[E]()
	r.reducers[t] = append(r.reducers[t], reducer{
		slice: k.name,
		fn: func(old any, ok bool, ev any) (any, error) {
			var cur T
			if ok {
				cur = old.(T)
			}
			return fn(cur, ok, ev.(E))
		},
	})
}

// ResourceKey names a typed resource that handlers look up by key instead of
// through new fields on their context.
type ResourceKey[T any] struct{ name string }

// NewResourceKey returns the key of the resource called name.
func NewResourceKey[T any](name string) ResourceKey[T] { return ResourceKey[T]{name: name} }

// Name returns the resource's name.
func (k ResourceKey[T]) Name() string { return k.name }

// Provide registers a per-session resource: factory runs once for each new
// session, in registration order. A resource that implements Snapshotter
// joins every transaction of its session; one that implements io.Closer is
// closed with the session.
func Provide[T any](r *Registry, k ResourceKey[T], factory func(*Session) (T, error)) {
	r.providers = append(r.providers, provider{
		name:       k.name,
		perSession: true,
		factory:    func(s *Session) (any, error) { return factory(s) },
	})
}

// Share registers a resource shared by every session of the server. A shared
// resource that implements Snapshotter joins every transaction too.
func Share[T any](r *Registry, k ResourceKey[T], v T) {
	r.providers = append(r.providers, provider{name: k.name, shared: v})
}

// ProvidePerCall registers a per-call resource: factory runs the first time
// a call's transaction asks for it (CallResource), and the value lives until
// the transaction ends, when it is closed if it implements io.Closer.
func ProvidePerCall[T any](r *Registry, k ResourceKey[T], factory func(*Session) (T, error)) {
	r.perCall[k.name] = func(s *Session) (any, error) { return factory(s) }
}

// NewSession returns a new session called id with its per-session resources
// created.
func (r *Registry) NewSession(id string) (*Session, error) {
	s := &Session{
		id:        id,
		registry:  r,
		created:   time.Now(),
		call:      semaphore.NewWeighted(whole),
		state:     map[string]any{},
		resources: map[string]any{},
	}
	for _, p := range r.providers {
		v := p.shared
		if p.perSession {
			var err error
			if v, err = p.factory(s); err != nil {
				_ = s.Close()
				return nil, fmt.Errorf("session %s: resource %q: %w", id, p.name, err)
			}
		}
		s.resources[p.name] = v
		if sn, ok := v.(Snapshotter); ok {
			s.snapshot = append(s.snapshot, sn)
		}
	}
	return s, nil
}
