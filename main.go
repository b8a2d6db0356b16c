// Command wink-mcp is an MCP server that gives LLM agents a safe,
// predictable set of tools. Tools live on sections; every call is validated
// against its schema, checked by policies and run in a transaction that a
// failure rolls back whole.
//
// With no arguments it serves MCP over stdio with the default sections.
// Logs go to stderr; stdout carries protocol frames only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lmittmann/tint"

	"github.com/wink-mcp/wink-mcp/config"
	"github.com/wink-mcp/wink-mcp/conformance"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/transport"
)

// version is set at build time with -ldflags "-X main.version=..."; go
// install records the module version instead.
var version = ""

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// flags are the command-line options.
type flags struct {
	config    string
	strategy  string
	logLevel  string
	logFormat string
	version   bool

	http            string
	insecure        bool
	conformance     bool
	bearerTokenFile string
	jwksURL         string
	jwtIssuer       string
	jwtAudience     string
	allowedOrigins  string
	allowedHosts    string
	maxBodyBytes    int64
	sessionTTL      time.Duration
	set             map[string]bool // the flags given on the command line
}

// bearerTokensEnv names the environment variable that may hold static
// bearer tokens, separated by commas or white space.
const bearerTokensEnv = "WINK_BEARER_TOKENS"

func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	var f flags
	fs := flag.NewFlagSet("wink-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "config", "", "configuration `file` (YAML)")
	fs.StringVar(&f.strategy, "strategy", "", "planning `strategy`: react, plan_act_reflect or goal_decompose_route_synthesise (overrides the configuration)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log `format`: text or json (logs always go to stderr)")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.StringVar(&f.http, "http", "", "serve Streamable HTTP at `ADDR`/mcp and SSE at /sse and /message instead of stdio (e.g. 127.0.0.1:8080)")
	fs.BoolVar(&f.insecure, "insecure", false, "allow a non-loopback --http address without authentication (logged as a warning)")
	fs.BoolVar(&f.conformance, "conformance", false, "turn on the conformance section: the fixtures of the official MCP conformance suite")
	fs.StringVar(&f.bearerTokenFile, "bearer-token-file", "", "`file` of static bearer tokens, one per line (also: $"+bearerTokensEnv+")")
	fs.StringVar(&f.jwksURL, "jwks-url", "", "validate JWT bearer tokens against the JSON Web Key Set at `URL`")
	fs.StringVar(&f.jwtIssuer, "jwt-issuer", "", "the `issuer` (iss) JWTs must have")
	fs.StringVar(&f.jwtAudience, "jwt-audience", "", "the `audience` (aud) JWTs must have: this server")
	fs.StringVar(&f.allowedOrigins, "allowed-origins", "", "comma-separated browser `origins` allowed to call the server (* for any)")
	fs.StringVar(&f.allowedHosts, "allowed-hosts", "", "comma-separated Host `names` the server answers to besides loopback names")
	fs.Int64Var(&f.maxBodyBytes, "max-body-bytes", 0, "largest request `body` accepted (default 4 MiB)")
	fs.DurationVar(&f.sessionTTL, "session-ttl", 0, "end HTTP sessions idle this `long` (default 30m)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: wink-mcp [flags]\n\nServes MCP over stdio, or over HTTP with --http, with the configured sections.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return &f, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 2
	}
	if f.version {
		fmt.Fprintln(stdout, "wink-mcp", moduleVersion())
		return 0
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 2
	}
	srv, cfg, err := build(f, logger)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.HTTP.Addr != "" {
		return serveHTTP(ctx, srv, cfg, logger, stderr)
	}
	logger.Info("serving MCP over stdio", "version", moduleVersion(), "tools", len(srv.Tools()))
	if err := transport.ServeStdio(ctx, srv.MCP(), stdin, stdout, transport.StdioOptions{Logger: logger}); err != nil {
		logger.Error("stdio transport failed", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}

// build loads the configuration, applies the flags to it and builds the
// server it describes.
func build(f *flags, logger *slog.Logger) (*server.Server, *config.Config, error) {
	cfg, err := loadConfig(f)
	if err != nil {
		return nil, nil, err
	}
	srv, err := buildServer(f, cfg, logger)
	return srv, cfg, err
}

// loadConfig loads the configuration file, if any, and applies the flags
// that override it.
func loadConfig(f *flags) (*config.Config, error) {
	cfg := config.Default()
	if f.config != "" {
		var err error
		if cfg, err = config.Load(f.config); err != nil {
			return nil, err
		}
	}
	applyHTTPFlags(f, cfg)
	if f.conformance {
		if cfg.Sections == nil {
			cfg.Sections = slices.Clone(defaultSections)
		}
		if !slices.Contains(cfg.Sections, conformance.Key) {
			cfg.Sections = append(cfg.Sections, conformance.Key)
		}
	}
	return cfg, nil
}

// buildServer builds the server cfg describes.
func buildServer(f *flags, cfg *config.Config, logger *slog.Logger) (*server.Server, error) {
	if f.strategy != "" {
		cfg.Planning.Strategy = f.strategy
	}
	strategy, err := planning.ParseStrategy(cfg.Planning.Strategy)
	if err != nil {
		if f.strategy != "" {
			return nil, fmt.Errorf("--strategy: %w", err)
		}
		return nil, cfg.Errorf("planning.strategy", "%v", err)
	}
	roots, err := builtinSections(cfg, strategy)
	if err != nil {
		return nil, err
	}
	tree, err := sections.NewTree(roots...)
	if err != nil {
		return nil, err
	}
	policies, err := serverPolicies(cfg, tree)
	if err != nil {
		return nil, err
	}
	return server.New(server.Options{
		Name:     "wink-mcp",
		Version:  moduleVersion(),
		Tree:     tree,
		Policies: policies,
		Deadline: cfg.Deadline,
		Logger:   logger,
	})
}

// defaultSections are the sections served when the configuration names
// none.
var defaultSections = []string{planning.Key}

// builtinSections returns the sections cfg turns on, in its order.
func builtinSections(cfg *config.Config, strategy planning.Strategy) ([]*sections.Section, error) {
	names := cfg.Sections
	if names == nil {
		names = defaultSections
	}
	builtin := map[string]func() *sections.Section{
		planning.Key:    func() *sections.Section { return planning.New(strategy) },
		conformance.Key: conformance.New,
	}
	var out []*sections.Section
	for i, name := range names {
		mk, ok := builtin[name]
		if !ok {
			known := slices.Sorted(maps.Keys(builtin))
			return nil, cfg.Errorf(fmt.Sprintf("sections[%d]", i), "unknown section %q (want one of: %s)", name, strings.Join(known, ", "))
		}
		out = append(out, mk())
	}
	return out, nil
}

// serverPolicies builds the server-wide policies of cfg, refusing tools the
// tree does not offer.
func serverPolicies(cfg *config.Config, tree *sections.Tree) ([]policy.Policy, error) {
	deps := cfg.Policies.SequentialDependency
	if len(deps) == 0 {
		return nil, nil
	}
	offered := map[string]bool{}
	for _, t := range tree.Tools() {
		offered[t.Name()] = true
	}
	var errs config.Errors
	for _, tool := range slices.Sorted(maps.Keys(deps)) {
		key := "policies.sequential_dependency." + tool
		if !offered[tool] {
			errs = append(errs, cfg.Errorf(key, "unknown tool %q", tool))
		}
		for i, d := range deps[tool] {
			if !offered[d] {
				errs = append(errs, cfg.Errorf(fmt.Sprintf("%s[%d]", key, i), "unknown tool %q", d))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return []policy.Policy{policy.NewSequentialDependency(deps)}, nil
}

// newLogger returns a logger writing to w: tint's colourised text when w
// is a terminal, plain text otherwise, or JSON.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})), nil
	case "text":
		return slog.New(tint.NewHandler(w, &tint.Options{Level: lv, NoColor: !isTerminal(w)})), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not one of text, json", format)
}

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// moduleVersion returns the version set at build time, the module version
// recorded by go install, or "dev".
func moduleVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
