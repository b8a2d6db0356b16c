package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/sections"
	winkserver "github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/tools"
)

type noParams struct{}

// TestBearerIdentity: a call over HTTP runs as the identity of its
// request's bearer token: a JWT's subject and scopes; a static token names
// nobody, and carries only its credential. The server's tool filter sees it
// too.
func TestBearerIdentity(t *testing.T) {
	whoami := tools.New("whoami", "Say who is calling.", tools.Annotations{Title: "Who am I", ReadOnly: true},
		func(ctx *tools.Context, _ noParams) (tools.Result[any], error) {
			who, ok := identity.From(ctx)
			return tools.OK[any](fmt.Sprintf("%v %q %v %v", ok, who.Subject, who.Scopes, who.Credential != ""), nil), nil
		})
	secret := tools.New("secret", "Only for admins.", tools.Annotations{Title: "Secret", ReadOnly: true},
		func(*tools.Context, noParams) (tools.Result[any], error) { return tools.OK[any]("ok", nil), nil })
	tree, err := sections.NewTree(&sections.Section{Key: "id", Title: "Identity", Guidance: "Who calls.", Tools: []*tools.Tool{whoami, secret}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := winkserver.New(winkserver.Options{Name: "t", Version: "1", Tree: tree, Logger: slog.New(slog.DiscardHandler),
		ToolFilter: func(ctx context.Context, tl *tools.Tool, _ string) bool {
			who, _ := identity.From(ctx)
			return tl.Name() != "secret" || who.HasScope("admin")
		}})
	if err != nil {
		t.Fatal(err)
	}
	j := newJWKS(t)
	ht, err := NewHTTP(srv.MCP(), HTTPOptions{Logger: slog.New(slog.DiscardHandler), Security: Security{
		BearerTokens: []string{"static-token"},
		JWT:          &JWTOptions{JWKSURL: j.ts.URL, Issuer: "https://as.example", Audience: "https://mcp.example/mcp"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(ht.Handler())
	t.Cleanup(func() { ts.CloseClientConnections(); ht.Close(); ts.Close() })

	token := func(claims jwt.MapClaims) string {
		now := time.Now()
		base := jwt.MapClaims{"iss": "https://as.example", "aud": "https://mcp.example/mcp", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		for k, v := range claims {
			base[k] = v
		}
		return j.sign(t, base)
	}
	for _, tc := range []struct {
		name, token, want string
		listsSecret       bool
	}{
		{"jwt scope", token(jwt.MapClaims{"sub": "alice", "scope": "read admin"}), `true "alice" [read admin] false`, true},
		{"jwt scp", token(jwt.MapClaims{"sub": "bob", "scp": []string{"read"}}), `true "bob" [read] false`, false},
		{"static token", "static-token", `true "" [] true`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, ts.URL)
			c.header.Set("Authorization", "Bearer "+tc.token)
			c.initialize()
			if got := c.callText("whoami", map[string]any{}); got != tc.want {
				t.Errorf("whoami = %s, want %s", got, tc.want)
			}
			var names []string
			for _, m := range c.request("tools/list", map[string]any{}) {
				if !m.isResponse() {
					continue
				}
				var r struct{ Tools []struct{ Name string } }
				if err := json.Unmarshal(m.Result, &r); err != nil {
					t.Fatal(err)
				}
				for _, tl := range r.Tools {
					names = append(names, tl.Name)
				}
			}
			if slices.Contains(names, "secret") != tc.listsSecret {
				t.Errorf("tools/list = %v", names)
			}
		})
	}
}
