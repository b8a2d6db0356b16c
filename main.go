// Command wink-mcp is an MCP server that gives LLM agents a safe,
// predictable set of tools. Tools live on sections; every call is validated
// against its schema, checked by policies and run in a transaction that a
// failure rolls back whole.
//
// With no arguments it serves MCP over stdio with the default sections,
// planning and an in-memory workspace. --workspace DIR works on a real
// directory instead; --mount HOST[:PATH] copies host directories into the
// workspace at startup. Logs go to stderr; stdout carries protocol frames
// only.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lmittmann/tint"

	"github.com/wink-mcp/wink-mcp/config"
	"github.com/wink-mcp/wink-mcp/conformance"
	"github.com/wink-mcp/wink-mcp/consent"
	"github.com/wink-mcp/wink-mcp/evaluation"
	"github.com/wink-mcp/wink-mcp/formats"
	"github.com/wink-mcp/wink-mcp/history"
	"github.com/wink-mcp/wink-mcp/hooks"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/planning"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/sessions"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/telemetry"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/transport"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// version is set at build time with -ldflags "-X main.version=1.2.3", as
// scripts/dist does for a release; go install records the module version
// (v1.2.3) instead.
var version = ""

func main() {
	if evaluation.IsChild() {
		os.Exit(evaluation.Child(os.Stdin, os.Stdout))
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// memoryLogRetention is how many call records a memory store keeps per
// session: they are in the process's memory, so fewer than a store on
// disk keeps (store.Options.LogRetention).
const memoryLogRetention = 32

// stdioSessionTTL is how long the session of a stdio process may be idle
// when the configuration does not say: long enough for a desktop client's
// session named with --session to outlive a night with the app closed.
const stdioSessionTTL = 30 * 24 * time.Hour

// flags are the command-line options.
type flags struct {
	config    string
	strategy  string
	logLevel  string
	logFormat string
	version   bool
	workspace string
	stateDir  string
	store     string
	storeSync string
	nats      config.NATS
	mounts    []config.Mount
	session   string

	includeIgnored bool // --include-ignored: workspace.include_ignored

	cpuProfile string // --cpu-profile: where to write a CPU profile of the run

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
	readTimeout     time.Duration
	idleTimeout     time.Duration
	maxConnections  int
	maxSessions     int
	set             map[string]bool // the flags given on the command line
}

// bearerTokensEnv names the environment variable that may hold static
// bearer tokens, separated by commas or white space.
const bearerTokensEnv = "WINK_BEARER_TOKENS"

// parseFlags parses the command line. For -h or --help it writes the usage
// to help and returns flag.ErrHelp; it writes nothing else, and returns
// what is wrong with the command line for the caller to say once.
func parseFlags(args []string, help io.Writer) (*flags, error) {
	var f flags
	fs := flag.NewFlagSet("wink-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.config, "config", "", "configuration `file` (YAML)")
	fs.StringVar(&f.strategy, "strategy", "", "planning `strategy`: react, plan_act_reflect or goal_decompose_route_synthesise (overrides the configuration)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log `format`: text or json (logs always go to stderr)")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to `file`, for go tool pprof")
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
	fs.DurationVar(&f.sessionTTL, "session-ttl", 0, "end sessions idle this `long`, and close streams quiet this long (default 30m)")
	fs.DurationVar(&f.readTimeout, "read-timeout", 0, "give a client this `long` to send a whole request, headers and body (default 30s)")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 0, "close a keep-alive connection idle this `long` between requests (default 2m)")
	fs.IntVar(&f.maxConnections, "max-connections", 0, "keep at most `N` connections open at once; further clients wait (default 1024)")
	fs.IntVar(&f.maxSessions, "max-sessions-per-principal", 0, "let one client identity hold at most `N` live sessions; 0 for no bound (default 1000)")
	fs.Func("session", "over stdio, call the process's session `NAME` (letters, digits, '-', '_'), so that a restarted process resumes it; default: a fresh one", func(v string) error {
		f.session = v
		return server.CheckSessionName(v)
	})
	fs.StringVar(&f.workspace, "workspace", "", "work on the files of `directory` (the disk backend) instead of an in-memory workspace (overrides the configuration)")
	fs.StringVar(&f.stateDir, "state-dir", "", "keep the server's own state (the locks and undo journals of a disk workspace) in `directory` (default: $XDG_STATE_HOME/wink-mcp or ~/.local/state/wink-mcp; overrides the configuration)")
	fs.StringVar(&f.store, "store", "", "keep sessions in `STORE`: embedded (the default: a NATS server in the process, storing under the state directory's store/, so that sessions survive a restart), memory (lost at exit) or nats://HOST:PORT[,...] (an external NATS cluster) (overrides the configuration)")
	fs.StringVar(&f.storeSync, "store-sync", "", "when the embedded store writes to disk: `interval` (the default) or always (overrides the configuration)")
	fs.StringVar(&f.nats.Creds, "nats-creds", "", "connect to the NATS cluster of --store with the credentials `file`")
	fs.StringVar(&f.nats.CA, "nats-ca", "", "connect to the NATS cluster of --store with TLS, trusting the authorities in the PEM `file`")
	fs.StringVar(&f.nats.Cert, "nats-cert", "", "present the PEM client certificate `file` to the NATS cluster (with --nats-key)")
	fs.StringVar(&f.nats.Key, "nats-key", "", "the PEM private key `file` of --nats-cert")
	fs.IntVar(&f.nats.Replicas, "nats-replicas", 0, "keep each of the store's streams on `N` servers of the NATS cluster (default 1; 3 survives the loss of one)")
	fs.BoolVar(&f.includeIgnored, "include-ignored", false, "let mounts, ls, glob and grep see .git and the paths .gitignore files ignore (left out by default; overrides the configuration)")
	fs.Func("mount", "copy the host directory `HOST[:PATH]` into the workspace at PATH (default: its root) at startup; repeatable, added to the configuration's mounts", func(v string) error {
		m, err := parseMount(v)
		if err != nil {
			return err
		}
		f.mounts = append(f.mounts, m)
		return nil
	})
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(help, "Usage: wink-mcp [flags]\n       wink-mcp console [--listen ADDR] [--session NAME]\n       wink-mcp recover [--state-dir DIR]\n\nServes MCP over stdio, or over HTTP with --http, with the configured sections.\nconsole serves the web console of the sessions in the state directory, on loopback.\nrecover puts back the files of disk workspaces that calls of a dead process left half changed.\n\nFlags:\n")
			fs.SetOutput(help)
			fs.PrintDefaults()
		}
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
	if len(args) > 0 {
		switch args[0] {
		case "recover":
			return runRecover(args[1:], stdout, stderr)
		case "console":
			return runConsole(ctx, args[1:], stdout, stderr)
		}
	}
	f, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\nRun 'wink-mcp --help' for the flags.\n", err)
		return 2
	}
	if f.version {
		fmt.Fprintf(stdout, "wink-mcp %s (store format %d)\n", moduleVersion(), store.Format)
		return 0
	}
	sink := newLogSink(stderr)
	defer sink.Flush()
	terminal := isTerminal(stderr)
	// From here on everything for stderr goes through the sink, so that a
	// message written directly never interleaves with a flush of log lines.
	stderr = sink
	logger, err := newLogger(sink, terminal, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 2
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile, logger)
		if err != nil {
			fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
			return 1
		}
		defer stop()
	}
	a, err := build(f, logger)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp: %v\n", err)
		return 1
	}
	srv, cfg := a.srv, a.cfg
	// Close (the audit writes what it holds) before the last log line.
	closeAll := sync.OnceFunc(a.close)
	defer closeAll()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.HTTP.Addr != "" {
		if code := serveHTTP(ctx, a, logger, stderr); code != 0 {
			return code
		}
	} else {
		logger.Info("serving MCP over stdio", "version", moduleVersion(), "tools", len(srv.Tools()))
		if err := transport.ServeStdio(ctx, srv.MCP(), stdin, stdout, transport.StdioOptions{Logger: logger, ContextFunc: stdioContext(f.session)}); err != nil {
			logger.Error("stdio transport failed", "err", err)
			return 1
		}
	}
	closeAll()
	logger.Info("stopped")
	return 0
}

