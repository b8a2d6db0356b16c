// Package console is a web console for the people who oversee agents: the
// sessions a viewer may see, each session's plan and call log, and the
// history section's undo and restore, and ending a session, as actions.
//
// The console is an http.Handler for the paths under /console, made with
// html/template and a little plain JavaScript (embedded, nothing fetched
// from elsewhere). It reads sessions through the server's session manager,
// and acts through the server's own tools (session_undo, session_restore),
// as the session's principal, so that an action is refused the same way
// as the model's call would be.
//
// The pages, forms and events name a session by its log identifier
// (session.LogID, "sid_…"), resolved among the viewer's own sessions, never
// by its handle, which is a credential: a URL lands in the browser's
// history, in proxies' access logs and in links people share.
//
// A browser gets in by opening any console URL with ?token=TOKEN: the
// console checks the token, sets it in an HttpOnly, SameSite=Strict cookie
// and redirects to the same URL without it, so that a link to a session's
// page can be shared with someone who holds a token. Requests may also
// carry the token as "Authorization: Bearer TOKEN". An action is a POST
// whose Origin is the console's own.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/identity"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/store"
)

// Path is where the console is mounted.
const Path = "/console"

// cookie is the name of the cookie that carries a browser's token.
const cookie = "wink_console"

// Options configure a console.
type Options struct {
	// Server is the server whose sessions the console shows and acts on.
	Server *server.Server
	// Store is the session store, watched while a page listens for changes.
	Store store.Store
	// Verify checks a token a browser presents and returns whose it is.
	Verify func(ctx context.Context, token string) (identity.Identity, error)
	// Redact, when set, redacts a call's arguments as the audit does.
	Redact func(tool string, args json.RawMessage) json.RawMessage
	// Logger reports what the console does; nil discards it.
	Logger *slog.Logger
	// PageSize is how many sessions a page lists; 0 means 50.
	PageSize int
	// LogSize is how many calls a session's page lists; 0 means 1000.
	LogSize int
}

// Console is the console's handler.
type Console struct {
	opts  Options
	pages *template.Template
	mux   *http.ServeMux
}

//go:embed assets
var assets embed.FS

// New returns the console of opts.
func New(opts Options) (*Console, error) {
	if opts.Server == nil || opts.Store == nil || opts.Verify == nil {
		return nil, errors.New("console: Server, Store and Verify are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.LogSize <= 0 {
		opts.LogSize = 1000
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := &Console{opts: opts, pages: pages, mux: http.NewServeMux()}
	c.mux.Handle("GET "+Path+"/assets/", http.StripPrefix(Path, http.FileServerFS(assets)))
	c.mux.HandleFunc("GET "+Path, c.viewer(c.sessionsPage))
	c.mux.HandleFunc("GET "+Path+"/{$}", c.viewer(c.sessionsPage))
	c.mux.HandleFunc("GET "+Path+"/events", c.viewer(c.events))
	c.mux.HandleFunc("GET "+Path+"/s/{id}", c.viewer(c.sessionPage))
	c.mux.HandleFunc("GET "+Path+"/s/{id}/changes/{seq}", c.viewer(c.changesPage))
	c.mux.HandleFunc("POST "+Path+"/s/{id}/{action}", c.viewer(c.act))
	c.mux.HandleFunc("POST "+Path+"/q/{id}/{answer}", c.viewer(c.answer))
	return c, nil
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin") // "no-referrer" makes a browser send "Origin: null" with a form's POST
	c.mux.ServeHTTP(w, r)
}

// viewer authenticates the request before h: a token in the query is
// checked, set as the cookie, and the browser sent to the URL without it;
// otherwise the Authorization header's or the cookie's token is checked.
// A request without a valid token gets 401 and nothing else; a POST
// from another origin gets 403.
func (c *Console) viewer(h func(w http.ResponseWriter, r *http.Request, who identity.Identity)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if token := r.URL.Query().Get("token"); token != "" && r.Method == http.MethodGet {
			if _, err := c.opts.Verify(r.Context(), token); err != nil {
				c.refuse(w, http.StatusUnauthorized, "The token is not valid.")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookie, Value: token, Path: Path, HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q := r.URL.Query()
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		token := ""
		if scheme, t, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			token = strings.TrimSpace(t)
		} else if ck, err := r.Cookie(cookie); err == nil {
			token = ck.Value
		}
		if token == "" {
			c.refuse(w, http.StatusUnauthorized, "Open the console with the link that carries its token (?token=…).")
			return
		}
		who, err := c.opts.Verify(r.Context(), token)
		if err != nil {
			c.refuse(w, http.StatusUnauthorized, "The token is not valid.")
			return
		}
		if r.Method == http.MethodPost && !sameOrigin(r) {
			c.refuse(w, http.StatusForbidden, "An action must come from the console's own pages.")
			return
		}
		h(w, r, who)
	}
}

// sameOrigin reports whether r's Origin header names the host r was sent
// to. Browsers send Origin with every POST.
func sameOrigin(r *http.Request) bool {
	o, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && o.Host != "" && strings.EqualFold(o.Host, r.Host) && (o.Scheme == "http" || o.Scheme == "https")
}

// refuse answers status with a page that says why, and nothing else.
func (c *Console) refuse(w http.ResponseWriter, status int, why string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	c.render(w, "refused.html", map[string]any{"Why": why, "Status": status})
}

// render writes the template name with data.
func (c *Console) render(w http.ResponseWriter, name string, data any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	if err := c.pages.ExecuteTemplate(w, name, data); err != nil {
		c.opts.Logger.Error("console: rendering a page failed", "page", name, "err", err)
	}
}

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		d := time.Since(t).Round(time.Second)
		switch {
		case d < time.Minute:
			return fmt.Sprintf("%ds ago", int(d.Seconds()))
		case d < time.Hour:
			return fmt.Sprintf("%dm ago", int(d.Minutes()))
		case d < 48*time.Hour:
			return fmt.Sprintf("%dh ago", int(d.Hours()))
		}
		return t.Format("2006-01-02 15:04")
	},
	"stamp": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"ms":    func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) },
	"add":   func(a, b int) int { return a + b },
	"lines": diffLines,
}

// diffLine is a line of a unified diff, with its kind: "add", "del",
// "hunk", "file" or "" for context.
type diffLine struct{ Kind, Text string }

// diffLines splits a unified diff into its lines, each with its kind.
func diffLines(diff string) []diffLine {
	var out []diffLine
	for _, l := range strings.SplitAfter(diff, "\n") {
		if l == "" {
			continue
		}
		kind := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			kind = "file"
		case strings.HasPrefix(l, "@@"):
			kind = "hunk"
		case strings.HasPrefix(l, "+"):
			kind = "add"
		case strings.HasPrefix(l, "-"):
			kind = "del"
		}
		out = append(out, diffLine{kind, strings.TrimSuffix(l, "\n")})
	}
	return out
}
