package transport

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/identity"
)

// middleware wraps an http.Handler with one check.
type middleware func(http.Handler) http.Handler

// chain composes middleware; the first is the outermost.
func chain(mws ...middleware) middleware {
	return func(h http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
}

// Security configures the checks every request to the HTTP transport
// passes before it reaches MCP. Each is a small middleware of its own.
type Security struct {
	// AllowedOrigins lists the browser origins ("https://app.example",
	// scheme, host and port as the browser sends them) allowed to call the
	// server; "*" allows any. On a loopback listener a loopback origin is
	// always allowed. A request without Origin is not a browser's and is
	// allowed; any other Origin gets 403.
	AllowedOrigins []string
	// AllowedHosts lists the Host header names (without port) the server
	// answers to besides loopback names. On a loopback listener any other
	// Host gets 403 (DNS rebinding protection); on another listener the
	// list, when not empty, is enforced the same way.
	AllowedHosts []string
	// MaxBodyBytes bounds request bodies; larger ones get 413. Zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// BearerTokens are static tokens, any of which a request may present
	// as "Authorization: Bearer TOKEN". They are compared in constant time.
	BearerTokens []string
	// JWT, when set, accepts bearer tokens that are JWTs signed by a key of
	// an authorization server's JWKS, with its issuer and this server as
	// audience.
	JWT *JWTOptions
	// ResourceURL is the public URL of the MCP endpoint
	// ("https://mcp.example.com/mcp"), used as the resource in the OAuth
	// protected-resource metadata; by default it is derived from each
	// request.
	ResourceURL string
}

// AuthRequired reports whether requests must authenticate.
func (s Security) AuthRequired() bool { return len(s.BearerTokens) > 0 || s.JWT != nil }

// security is Security compiled into middleware.
type security struct {
	host, origin, auth, bodyLimit middleware
	metadata                      http.Handler // the protected-resource metadata document, with JWT
	verifiers                     []verifier   // of auth; none without authentication
}

// metadataPath is where the OAuth protected-resource metadata (RFC 9728)
// of the /mcp endpoint is served; metadataRoot is the root variant.
const (
	metadataRoot = "/.well-known/oauth-protected-resource"
	metadataPath = metadataRoot + "/mcp"
)

func (s Security) middleware(logger *slog.Logger) (*security, error) {
	out := &security{
		host:      hostCheck(s.AllowedHosts),
		origin:    originCheck(s.AllowedOrigins),
		bodyLimit: bodyLimit(s.MaxBodyBytes),
		auth:      func(h http.Handler) http.Handler { return h },
	}
	var verifiers []verifier
	if len(s.BearerTokens) > 0 {
		verifiers = append(verifiers, staticTokens(s.BearerTokens))
	}
	var metadata func(r *http.Request) string
	if s.JWT != nil {
		v, err := newJWTVerifier(context.Background(), *s.JWT)
		if err != nil {
			return nil, err
		}
		verifiers = append(verifiers, v)
		metadata = func(r *http.Request) string { return metadataURL(s.ResourceURL, r) }
		out.metadata = protectedResourceMetadata(s.ResourceURL, s.JWT.authorizationServers(), s.JWT.Scopes)
	}
	if len(verifiers) > 0 {
		out.auth = bearerAuth(verifiers, metadata, logger)
	}
	out.verifiers = verifiers
	return out, nil
}

// isLoopback reports whether host (a name or address, with or without
// port) is a loopback name or address.
func isLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// onLoopback reports whether the request arrived on a loopback listener.
func onLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && addr != nil && isLoopback(addr.String())
}

// forbidden writes 403 with a JSON-RPC error body without id.
func forbidden(w http.ResponseWriter, message string) {
	writeJSONError(w, http.StatusForbidden, nil, mcp.INVALID_REQUEST, message)
}

