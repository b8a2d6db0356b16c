// Package config reads the server's configuration file.
//
// The file is YAML. Every key is optional, and an empty file (or one with
// only comments) is the default configuration, the one Default returns.
// A typical file:
//
//	sections: [planning]            # which built-in sections are on, in this order
//	planning:
//	  strategy: react               # react | plan_act_reflect | goal_decompose_route_synthesise
//	policies:
//	  sequential_dependency:        # server-wide: tool -> tools that must have succeeded first
//	    planning_add_step: [planning_read_plan]
//	deadline: 30s                   # per-call deadline
//
// The file example.yaml in this package shows every key.
//
// # One declaration per key
//
// Each key is a field of Config or of a type under it, declared once: its
// json tag names the key, its jsonschema tag describes it, and its schema
// tag holds the JSON Schema keywords that constrain it, such as
//
//	MaxAttempts int `json:"max_attempts" jsonschema:"Attempts in all, the first included." schema:"minimum=1,maximum=100"`
//
// The hooks section is hooks.Config itself, with each stage's settings
// declared next to the stage in package hooks. The JSON Schema of the file
// is generated from these types when it is first needed: a time.Duration
// is a string such as "1m30s", a type with an Enum method (such as
// hooks.Fsync) takes one of its values, and each key's default is the
// value Default gives it. The schema tag knows minimum, maximum,
// minLength, minItems, uniqueItems, format and required; a keyword about
// strings on a list of strings is about each string. schema.json holds the
// generated schema for editors; go test ./config -run TestSchemaFile
// -update writes it.
//
// What a schema cannot say is checked in Go: each format (go-duration,
// positive-go-duration and glob here, principal and regexp in
// hooks.Formats) has a check, and workspace.root must be set exactly when
// workspace.backend is disk.
//
// # Errors
//
// Parse and Load check the file against the schema and those checks.
// Anything unexpected is an error, never silently ignored: an unknown key,
// a value of the wrong type or out of range, a duplicate key, YAML
// anchors, aliases and merge keys, or several documents in one file. Each
// problem is a *KeyError naming the file, the key and its line, such as
//
//	config.yaml:3: planning.strategy: must be one of: react, plan_act_reflect, goal_decompose_route_synthesise
//
// and when there are several they come together as Errors, sorted by line.
// Checks that need more than the file, such as a policy or a hook naming a
// tool no section offers, are made when the server is built and reported
// the same way (see Config.Errorf).
//
// The command-line flags --http, --insecure, --allowed-origins,
// --allowed-hosts, --max-body-bytes, --session-ttl, --bearer-token-file,
// --jwks-url, --jwt-issuer and --jwt-audience override the http keys.
package config
