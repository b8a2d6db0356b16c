package merkle_test

import (
	"fmt"

	"github.com/wink-mcp/wink-mcp/merkle"
)

// A map stored once, changed, and stored again: the second Store puts only
// the blobs of the part the change made, and the map loads back from them.
func ExampleMap() {
	blobs := map[string][]byte{}
	put := func(h string, b []byte) { blobs[h] = b }
	get := func(h string) ([]byte, error) { return blobs[h], nil }

	var m merkle.Map[string]
	for i := range 10000 {
		m = m.Set(fmt.Sprintf("src/file%05d.go", i), "v1")
	}
	if _, err := m.Store(nil, merkle.Strings, put); err != nil {
		panic(err)
	}
	stored := len(blobs)

	changed := m.Set("src/file05000.go", "v2")
	h, err := changed.Store(&m, merkle.Strings, put)
	if err != nil {
		panic(err)
	}
	fmt.Println("blobs put by the change:", len(blobs)-stored <= 4)

	loaded, err := merkle.LoadMap(h, get, merkle.Strings)
	if err != nil {
		panic(err)
	}
	v, _ := loaded.Get("src/file05000.go")
	fmt.Println(loaded.Len(), v)
	// Output:
	// blobs put by the change: true
	// 10000 v2
}
