package transport

import (
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// maxSubscriptions bounds the resource subscriptions of one session.
const maxSubscriptions = 256

// subscriptions records a client session's resource subscriptions
// (resources/subscribe), so that the server can tell the client when a
// subscribed resource may have changed. It implements the methods of
// server.SessionWithResourceSubscriptions.
type subscriptions struct {
	mu   sync.Mutex
	uris []string
}

// SubscribeToResource records a resource subscription.
func (s *subscriptions) SubscribeToResource(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.uris, uri) && len(s.uris) < maxSubscriptions {
		s.uris = append(s.uris, uri)
	}
}

// UnsubscribeFromResource removes a resource subscription.
func (s *subscriptions) UnsubscribeFromResource(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uris = slices.DeleteFunc(s.uris, func(u string) bool { return u == uri })
}

// SubscribedResources returns the subscribed URIs.
func (s *subscriptions) SubscribedResources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.uris)
}

// IsSubscribedToResource reports whether uri is subscribed.
func (s *subscriptions) IsSubscribedToResource(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.uris, uri)
}

var _ server.SessionWithResourceSubscriptions = (*stdioSession)(nil)
