package formats_test

import (
	"context"
	"fmt"
	"os"

	"github.com/wink-mcp/wink-mcp/formats"
	"github.com/wink-mcp/wink-mcp/store"
)

// A store opened with the steps of every earlier format is migrated as it
// opens, whichever format it was written in.
func ExampleSteps() {
	dir, err := os.MkdirTemp("", "wink-state-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := store.OpenEmbedded(context.Background(), dir, store.Options{Migrations: formats.Steps()})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	fmt.Println("store format", store.Format)
	// Output: store format 6
}
