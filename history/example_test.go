package history_test

import (
	"fmt"
	"log"

	"github.com/wink-mcp/wink-mcp/history"
	"github.com/wink-mcp/wink-mcp/sections"
)

// Example lists the history section's tools and resource. A server keeps
// the histories they work on when its Options.History is above zero
// (history.retention in the configuration).
func Example() {
	sec := history.New()
	if _, err := sections.NewTree(sec); err != nil {
		log.Fatal(err)
	}
	for _, t := range sec.Tools {
		fmt.Println(t.Name())
	}
	fmt.Println(sec.Resources[0].URI)
	// Output:
	// session_undo
	// session_checkpoint
	// session_restore
	// wink://session/history
}
