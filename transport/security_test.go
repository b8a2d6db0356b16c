package transport

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ok is the handler behind the middleware under test; it records that it
// ran.
type okHandler struct{ ran bool }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.ran = true
	if _, err := io.ReadAll(r.Body); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// serve runs mw around a recording handler for one request that arrived on
// a listener with the given local address, and returns the response and
// whether the handler ran.
func serve(mw middleware, local string, r *http.Request) (*httptest.ResponseRecorder, bool) {
	ip, port, _ := net.SplitHostPort(local)
	addr := &net.TCPAddr{IP: net.ParseIP(ip)}
	_ = port
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
	h := &okHandler{}
	w := httptest.NewRecorder()
	mw(h).ServeHTTP(w, r)
	return w, h.ran
}

func TestHostCheck(t *testing.T) {
	tests := []struct {
		name, local, host string
		allowed           []string
		want              int
	}{
		{"loopback host on loopback", "127.0.0.1:1", "127.0.0.1:8080", nil, 200},
		{"localhost on loopback", "127.0.0.1:1", "localhost:8080", nil, 200},
		{"ipv6 loopback", "[::1]:1", "[::1]:8080", nil, 200},
		{"rebinding: foreign host on loopback", "127.0.0.1:1", "evil.example.com", nil, 403},
		{"rebinding with port", "127.0.0.1:1", "evil.example.com:8080", nil, 403},
		{"allowed host on loopback", "127.0.0.1:1", "mcp.example.com", []string{"MCP.example.com"}, 200},
		{"any host on a public listener without a list", "10.1.2.3:1", "whatever.example", nil, 200},
		{"listed host on a public listener", "10.1.2.3:1", "mcp.example.com:443", []string{"mcp.example.com"}, 200},
		{"unlisted host on a public listener", "10.1.2.3:1", "evil.example.com", []string{"mcp.example.com"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Host = tt.host
			w, ran := serve(hostCheck(tt.allowed), tt.local, r)
			if w.Code != tt.want || ran != (tt.want == 200) {
				t.Errorf("status %d (handler ran: %v), want %d", w.Code, ran, tt.want)
			}
		})
	}
}

func TestOriginCheck(t *testing.T) {
	tests := []struct {
		name, local, origin string
		allowed             []string
		want                int
	}{
		{"no origin", "127.0.0.1:1", "", nil, 200},
		{"loopback origin on loopback", "127.0.0.1:1", "http://localhost:3000", nil, 200},
		{"loopback ip origin on loopback", "127.0.0.1:1", "http://127.0.0.1:5173", nil, 200},
		{"foreign origin", "127.0.0.1:1", "https://evil.example", nil, 403},
		{"null origin", "127.0.0.1:1", "null", nil, 403},
		{"listed origin", "127.0.0.1:1", "https://app.example", []string{"https://app.example/"}, 200},
		{"other port of a listed origin", "127.0.0.1:1", "https://app.example:8443", []string{"https://app.example"}, 403},
		{"loopback origin on a public listener", "10.1.2.3:1", "http://localhost:3000", nil, 403},
		{"wildcard", "10.1.2.3:1", "https://any.example", []string{"*"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w, ran := serve(originCheck(tt.allowed), tt.local, r)
			if w.Code != tt.want || ran != (tt.want == 200) {
				t.Errorf("status %d (handler ran: %v), want %d", w.Code, ran, tt.want)
			}
			if tt.want == 200 && tt.origin != "" && w.Header().Get("Access-Control-Allow-Origin") != tt.origin {
				t.Errorf("no CORS header for an allowed origin: %v", w.Header())
			}
		})
	}
	t.Run("preflight", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodOptions, "/mcp", nil)
		r.Header.Set("Origin", "https://app.example")
		r.Header.Set("Access-Control-Request-Method", "POST")
		w, ran := serve(originCheck([]string{"https://app.example"}), "127.0.0.1:1", r)
		if w.Code != http.StatusNoContent || ran || !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") {
			t.Errorf("preflight: %d, ran %v, headers %v", w.Code, ran, w.Header())
		}
	})
}