// app is what build makes: the server, the configuration it was built
// from, its session store and lifecycle hooks, and close, which closes the
// server, releases the workspace backend, closes the audit file and the
// store.
type app struct {
	srv   *server.Server
	cfg   *config.Config
	store store.Store
	hooks *hooks.Hooks
	close func()
}

// build loads the configuration, applies the flags to it and builds the
// server it describes, reporting to OpenTelemetry if the environment says
// so (its close then sends the last spans and metrics).
func build(f *flags, logger *slog.Logger) (*app, error) {
	cfg, err := loadConfig(f)
	if err != nil {
		return nil, err
	}
	tel := startTelemetry(cfg, logger)
	a, err := buildServer(f, cfg, tel, logger)
	if err != nil {
		stopTelemetry(tel, logger)
		return nil, err
	}
	a.cfg = cfg
	closeServer := a.close
	a.close = func() { closeServer(); stopTelemetry(tel, logger) }
	return a, nil
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
	if f.stateDir != "" {
		cfg.StateDir = f.stateDir
	}
	if f.session != "" && cfg.HTTP.Addr != "" {
		return nil, errors.New("--session names the session of a stdio process; over HTTP each client names its own")
	}
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

// stateDirectory returns the state directory the flags name: --state-dir,
// else the configuration's, else the default.
func stateDirectory(f *flags) (string, error) {
	cfg, err := loadConfig(f)
	if err != nil {
		return "", err
	}
	return cfg.StateDirectory()
}

// parseCommand parses the command line of a command of its own (console,
// recover). It reports false, with the exit status, when the command is to
// stop: 0 after -h, 2 for a bad command line, which fs has said on its
// output (arguments left over, parseCommand says on stderr).
func parseCommand(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, false
	}
	return 0, true
}

