package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/store"
	"github.com/wink-mcp/wink-mcp/tools"
)

// GreetParams are the arguments of the greet tool.
type GreetParams struct {
	Name string `json:"name" jsonschema:"Who to greet."`
	Loud bool   `json:"loud,omitempty" jsonschema:"Shout the greeting."`
}

// Greeting is the greet tool's result: sent to the client as structured
// content, and rendered for the model by its Render method.
type Greeting struct {
	Text string `json:"text" jsonschema:"The greeting."`
}

// Render returns the text the model reads after the result's message.
func (g Greeting) Render() string { return g.Text }

// greet is a tool: its input schema is inferred from GreetParams, its
// output schema from Greeting.
var greet = tools.New("greet", "Greet someone by name.",
	tools.Annotations{Title: "Greet", ReadOnly: true, Idempotent: true},
	func(ctx *tools.Context, p GreetParams) (tools.Result[Greeting], error) {
		if strings.TrimSpace(p.Name) == "" {
			return tools.Fail[Greeting]("Name must not be empty."), nil
		}
		greeting := "Hello, " + p.Name + "."
		if p.Loud {
			greeting = strings.ToUpper(greeting)
		}
		return tools.OK("Greeted "+p.Name+".", Greeting{Text: greeting}), nil
	})

func ExampleNew() {
	section := &sections.Section{
		Key:      "hello",
		Title:    "Hello",
		Guidance: "Greet people with `greet`.",
		Tools:    []*tools.Tool{greet},
	}
	tree, err := sections.NewTree(section) // checks names, descriptions, examples, duplicates
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "hello", Version: "1.0.0", Tree: tree})
	if err != nil {
		log.Fatal(err)
	}

	c := connect(srv)
	fmt.Println(call(c, "greet", `{"name": "Ada"}`))
	fmt.Println(call(c, "greet", `{"name": "  "}`))
	fmt.Println(call(c, "greet", `{"name": 3, "shout": true}`))
	// Output:
	// Greeted Ada.
	//
	// Hello, Ada.
	// (structured: {"text":"Hello, Ada."})
	// error: Name must not be empty.
	// error: Invalid arguments: /name: expected string, got number. Unknown argument 'shout'. greet takes: name, loud, session.
}

// connect returns an initialised client of srv in the same process.
func connect(srv *server.Server) *client.Client {
	ctx := context.Background()
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	return c
}

// handle matches the handles the server mints, which are random; call
// shows them as s_….
var handle = regexp.MustCompile(`s_[A-Z2-7]{26}`)

// call calls a tool with arguments given as JSON and returns the text the
// model reads, marked when the result is an error.
func call(c *client.Client, name, args string) string {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = json.RawMessage(args)
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		return "protocol error: " + err.Error()
	}
	var b strings.Builder
	if res.IsError {
		b.WriteString("error: ")
	}
	for _, ct := range res.Content {
		if t, ok := ct.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.StructuredContent != nil {
		sc, _ := json.Marshal(res.StructuredContent)
		fmt.Fprintf(&b, "\n(structured: %s)", sc)
	}
	return handle.ReplaceAllString(b.String(), "s_…")
}

// total is the session's running total: a STATE slice, which a failed call
// restores with the rest of the session.
var total = session.NewKey[int]("tally.total")

// Added is the event that adds N to the total.
type Added struct{ N int }

// AddParams are the arguments of tally_add.
type AddParams struct {
	N int `json:"n" jsonschema:"The number to add."`
}

// tallySection returns a section that keeps a running total, stored with
// the session.
func tallySection() *sections.Section {
	add := tools.New("tally_add", "Add n to the session's total, which must stay at most 10.",
		tools.Annotations{Title: "Add to the total"},
		func(ctx *tools.Context, p AddParams) (tools.Result[any], error) {
			if err := ctx.Dispatch(Added(p)); err != nil {
				return tools.Result[any]{}, err
			}
			sum, _ := session.Get(ctx.Session, total)
			if sum > 10 {
				return tools.Failf[any]("The total would be %d, over 10.", sum), nil
			}
			return tools.OK[any](fmt.Sprintf("The total is %d.", sum), nil), nil
		})
	section := &sections.Section{
		Key:      "tally",
		Title:    "Tally",
		Guidance: "Keep a running total with `tally_add`.",
		Tools:    []*tools.Tool{add},
		Setup: func(r *session.Registry) {
			session.Persist(r, total, session.JSON[int]())
			session.On(r, total, func(old int, _ bool, ev Added) (int, error) {
				return old + ev.N, nil
			})
		},
	}
	return section
}

func Example_state() {
	tree, err := sections.NewTree(tallySection())
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "tally", Version: "1.0.0", Tree: tree})
	if err != nil {
		log.Fatal(err)
	}

	c := connect(srv)
	for _, n := range []int{4, 5, 3, 1} {
		fmt.Println(call(c, "tally_add", fmt.Sprintf(`{"n": %d}`, n)))
	}
	// The result of each call that changed the session's state names the
	// session, for a client without a connection to continue it.

	// Output:
	// The total is 4.
	//
	// Session: s_…
	// (structured: {"session":"s_…"})
	// The total is 9.
	//
	// Session: s_…
	// (structured: {"session":"s_…"})
	// error: The total would be 12, over 10.
	// The total is 10.
	//
	// Session: s_…
	// (structured: {"session":"s_…"})
}

