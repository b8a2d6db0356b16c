// Package tools defines what a tool is and what a call to it carries.
//
// A tool is built from a params struct, a result type and a typed handler
// with New. Its input schema is inferred from the params type once, at
// construction, by github.com/google/jsonschema-go, then compiled once; the
// schema advertised to clients is exactly the one enforced. A struct result
// also gets an output schema and is sent as structured content.
//
// The package also holds the call pipeline's vocabulary: Call (the value
// every stage is handed: the arguments in), Outcome (what comes back: the
// result out, and what the stages report about the call, such as a cache
// hit, the retries, the arguments as logged and the recorded event),
// Handler, Middleware and Chain, Slot (the places in the pipeline where
// stages besides the server's own run), and Finalise, the outermost stage,
// which runs the finalisers that stages register with Call.Finally. The
// server's own stages live in package server, the lifecycle stages
// (authorise, rate limit, cache, ...) in package hooks, the policy
// decisions in package policy.
//
// Besides package session, tools imports only types of mcp-go's mcp
// package: content blocks, so that a handler can return images, audio or
// embedded resources alongside its text, and the sampling and elicitation
// messages of Client, through which a handler asks the client for a model's
// message or the user's input.
package tools
