// Package e2e holds the end-to-end tests of the wink-mcp binary.
//
// The tests build the real binary once (see TestMain) and talk to freshly
// spawned processes over stdio, exactly as an MCP client does. Most cases
// are scenario files under testdata/scenarios (see the README there);
// behaviour that a transcript cannot express (signals, concurrency, log
// output) is tested in Go.
//
//	go test -race ./e2e/                                # run everything
//	go test ./e2e/ -run 'TestScenarios/planning'        # one scenario
//	go test ./e2e/ -run TestScenarios -update           # rewrite the goldens
package e2e