// buildServer builds the server cfg describes, reporting to tel (nil:
// nowhere).
func buildServer(f *flags, cfg *config.Config, tel *telemetry.Telemetry, logger *slog.Logger) (*app, error) {
	if f.strategy != "" {
		cfg.Planning.Strategy = planning.Strategy(f.strategy)
	}
	if f.workspace != "" {
		cfg.Workspace.Backend, cfg.Workspace.Root = "disk", f.workspace
	}
	if f.store != "" {
		cfg.Store = f.store
	}
	if f.storeSync != "" {
		cfg.StoreSync = config.StoreSync(f.storeSync)
	}
	for to, v := range map[*string]string{&cfg.NATS.Creds: f.nats.Creds, &cfg.NATS.CA: f.nats.CA, &cfg.NATS.Cert: f.nats.Cert, &cfg.NATS.Key: f.nats.Key} {
		if v != "" {
			*to = v
		}
	}
	if f.set["nats-replicas"] {
		cfg.NATS.Replicas = f.nats.Replicas
	}
	if cfg.HTTP.Addr == "" && !f.set["session-ttl"] && cfg.Line("http.session_ttl") == 0 {
		cfg.HTTP.SessionTTL = stdioSessionTTL
	}
	cfg.Workspace.Mounts = append(cfg.Workspace.Mounts, f.mounts...)
	cfg.Workspace.IncludeIgnored = cfg.Workspace.IncludeIgnored || f.includeIgnored
	strategy, err := planning.ParseStrategy(string(cfg.Planning.Strategy))
	if err != nil {
		if f.strategy != "" {
			return nil, fmt.Errorf("--strategy: %w", err)
		}
		return nil, cfg.Errorf("planning.strategy", "%v", err)
	}
	b := &builder{cfg: cfg, strategy: strategy, logger: logger}
	roots, err := b.sections()
	if err != nil {
		b.close()
		return nil, err
	}
	tree, err := sections.NewTree(roots...)
	if err != nil {
		b.close()
		return nil, err
	}
	policies, err := serverPolicies(cfg, tree)
	if err != nil {
		b.close()
		return nil, err
	}
	lifecycle, err := newHooks(cfg, tree, logger)
	if err != nil {
		b.close()
		return nil, err
	}
	asks, err := consent.New(cfg.Consent, tree.Tools(), lifecycle.RedactArgs)
	var stateKey []byte
	var st store.Store
	if ce := (*consent.ConfigError)(nil); errors.As(err, &ce) {
		err = cfg.Errorf("consent."+ce.Key, "%s", ce.Msg)
	} else if err == nil {
		stateKey, err = readStateKey(cfg)
	}
	if err == nil {
		st, err = openStore(cfg, f.session, logger)
	}
	if err != nil {
		if cerr := lifecycle.Close(); cerr != nil {
			logger.Error("closing the audit file failed", "err", cerr)
		}
		b.close()
		return nil, err
	}
	closeAll := func() {
		if err := lifecycle.Close(); err != nil {
			logger.Error("closing the audit file failed", "err", err)
		}
		b.close()
		if err := st.Close(); err != nil {
			logger.Error("closing the session store failed", "err", err)
		}
	}
	srv, err := server.New(server.Options{
		Store:                   st,
		Name:                    "wink-mcp",
		Version:                 moduleVersion(),
		Tree:                    tree,
		Policies:                policies,
		Deadline:                cfg.Deadline,
		SessionTTL:              cfg.HTTP.SessionTTL,
		MaxSessionsPerPrincipal: cfg.HTTP.MaxSessionsPerPrincipal,
		History:                 b.history,
		Logger:                  logger,
		Stages:                  lifecycle.Stages(),
		ToolFilter:              lifecycle.Visible,
		Setup:                   func(r *session.Registry) { lifecycle.Setup(r); asks.Setup(r) },
		Consent:                 asks,
		RequestStateKey:         stateKey,
		Handlers:                hookHandlers(lifecycle),
		Telemetry:               tel,
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	// A consent question no client can ask waits in the store for the
	// console (consent.fallback: console).
	asks.SetDesk(func(ctx context.Context, call *tools.Call, message string) (bool, error) {
		who, _ := identity.From(ctx)
		return srv.Sessions().Ask(ctx, who.Principal(), sessions.Question{Session: call.Session.ID(), Tool: call.Tool.Name(), Message: message})
	})
	// The server's background work on the store (sweeps, expiry) ends
	// before the store closes.
	return &app{srv: srv, store: st, hooks: lifecycle, close: func() { srv.Close(); closeAll() }}, nil
}

// minStateKey is the shortest secret http.request_state_key_file may hold.
const minStateKey = 32

// readStateKey returns the secret of http.request_state_key_file, or nil
// when the key is absent (the server then makes one of its own).
func readStateKey(cfg *config.Config) ([]byte, error) {
	path := cfg.HTTP.RequestStateKeyFile
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, cfg.Errorf("http.request_state_key_file", "%v", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < minStateKey {
		return nil, cfg.Errorf("http.request_state_key_file", "%s holds %d bytes; want at least %d", path, len(key), minStateKey)
	}
	return key, nil
}

// openStore opens the session store cfg names, before the server serves:
// a NATS server embedded in the process (the default), memory, or an
// external NATS cluster (nats:// or tls://). An embedded store locks its
// directory, so each process that may run beside another on one state
// directory gets its own: an HTTP server store/http, a stdio process
// store/stdio-NAME after its --session (session). A stdio process without
// --session has a fresh session nothing can resume, so its store is
// memory.
func openStore(cfg *config.Config, session string, logger *slog.Logger) (store.Store, error) {
	opts := store.Options{Logger: logger, SyncAlways: cfg.StoreSync == "always", Dormancy: cfg.StoreDormancy, Migrations: formats.Steps()}
	external := strings.HasPrefix(cfg.Store, "nats://") || strings.HasPrefix(cfg.Store, "tls://")
	switch {
	case cfg.Store != "" && cfg.Store != "embedded" && cfg.Store != "memory" && !external:
		return nil, cfg.Errorf("store", "%q is not a session store (want memory, embedded, nats://HOST:PORT or tls://HOST:PORT)", cfg.Store)
	case cfg.StoreSync != "" && !slices.Contains(cfg.StoreSync.Enum(), string(cfg.StoreSync)):
		return nil, cfg.Errorf("store_sync", "%q is not a sync setting (want one of %s)", cfg.StoreSync, strings.Join(cfg.StoreSync.Enum(), ", "))
	case cfg.NATS != config.Default().NATS && !external:
		return nil, cfg.Errorf("nats", "the NATS settings need an external store (store: nats://HOST:PORT)")
	case cfg.StoreSync == "always" && (external || cfg.Store == "memory"):
		return nil, cfg.Errorf("store_sync", "applies to the embedded store only (an external cluster syncs as its servers are configured)")
	case external:
		if err := natsOptions(cfg.NATS, &opts); err != nil {
			return nil, cfg.Errorf("nats", "%v", err)
		}
		st, err := store.Connect(context.Background(), cfg.Store, opts)
		if err != nil {
			return nil, fmt.Errorf("session store %s: %w", cfg.Store, err)
		}
		return st, nil
	case cfg.Store == "memory" || cfg.HTTP.Addr == "" && session == "":
		if cfg.Store != "memory" {
			logger.Debug("session store in memory: without --session nothing can resume this process's session")
		}
		opts.LogRetention = memoryLogRetention
		return store.NewMemory(opts), nil
	}
	dir, err := cfg.StateDirectory()
	if err != nil {
		return nil, err
	}
	sub := "http"
	if cfg.HTTP.Addr == "" {
		sub = "stdio-" + session
	}
	dir = filepath.Join(dir, "store", sub)
	start := time.Now()
	st, err := store.OpenEmbedded(context.Background(), dir, opts)
	if err != nil {
		return nil, fmt.Errorf("session store in %s: %w", dir, err)
	}
	// Not dir itself: a stdio process's is named after its session.
	logger.Debug("session store open", "dir", filepath.Dir(dir), "ms", time.Since(start).Milliseconds())
	return st, nil
}

// natsOptions sets in opts how to connect to an external NATS cluster:
// credentials, TLS and the streams' replicas.
func natsOptions(n config.NATS, opts *store.Options) error {
	if n.Replicas < 1 || n.Replicas > 5 {
		return fmt.Errorf("replicas must be 1 to 5, got %d", n.Replicas)
	}
	if (n.Cert == "") != (n.Key == "") {
		return errors.New("a client certificate needs both cert and key")
	}
	opts.CredsFile, opts.Replicas = n.Creds, n.Replicas
	if n.Creds != "" {
		if _, err := os.Stat(n.Creds); err != nil {
			return err
		}
	}
	if n.CA == "" && n.Cert == "" {
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if n.CA != "" {
		pem, err := os.ReadFile(n.CA)
		if err != nil {
			return err
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s holds no PEM certificate", n.CA)
		}
	}
	if n.Cert != "" {
		c, err := tls.LoadX509KeyPair(n.Cert, n.Key)
		if err != nil {
			return err
		}
		tc.Certificates = []tls.Certificate{c}
	}
	opts.TLS = tc
	return nil
}

// stdioContext returns the context function of the stdio transport: every
// request comes from the local user and belongs to the process's session,
// called name when it is set.
func stdioContext(name string) func(context.Context) context.Context {
	local := stdioIdentity()
	return func(ctx context.Context) context.Context { return server.WithSessionName(local(ctx), name) }
}

// parseMount reads a --mount value, HOST[:PATH]. A Windows drive letter
// ("C:\\src") is part of HOST.
func parseMount(v string) (config.Mount, error) {
	rest := v
	skip := 0
	if len(v) >= 2 && v[1] == ':' && (v[0] >= 'A' && v[0] <= 'Z' || v[0] >= 'a' && v[0] <= 'z') {
		skip = 2
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest[skip:], ':'); i >= 0 {
		host, path = rest[:skip+i], rest[skip+i+1:]
	}
	if host == "" {
		return config.Mount{}, fmt.Errorf("%q: the host directory is empty (want HOST[:PATH])", v)
	}
	return config.Mount{Host: host, Path: path}, nil
}

// defaultSections are the sections served when the configuration names
// none.
var defaultSections = []string{planning.Key, workspace.Key, history.Key}

// builder builds the built-in sections of a configuration and holds what
// they need released at exit.
type builder struct {
	cfg      *config.Config
	strategy planning.Strategy
	logger   *slog.Logger
	backend  *workspace.Backend
	// history is how many commits each session's history keeps: the
	// configured retention when the history section is on, else 0.
	history int
}

func (b *builder) close() {
	if b.backend != nil {
		_ = b.backend.Close()
	}
}

// workspace opens the workspace backend the configuration describes and
// returns its section.
func (b *builder) workspace() (*sections.Section, error) {
	w := b.cfg.Workspace
	mounts := make([]workspace.Mount, len(w.Mounts))
	for i, m := range w.Mounts {
		mounts[i] = workspace.Mount{Host: m.Host, Path: m.Path, Include: m.Include, Exclude: m.Exclude, FollowSymlinks: m.FollowSymlinks}
	}
	stateDir := b.cfg.StateDir
	if w.Backend == "disk" {
		var err error
		if stateDir, err = b.cfg.StateDirectory(); err != nil {
			return nil, err
		}
	}
	backend, err := workspace.Open(workspace.Config{
		Backend:        string(w.Backend),
		Root:           w.Root,
		StateDir:       stateDir,
		Mounts:         mounts,
		AllowedRoots:   w.AllowedRoots,
		MaxBytes:       w.MaxBytes,
		IncludeIgnored: w.IncludeIgnored,
	}, b.logger)
	if err != nil {
		return nil, err
	}
	b.backend = backend
	b.logger.Info("workspace ready", "backend", backend.Kind(), "root", w.Root, "mounts", len(mounts), "read_before_write", b.cfg.Policies.ReadBeforeWrite)
	return workspace.New(backend, workspace.Options{
		NoReadBeforeWrite: !b.cfg.Policies.ReadBeforeWrite,
		MaxFileBytes:      w.MaxFileBytes,
	}), nil
}

// evaluation returns the evaluation section. Snippets of HTTP clients,
// which are not trusted, run in child processes.
func (b *builder) evaluation() (*sections.Section, error) {
	e := b.cfg.Evaluation
	opts := evaluation.Options{
		Child:          e.Isolate || b.cfg.HTTP.Addr != "",
		MaxSteps:       uint64(e.MaxSteps),
		MaxOutputBytes: int(e.MaxOutputBytes),
		MaxMemoryBytes: e.MaxMemoryBytes,
	}
	if rc := e.RunCommand; rc.Enabled {
		opts.RunCommand = &evaluation.Sandbox{CPUSeconds: rc.CPUSeconds, MemoryBytes: rc.MemoryBytes, Processes: rc.Processes}
	}
	return evaluation.New(opts)
}

// sections returns the sections the configuration turns on, in its order.
func (b *builder) sections() ([]*sections.Section, error) {
	cfg := b.cfg
	names := cfg.Sections
	if names == nil {
		names = defaultSections
	}
	builtin := map[string]func() (*sections.Section, error){
		planning.Key:    func() (*sections.Section, error) { return planning.New(b.strategy), nil },
		workspace.Key:   b.workspace,
		conformance.Key: func() (*sections.Section, error) { return conformance.New(), nil },
		evaluation.Key:  b.evaluation,
		history.Key: func() (*sections.Section, error) {
			b.history = cfg.History.Retention
			return history.New(), nil
		},
	}
	closed := map[string]bool{planning.Key: !cfg.Planning.Open, workspace.Key: !cfg.Workspace.Open}
	var out []*sections.Section
	for i, name := range names {
		mk, ok := builtin[name]
		if !ok {
			known := slices.Sorted(maps.Keys(builtin))
			return nil, cfg.Errorf(fmt.Sprintf("sections[%d]", i), "unknown section %q (want one of: %s)", name, strings.Join(known, ", "))
		}
		sec, err := mk()
		if err != nil {
			return nil, err
		}
		sec.Closed = closed[name]
		delete(closed, name)
		out = append(out, sec)
	}
	for _, name := range slices.Sorted(maps.Keys(closed)) {
		if closed[name] {
			return nil, cfg.Errorf(name+".open", "the %s section is off, so it cannot start closed: add it to sections, or remove %s.open", name, name)
		}
	}
	if b.backend == nil && slices.Contains(names, evaluation.Key) {
		return nil, cfg.Errorf("sections", "the evaluation section works on the workspace: add workspace to sections")
	}
	if b.backend == nil && (len(cfg.Workspace.Mounts) > 0 || cfg.Workspace.Backend == "disk") {
		b.logger.Warn("the workspace section is off; its settings (--workspace, --mount, workspace.*) are ignored")
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

// newLogger returns a logger writing to sink: text (tint's, colourised,
// when the sink ends in a terminal; slog's key=value otherwise) or JSON.
func newLogger(sink *logSink, terminal bool, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: lv})
	case "text":
		if terminal {
			h = tint.NewTextHandler(sink, &tint.Options{Level: lv})
		} else {
			// Not read by a person as it is written: plain key=value
			// lines, without colour codes, for a file or a collector.
			h = slog.NewTextHandler(sink, &slog.HandlerOptions{Level: lv})
		}
	default:
		return nil, fmt.Errorf("--log-format: %q is not one of text, json", format)
	}
	return slog.New(flushHandler{Handler: h, sink: sink}), nil
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

// moduleVersion returns the version set at build time, else the module
// version recorded by go install, else "dev"; without a leading "v", so
// that a release binary and the same version installed with go install
// both say 1.2.3. A build inside a git checkout records a pseudo-version
// (v0.0.0-20260102150405-abcdef123456, +dirty when changed).
func moduleVersion() string {
	if version != "" {
		return strings.TrimPrefix(version, "v")
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return "dev"
}