// hostCheck rejects, with 403, a request whose Host header is not a
// loopback name when it arrived on a loopback listener (a DNS-rebinding
// attack), or is not in allowed when the list is not empty. Names in allowed
// are compared without port and case.
func hostCheck(allowed []string) middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			ok := isLoopback(host) || slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, host) })
			if !ok && (onLoopback(r) || len(allowed) > 0) {
				forbidden(w, fmt.Sprintf("Forbidden: Host %q is not allowed", r.Host))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// CheckHost is the Host check of /mcp for a handler served on a listener
// of its own (the console of the console command): on a loopback listener,
// a request whose Host is not a loopback name gets 403 (a DNS-rebinding
// attack).
func CheckHost(next http.Handler) http.Handler { return hostCheck(nil)(next) }

// corsHeaders are the request headers a browser client may send.
const corsHeaders = "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"

// originCheck rejects, with 403, a request whose Origin is not allowed: not
// in allowed ("*" allows any), and not a loopback origin on a loopback
// listener. A request without Origin passes. For allowed origins it adds
// the CORS headers and answers preflight requests.
func originCheck(allowed []string) middleware {
	anyOrigin := slices.Contains(allowed, "*")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin == "" {
				next.ServeHTTP(w, r)
				return
			}
			ok := anyOrigin || slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimRight(a, "/"), origin) })
			if !ok && onLoopback(r) {
				if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopback(u.Host) {
					ok = true
				}
			}
			if !ok {
				forbidden(w, fmt.Sprintf("Forbidden: Origin %q is not allowed", origin))
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
				h.Set("Access-Control-Allow-Headers", corsHeaders)
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bodyLimit answers 413 to a request whose body is larger than n bytes:
// at once when its Content-Length says so, or when the handler reads past
// the limit.
func bodyLimit(n int64) middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				writeJSONError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST,
					fmt.Sprintf("Request Entity Too Large: the limit is %d bytes", n))
				return
			}
			if r.Body != nil {
				r.Body = http.MaxBytesReader(w, r.Body, n)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// A verifier checks a bearer token and returns whom it belongs to: for a
// token that names nobody, such as a static token, an Identity with only
// its Credential.
// bearerAuth puts that identity in the request's context (identity.With),
// where the server's authorisation reads it.
type verifier func(ctx context.Context, token string) (identity.Identity, error)

// errInvalidToken is returned by verifiers for a token they do not accept.
var errInvalidToken = errors.New("invalid token")

// staticTokens accepts exactly the given tokens. Tokens are compared by
// their SHA-256 digests with crypto/subtle, and every token is compared, so
// the time taken tells nothing about a token's length or content. A token
// names nobody; its identity carries half of its digest as the credential
// that the sessions it starts are bound to.
func staticTokens(tokens []string) verifier {
	var digests [][sha256.Size]byte
	for _, t := range tokens {
		if t != "" {
			digests = append(digests, sha256.Sum256([]byte(t)))
		}
	}
	return func(_ context.Context, token string) (identity.Identity, error) {
		got := sha256.Sum256([]byte(token))
		match := 0
		for _, want := range digests {
			match |= subtle.ConstantTimeCompare(got[:], want[:])
		}
		if match != 1 {
			return identity.Identity{}, errInvalidToken
		}
		return identity.Identity{Credential: hex.EncodeToString(got[:sha256.Size/2])}, nil
	}
}

// bearerAuth lets through only requests with "Authorization: Bearer TOKEN"
// whose token one of vs accepts, with the token's identity in the
// request's context; others get 401 with a WWW-Authenticate challenge,
// which names the protected-resource metadata when metadata is set. CORS
// preflight requests, which browsers send without credentials, are
// answered by originCheck before they get here.
func bearerAuth(vs []verifier, metadata func(r *http.Request) string, logger *slog.Logger) middleware {
	challenge := func(w http.ResponseWriter, r *http.Request, invalid bool) {
		c := `Bearer realm="wink-mcp"`
		if metadata != nil {
			c += fmt.Sprintf(", resource_metadata=%q", metadata(r))
		}
		msg := "Unauthorized: a bearer token is required"
		if invalid {
			c += `, error="invalid_token"`
			msg = "Unauthorized: invalid bearer token"
		}
		w.Header().Set("WWW-Authenticate", c)
		writeJSONError(w, http.StatusUnauthorized, nil, mcp.INVALID_REQUEST, msg)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
			token = strings.TrimSpace(token)
			if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
				challenge(w, r, false)
				return
			}
			var errs []error
			for _, v := range vs {
				who, err := v(r.Context(), token)
				if err == nil {
					if !who.Anonymous() {
						r = r.WithContext(identity.With(r.Context(), who))
					}
					next.ServeHTTP(w, r)
					return
				}
				errs = append(errs, err)
			}
			logger.Debug("rejected a bearer token", "err", errors.Join(errs...), "remote", r.RemoteAddr)
			challenge(w, r, true)
		})
	}
}

// metadataURL returns the URL of the protected-resource metadata of the
// resource (the MCP endpoint): configured, or derived from the request.
func metadataURL(resource string, r *http.Request) string {
	u, err := url.Parse(resourceURL(resource, r))
	if err != nil {
		return metadataPath
	}
	return u.Scheme + "://" + u.Host + metadataRoot + u.Path
}

// resourceURL returns the configured resource URL, or the /mcp endpoint's
// URL as the request reached it.
func resourceURL(resource string, r *http.Request) string {
	if resource != "" {
		return resource
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/mcp"
}

// protectedResourceMetadata serves the OAuth 2.0 protected-resource
// metadata document (RFC 9728) that the MCP authorisation spec asks of a
// server whose tokens come from an authorization server.
func protectedResourceMetadata(resource string, authServers, scopes []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		doc := map[string]any{
			"resource":                 resourceURL(resource, r),
			"authorization_servers":    authServers,
			"bearer_methods_supported": []string{"header"},
			"resource_name":            "wink-mcp",
		}
		if len(scopes) > 0 {
			doc["scopes_supported"] = scopes
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		writeJSON(w, http.StatusOK, doc)
	})
}
