// Package identity says who is calling: the subject and scopes of the
// client behind a request, carried in the request's context.
//
// Transports put it there; the lifecycle stages (package hooks) read it.
// The stdio transport's requests come from the local user, so main sets
// Local() on every stdio request context. The HTTP transport sets the
// subject and scopes of the request's bearer token once it has checked the
// token (a JWT's "sub", and its "scope" or "scp" claim), with
//
//	ctx = identity.With(ctx, identity.Identity{Subject: sub, Scopes: scopes})
//
// A static bearer token names nobody: its identity has no subject and no
// scopes, only the token's digest (Credential), to which the server binds
// the sessions the token starts. A request without an identity (no
// authentication) is anonymous: From returns the zero Identity and false.
package identity

import (
	"context"
	"os"
	"os/user"
	"slices"
)

// Identity is who a request comes from.
type Identity struct {
	// Subject names the client: the bearer token's subject on HTTP, the
	// local user's name on stdio.
	Subject string `json:"subject,omitempty"`
	// Scopes are the permissions the client was granted (the token's
	// scopes); none for the local user.
	Scopes []string `json:"scopes,omitempty"`
	// Credential identifies, for a credential that names no subject (a
	// static bearer token), that credential: a digest of it, never the
	// secret itself. It is empty when Subject is set.
	Credential string `json:"-"`
}

// Principal returns what the sessions a request starts are bound to: its
// subject, or else its credential; "" for a request with neither (no
// authentication), whose sessions anyone holding their handle may use.
func (id Identity) Principal() string {
	switch {
	case id.Subject != "":
		return "subject:" + id.Subject
	case id.Credential != "":
		return "credential:" + id.Credential
	}
	return ""
}

// HasScope reports whether the identity was granted scope.
func (id Identity) HasScope(scope string) bool {
	return slices.Contains(id.Scopes, scope)
}

// Anonymous reports whether the identity names nobody and no credential.
func (id Identity) Anonymous() bool {
	return id.Subject == "" && len(id.Scopes) == 0 && id.Credential == ""
}

type key struct{}

// With returns a copy of ctx carrying id.
func With(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the identity ctx carries, and whether it carries one.
func From(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(key{}).(Identity)
	return id, ok
}

// Local returns the identity of the user running the server, for requests
// that come over stdio: the user's login name as the subject (from the
// operating system, or $USER when it cannot say), and no scopes.
func Local() Identity {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return Identity{Subject: u.Username}
	}
	if name := os.Getenv("USER"); name != "" {
		return Identity{Subject: name}
	}
	return Identity{Subject: "local"}
}
