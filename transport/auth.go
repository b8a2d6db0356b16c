package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/wink-mcp/wink-mcp/identity"
)

// JWTOptions configures the validation of JWT bearer tokens.
type JWTOptions struct {
	// JWKSURL is where the authorization server publishes its signing
	// keys (a JSON Web Key Set).
	JWKSURL string
	// Issuer is the required "iss" claim.
	Issuer string
	// Audience is the required "aud" claim: this server's resource URL or
	// identifier.
	Audience string
	// AuthorizationServers are listed in the protected-resource metadata;
	// default [Issuer].
	AuthorizationServers []string
	// Scopes are listed as scopes_supported in the metadata.
	Scopes []string
	// Leeway is the clock skew allowed for exp, nbf and iat; default 30s.
	Leeway time.Duration
}

func (o JWTOptions) authorizationServers() []string {
	if len(o.AuthorizationServers) > 0 {
		return o.AuthorizationServers
	}
	return []string{o.Issuer}
}

// jwtAlgorithms are the signing algorithms accepted: asymmetric only, so
// that a public key can never be used as an HMAC secret.
var jwtAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// newJWTVerifier returns a verifier of JWT access tokens: signed with a
// key from the JWKS at JWKSURL (fetched now, refreshed hourly and when a
// token names an unknown key), with the given issuer and audience, an
// expiry, and an asymmetric algorithm. A token's identity is its subject
// ("sub") and scopes: the space-separated "scope" claim (RFC 8693, RFC
// 9068) or the "scp" claim, a list or a space-separated string. It uses
// github.com/golang-jwt/jwt/v5 for parsing and validation and
// github.com/MicahParks/keyfunc/v3 for the key set.
func newJWTVerifier(ctx context.Context, o JWTOptions) (verifier, error) {
	if o.JWKSURL == "" || o.Issuer == "" || o.Audience == "" {
		return nil, errors.New("transport: JWT validation needs a JWKS URL, an issuer and an audience")
	}
	k, err := keyfunc.NewDefaultCtx(ctx, []string{o.JWKSURL})
	if err != nil {
		return nil, fmt.Errorf("transport: JWKS %s: %w", o.JWKSURL, err)
	}
	if o.Leeway <= 0 {
		o.Leeway = 30 * time.Second
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods(jwtAlgorithms),
		jwt.WithIssuer(o.Issuer),
		jwt.WithAudience(o.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(o.Leeway),
	)
	return func(_ context.Context, token string) (identity.Identity, error) {
		claims := jwt.MapClaims{}
		if _, err := parser.ParseWithClaims(token, claims, k.Keyfunc); err != nil {
			return identity.Identity{}, fmt.Errorf("%w: %w", errInvalidToken, err)
		}
		var who identity.Identity
		who.Subject, _ = claims["sub"].(string)
		for _, key := range []string{"scope", "scp"} {
			switch s := claims[key].(type) {
			case string:
				who.Scopes = append(who.Scopes, strings.Fields(s)...)
			case []any:
				for _, x := range s {
					if x, ok := x.(string); ok && x != "" {
						who.Scopes = append(who.Scopes, x)
					}
				}
			}
		}
		return who, nil
	}, nil
}