func TestBodyLimit(t *testing.T) {
	mw := bodyLimit(10)
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("0123456789"))
	if w, ran := serve(mw, "127.0.0.1:1", r); w.Code != 200 || !ran {
		t.Errorf("body at the limit: %d", w.Code)
	}
	r = httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("0123456789x"))
	if w, ran := serve(mw, "127.0.0.1:1", r); w.Code != http.StatusRequestEntityTooLarge || ran {
		t.Errorf("declared length over the limit: %d (handler ran: %v)", w.Code, ran)
	}
	// A body without a declared length is cut off while it is read.
	r = httptest.NewRequest(http.MethodPost, "/mcp", io.MultiReader(strings.NewReader("0123456789"), strings.NewReader("x")))
	r.ContentLength = -1
	if w, _ := serve(mw, "127.0.0.1:1", r); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("undeclared length over the limit: %d", w.Code)
	}
}

func TestStaticTokens(t *testing.T) {
	v := staticTokens([]string{"alpha-token", "", "beta"})
	for tok, want := range map[string]bool{"alpha-token": true, "beta": true, "": false, "alpha": false, "alpha-token ": false, "BETA": false} {
		if _, err := v(context.Background(), tok); (err == nil) != want {
			t.Errorf("token %q accepted: %v, want %v", tok, err == nil, want)
		}
	}
}

func TestBearerAuth(t *testing.T) {
	mw := bearerAuth([]verifier{staticTokens([]string{"s3cret"})}, nil, slog.New(slog.DiscardHandler))
	for _, tt := range []struct {
		name, header string
		want         int
		invalid      bool
	}{
		{"missing", "", 401, false},
		{"other scheme", "Basic czNjcmV0", 401, false},
		{"wrong token", "Bearer nope", 401, true},
		{"right token", "Bearer s3cret", 200, false},
		{"scheme is case-insensitive", "bearer s3cret", 200, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			w, ran := serve(mw, "127.0.0.1:1", r)
			if w.Code != tt.want || ran != (tt.want == 200) {
				t.Fatalf("status %d (handler ran: %v), want %d", w.Code, ran, tt.want)
			}
			ch := w.Header().Get("WWW-Authenticate")
			if tt.want == 401 && (!strings.HasPrefix(ch, `Bearer realm="wink-mcp"`) || strings.Contains(ch, "invalid_token") != tt.invalid) {
				t.Errorf("WWW-Authenticate: %q", ch)
			}
		})
	}
}

// jwks is a key pair and the JWKS that publishes its public half, made in
// the test.
type jwks struct {
	key *rsa.PrivateKey
	kid string
	ts  *httptest.Server
}

func newJWKS(t testing.TB) *jwks {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	j := &jwks{key: key, kid: "test-key"}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": j.kid, "use": "sig", "alg": "RS256",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	j.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	}))
	t.Cleanup(j.ts.Close)
	return j
}