// A server keeps its sessions in a store; here a NATS server embedded in
// the process, storing under dir, so that a session outlives the server.
// A client names its session with the handle a result gave it.
func Example_store() {
	dir, err := os.MkdirTemp("", "wink-state-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	serve := func() (*server.Server, store.Store) {
		st, err := store.OpenEmbedded(context.Background(), dir, store.Options{})
		if err != nil {
			log.Fatal(err)
		}
		tree, err := sections.NewTree(tallySection())
		if err != nil {
			log.Fatal(err)
		}
		srv, err := server.New(server.Options{Name: "tally", Version: "1.0.0", Tree: tree, Store: st})
		if err != nil {
			log.Fatal(err)
		}
		return srv, st
	}

	srv, st := serve()
	c := connect(srv)
	fmt.Println(call(c, "tally_add", `{"n": 4}`))
	var req mcp.ReadResourceRequest // the handle, as a resource
	req.Params.URI = server.SessionURI
	res, err := c.ReadResource(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	h := res.Contents[0].(mcp.TextResourceContents).Text
	srv.Close() // the server's work on the store ends before the store closes
	st.Close()

	srv, st = serve() // a new process, say, on the same directory
	defer st.Close()
	defer srv.Close()
	fmt.Println(call(connect(srv), "tally_add", `{"n": 5, "session": "`+h+`"}`))
	// Output:
	// The total is 4.
	//
	// Session: s_…
	// (structured: {"session":"s_…"})
	// The total is 9.
	//
	// Session: s_…
	// (structured: {"session":"s_…"})
}

// quiet is a policy: it refuses loud greetings.
type quiet struct{}

func (quiet) Name() string { return "quiet" }

// Check runs after validation, so the call's Params hold the tool's typed
// arguments.
func (quiet) Check(call *tools.Call) error {
	if p, ok := call.Params.(GreetParams); ok && p.Loud {
		return policy.Deny("quiet", "Greetings here are quiet; leave out loud.")
	}
	return nil
}

func (quiet) OnResult(*tools.Call, *tools.Outcome) error { return nil }

func Example_policy() {
	section := &sections.Section{
		Key:      "hello",
		Title:    "Hello",
		Guidance: "Greet people with `greet`, quietly.",
		Tools:    []*tools.Tool{greet},
		Policies: []policy.Policy{quiet{}},
	}
	tree, err := sections.NewTree(section)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "hello", Version: "1.0.0", Tree: tree})
	if err != nil {
		log.Fatal(err)
	}

	c := connect(srv)
	fmt.Println(call(c, "greet", `{"name": "Ada", "loud": true}`))
	fmt.Println(call(c, "greet", `{"name": "Ada"}`))
	// Output:
	// error: Greetings here are quiet; leave out loud.
	// Greeted Ada.
	//
	// Hello, Ada.
	// (structured: {"text":"Hello, Ada."})
}

// ExampleReply is a transport of one's own: each request goes to
// HandleMessage with a Reply in its context, which writes its response
// once, so that a call that overruns its deadline (a handler stuck in a
// system call) is answered a second after it, through the Reply, while its
// handler runs on.
func ExampleReply() {
	tree, err := sections.NewTree(&sections.Section{Key: "hello", Title: "Hello", Guidance: "Greet people with `greet`.", Stateless: true, Tools: []*tools.Tool{greet}})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "hello", Version: "1.0.0", Tree: tree})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	id := json.RawMessage(`1`)
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`)
	r := server.NewReply(id, func(resp mcp.JSONRPCMessage, early bool) {
		// early: the handler still runs; an HTTP transport closes the
		// connection after this response.
		b, _ := json.Marshal(resp)
		fmt.Println(string(b))
	})
	r.Send(server.HandleMessage(r.Context(context.Background()), srv.MCP(), msg))
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Greeted Ada.\n\nHello, Ada."}],"structuredContent":{"text":"Hello, Ada."}}}
}

// ExampleHandle is a transport that routes each message by its id and
// method: it decodes the message once, with ParseMessage, and hands what
// it decoded to Handle.
func ExampleHandle() {
	tree, err := sections.NewTree(&sections.Section{Key: "hello", Title: "Hello", Guidance: "Greet people with `greet`.", Stateless: true, Tools: []*tools.Tool{greet}})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "hello", Version: "1.0.0", Tree: tree})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	m, err := server.ParseMessage(json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Grace"}}}`))
	if err != nil {
		log.Fatal(err) // a transport answers -32700, or -32600 for a *json.UnmarshalTypeError
	}
	if !m.HasID() {
		return // a notification: handled, and nothing written back
	}
	r := server.NewReply(m.ID, func(resp mcp.JSONRPCMessage, _ bool) {
		b, _ := json.Marshal(resp)
		fmt.Println(m.Method, string(b))
	})
	r.Send(server.Handle(r.Context(context.Background()), srv.MCP(), m))
	// Output:
	// tools/call {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Greeted Grace.\n\nHello, Grace."}],"structuredContent":{"text":"Hello, Grace."}}}
}
