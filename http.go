package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"

	"github.com/wink-mcp/wink-mcp/config"
	"github.com/wink-mcp/wink-mcp/console"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/transport"
)

// applyHTTPFlags lets the HTTP flags given on the command line override the
// configuration's http keys.
func applyHTTPFlags(f *flags, cfg *config.Config) {
	h := &cfg.HTTP
	if f.set["http"] {
		h.Addr = f.http
	}
	if f.set["insecure"] {
		h.Insecure = f.insecure
	}
	if f.set["bearer-token-file"] {
		h.Auth.BearerTokenFile = f.bearerTokenFile
	}
	if f.set["jwks-url"] || f.set["jwt-issuer"] || f.set["jwt-audience"] {
		if h.Auth.JWT == nil {
			h.Auth.JWT = &config.JWT{}
		}
		if f.set["jwks-url"] {
			h.Auth.JWT.JWKSURL = f.jwksURL
		}
		if f.set["jwt-issuer"] {
			h.Auth.JWT.Issuer = f.jwtIssuer
		}
		if f.set["jwt-audience"] {
			h.Auth.JWT.Audience = f.jwtAudience
		}
	}
	if f.set["allowed-origins"] {
		h.AllowedOrigins = splitList(f.allowedOrigins)
	}
	if f.set["allowed-hosts"] {
		h.AllowedHosts = splitList(f.allowedHosts)
	}
	if f.set["max-body-bytes"] {
		h.MaxBodyBytes = f.maxBodyBytes
	}
	if f.set["session-ttl"] {
		h.SessionTTL = f.sessionTTL
	}
	if f.set["read-timeout"] {
		h.ReadTimeout = f.readTimeout
	}
	if f.set["idle-timeout"] {
		h.IdleTimeout = f.idleTimeout
	}
	if f.set["max-connections"] {
		h.MaxConnections = f.maxConnections
	}
	if f.set["max-sessions-per-principal"] {
		h.MaxSessionsPerPrincipal = f.maxSessions
	}
}

// splitList splits a comma- or space-separated list, dropping empty items.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// httpSecurity turns the configuration into the transport's security
// settings, reading the bearer tokens from the file and the environment.
func httpSecurity(h config.HTTP, getenv func(string) string) (transport.Security, error) {
	sec := transport.Security{
		AllowedOrigins: h.AllowedOrigins,
		AllowedHosts:   h.AllowedHosts,
		MaxBodyBytes:   h.MaxBodyBytes,
		ResourceURL:    h.PublicURL,
	}
	if h.Auth.BearerTokenFile != "" {
		tokens, err := readTokens(h.Auth.BearerTokenFile)
		if err != nil {
			return sec, err
		}
		if len(tokens) == 0 {
			return sec, fmt.Errorf("bearer token file %s holds no token", h.Auth.BearerTokenFile)
		}
		sec.BearerTokens = append(sec.BearerTokens, tokens...)
	}
	sec.BearerTokens = append(sec.BearerTokens, splitList(getenv(bearerTokensEnv))...)
	if j := h.Auth.JWT; j != nil {
		if j.JWKSURL == "" || j.Issuer == "" || j.Audience == "" {
			return sec, errors.New("JWT validation needs --jwks-url, --jwt-issuer and --jwt-audience (or http.auth.jwt's keys)")
		}
		sec.JWT = &transport.JWTOptions{JWKSURL: j.JWKSURL, Issuer: j.Issuer, Audience: j.Audience, Scopes: j.Scopes}
	}
	return sec, nil
}

// readTokens reads a token file: one token per line; blank lines and lines
// starting with # are ignored.
func readTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bearer token file: %w", err)
	}
	defer f.Close()
	var tokens []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tokens = append(tokens, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bearer token file: %w", err)
	}
	return tokens, nil
}

// loopbackAddr reports whether a listen address binds only loopback
// interfaces: localhost or a loopback IP. An empty host binds every
// interface.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// checkExposure decides whether the server may listen on addr: a loopback
// address always, another one only with authentication or, with a warning,
// when insecure is set.
func checkExposure(addr string, auth, insecure bool) (warn bool, err error) {
	if loopbackAddr(addr) || auth {
		return false, nil
	}
	if !insecure {
		return false, fmt.Errorf("--http %s is not a loopback address: set a bearer token (--bearer-token-file, $%s) or JWT validation (--jwks-url), or pass --insecure", addr, bearerTokensEnv)
	}
	return true, nil
}

// serveHTTP serves srv over HTTP until ctx is cancelled, then drains. It
// returns the exit code.
func serveHTTP(ctx context.Context, a *app, logger *slog.Logger, stderr io.Writer) int {
	srv, h := a.srv, a.cfg.HTTP
	sec, err := httpSecurity(h, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 2
	}
	warn, err := checkExposure(h.Addr, sec.AuthRequired(), h.Insecure)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 2
	}
	if warn {
		logger.Warn("serving without authentication on a non-loopback address (--insecure)", "addr", h.Addr)
	}
	// The console checks tokens as /mcp does; without authentication, it
	// takes a token made at startup, and is served on loopback only.
	var ht *transport.HTTP
	verify := func(ctx context.Context, token string) (identity.Identity, error) { return ht.Verify(ctx, token) }
	var consoleToken string
	if !sec.AuthRequired() {
		consoleToken, verify = startupToken(identity.Identity{})
	}
	pages := map[string]http.Handler{}
	if sec.AuthRequired() || !warn {
		c, err := newConsole(a, verify, logger)
		if err != nil {
			fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
			return 1
		}
		pages[console.Path] = c
	}
	ht, err = transport.NewHTTP(srv.MCP(), transport.HTTPOptions{
		Logger:         logger,
		SessionTTL:     h.SessionTTL,
		DrainTimeout:   h.DrainTimeout,
		ReadTimeout:    h.ReadTimeout,
		IdleTimeout:    h.IdleTimeout,
		MaxConnections: h.MaxConnections,
		SSERetry:       h.SSERetry,
		BasePath:       h.BasePath,
		Security:       sec,
		Handlers:       srv.Handlers(),
		Pages:          pages,
	})
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		ht.Close()
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 1
	}
	logger.Info("serving MCP over HTTP", "version", moduleVersion(), "tools", len(srv.Tools()),
		"addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "auth", sec.AuthRequired())
	switch {
	case len(pages) == 0:
		logger.Warn("no console: it needs authentication on a non-loopback address")
	case consoleToken != "":
		logger.Info("the console", "url", "http://"+ln.Addr().String()+console.Path+"?token="+consoleToken)
	default:
		logger.Info("the console", "url", "http://"+ln.Addr().String()+console.Path+"?token=TOKEN (a bearer token of /mcp)")
	}
	if err := ht.Serve(ctx, ln); err != nil {
		logger.Error("HTTP transport failed", "err", err)
		return 1
	}
	return 0
}