func (j *jwks) sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = j.kid
	s, err := tok.SignedString(j.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJWTVerifier(t *testing.T) {
	j := newJWKS(t)
	v, err := newJWTVerifier(t.Context(), JWTOptions{JWKSURL: j.ts.URL, Issuer: "https://as.example", Audience: "https://mcp.example/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := jwt.MapClaims{"iss": "https://as.example", "aud": "https://mcp.example/mcp", "sub": "u", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	with := func(k string, val any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	if _, err := v(t.Context(), j.sign(t, good)); err != nil {
		t.Errorf("valid token rejected: %v", err)
	}
	for name, claims := range map[string]jwt.MapClaims{
		"wrong audience": with("aud", "https://other.example/mcp"),
		"wrong issuer":   with("iss", "https://evil.example"),
		"expired":        with("exp", now.Add(-time.Hour).Unix()),
		"no expiry":      with("exp", nil),
		"not yet valid":  with("nbf", now.Add(time.Hour).Unix()),
	} {
		if _, err := v(t.Context(), j.sign(t, claims)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Signed by a key the JWKS does not hold.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, good)
	tok.Header["kid"] = j.kid
	forged, _ := tok.SignedString(other)
	if _, err := v(t.Context(), forged); err == nil {
		t.Error("token signed by another key accepted")
	}
	// HMAC with the public key as secret (algorithm confusion).
	hm := jwt.NewWithClaims(jwt.SigningMethodHS256, good)
	hm.Header["kid"] = j.kid
	confused, _ := hm.SignedString(j.key.PublicKey.N.Bytes())
	if _, err := v(t.Context(), confused); err == nil {
		t.Error("HS256 token accepted")
	}
	if _, err := v(t.Context(), "not.a.jwt"); err == nil {
		t.Error("garbage accepted")
	}
}

// TestRejectedRequestsChangeNothing sends each kind of bad request to a
// server with every check on, and checks the status and that no session
// and no plan came of it.
func TestRejectedRequestsChangeNothing(t *testing.T) {
	j := newJWKS(t)
	f := newHTTPFixture(t, HTTPOptions{Security: Security{
		BearerTokens: []string{"static-token"},
		MaxBodyBytes: 4096,
		JWT:          &JWTOptions{JWKSURL: j.ts.URL, Issuer: "https://as.example", Audience: "https://mcp.example/mcp"},
	}})
	good := newClient(t, f.url)
	good.header.Set("Authorization", "Bearer static-token")
	good.initialize()
	good.callText("planning_read_plan", map[string]any{}) // the server's state for the session exists from here
	sessions, transportSessions := f.srv.Sessions().Len(), f.ht.sessionCount()

	setup := func(objective string) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": "planning_setup_plan", "arguments": map[string]any{"objective": objective}}}
	}
	send := func(body any, edit func(r *http.Request)) *http.Response {
		data, _ := json.Marshal(body)
		r, _ := http.NewRequest(http.MethodPost, f.url+"/mcp", bytes.NewReader(data))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Session-Id", good.sid)
		r.Header.Set("Authorization", "Bearer static-token")
		edit(r)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	cases := []struct {
		name string
		body any
		edit func(r *http.Request)
		want int
	}{
		{"foreign origin", setup("origin"), func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, 403},
		{"rebinding host", setup("host"), func(r *http.Request) { r.Host = "evil.example.com" }, 403},
		{"body over the limit", setup(strings.Repeat("x", 5000)), func(*http.Request) {}, 413},
		{"no token", setup("no token"), func(r *http.Request) { r.Header.Del("Authorization") }, 401},
		{"wrong token", setup("wrong token"), func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401},
		{"expired jwt", setup("jwt"), func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+j.sign(t, jwt.MapClaims{"iss": "https://as.example", "aud": "https://mcp.example/mcp", "exp": time.Now().Add(-time.Hour).Unix()}))
		}, 401},
		{"new session without a token", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}}},
			func(r *http.Request) { r.Header.Del("Authorization"); r.Header.Del("Mcp-Session-Id") }, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := send(tc.body, tc.edit)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
				t.Errorf("WWW-Authenticate: %q", resp.Header.Get("WWW-Authenticate"))
			}
			if got := good.callText("planning_read_plan", map[string]any{}); !strings.Contains(got, "No plan") {
				t.Errorf("the rejected request changed the plan: %q", got)
			}
			if f.srv.Sessions().Len() != sessions || f.ht.sessionCount() != transportSessions {
				t.Errorf("sessions changed: server %d→%d, transport %d→%d", sessions, f.srv.Sessions().Len(), transportSessions, f.ht.sessionCount())
			}
		})
	}

	// A valid JWT works, and the metadata document names the authorization server.
	jc := newClient(t, f.url)
	jc.header.Set("Authorization", "Bearer "+j.sign(t, jwt.MapClaims{"iss": "https://as.example", "aud": "https://mcp.example/mcp", "exp": time.Now().Add(time.Hour).Unix()}))
	jc.initialize()
	if got := jc.callText("planning_setup_plan", map[string]any{"objective": "with jwt"}); !strings.Contains(got, "with jwt") {
		t.Errorf("JWT client: %q", got)
	}
	resp, err := http.Get(f.url + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&prm)
	resp.Body.Close()
	if resp.StatusCode != 200 || prm.Resource != f.url+"/mcp" || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != "https://as.example" {
		t.Errorf("metadata: %d %+v", resp.StatusCode, prm)
	}
	// /healthz needs no token.
	resp, err = http.Get(f.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}
