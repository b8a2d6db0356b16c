package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wink-mcp/wink-mcp/console"
	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/transport"
)

// newConsole returns the console of a, whose viewers verify checks.
func newConsole(a *app, verify func(context.Context, string) (identity.Identity, error), logger *slog.Logger) (*console.Console, error) {
	byName := map[string]*tools.Tool{}
	for _, t := range a.srv.Tools() {
		byName[t.Name()] = t
	}
	return console.New(console.Options{
		Server: a.srv,
		Store:  a.store,
		Verify: verify,
		Redact: func(tool string, args json.RawMessage) json.RawMessage {
			if t := byName[tool]; t != nil {
				return a.hooks.RedactArgs(t, args)
			}
			return args
		},
		Logger: logger,
	})
}

// startupToken returns a random token made for this process's console,
// and a verifier that accepts it alone, as who.
func startupToken(who identity.Identity) (string, func(context.Context, string) (identity.Identity, error)) {
	token := rand.Text()
	return token, func(_ context.Context, got string) (identity.Identity, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return identity.Identity{}, errors.New("not the console's token")
		}
		return who, nil
	}
}

// runConsole is the command "wink-mcp console [--listen ADDR] [--session
// NAME] [--state-dir DIR] [--config FILE] [--workspace DIR]": it serves
// the console of the
// sessions in a state directory, beside the processes that serve them
// (it opens the directory's store as they do), on a loopback address, and
// prints the URL to open, with a token made at startup. It shows the
// sessions of the stdio processes started with --session NAME (the local
// user's), of the one NAME the directory holds when --session is left out
// (the usual desktop setup), and otherwise those of the HTTP servers on
// the directory that authenticate nobody.
func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wink-mcp console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "the loopback `address` to serve the console at")
	f := &flags{logLevel: "warn", logFormat: "text", set: map[string]bool{}}
	fs.StringVar(&f.session, "session", "", "the `NAME` given to the stdio processes with --session (default: the HTTP servers' sessions)")
	fs.StringVar(&f.stateDir, "state-dir", "", "the state `directory` (default: the configuration's, else $XDG_STATE_HOME/wink-mcp)")
	fs.StringVar(&f.config, "config", "", "configuration `file` (YAML), as the processes were given")
	fs.StringVar(&f.workspace, "workspace", "", "the `directory` the processes were given with --workspace, so that undo puts its files back")
	if code, ok := parseCommand(fs, args, stderr); !ok {
		return code
	}
	if !loopbackAddr(*listen) {
		fmt.Fprintf(stderr, "wink-mcp console: --listen %q: want a loopback address, such as 127.0.0.1:8090\n", *listen)
		return 2
	}
	terminal := isTerminal(stderr)
	sink := newLogSink(stderr)
	defer sink.Flush()
	stderr = sink
	logger, err := newLogger(sink, terminal, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp console: %v\n", err)
		return 2
	}
	if f.session == "" {
		if f.session, err = onlyStdioStore(f); err != nil {
			fmt.Fprintf(stderr, "wink-mcp console: %v\n", err)
			return 2
		}
	}
	who := identity.Identity{} // the sessions of HTTP clients that authenticate as nobody
	if f.session == "" {
		f.http = consoleHTTP
		f.set["http"] = true
	} else {
		who = identity.Local() // a stdio process's sessions are the local user's
	}
	a, err := build(f, logger)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp console: %v\n", err)
		return 1
	}
	defer a.close()
	token, verify := startupToken(who)
	c, err := newConsole(a, verify, logger)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp console: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "wink-mcp console: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Open http://%s%s?token=%s\n", ln.Addr(), console.Path, token)
	hs := &http.Server{Handler: transport.CheckHost(c), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "wink-mcp console: %v\n", err)
		return 1
	}
	return 0
}

// onlyStdioStore returns the --session of the stdio processes whose store
// the state directory holds, when it holds one; "" when it holds none; an
// error naming them when it holds several.
func onlyStdioStore(f *flags) (string, error) {
	dir, err := stateDirectory(f)
	if err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "store"))
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e.Name(), "stdio-"); ok && e.IsDir() {
			names = append(names, name)
		}
	}
	if len(names) > 1 {
		return "", fmt.Errorf("the state directory %s holds the sessions of stdio processes started with --session %s: say which with --session", dir, strings.Join(names, ", "))
	}
	if len(names) == 1 {
		return names[0], nil
	}
	return "", nil
}

// consoleHTTP stands for an HTTP address in the flags of the console
// command without --session, so that the store opened is the HTTP
// servers'; nothing listens there.
const consoleHTTP = "127.0.0.1:0"
