package conformance

import (
	"testing"

	"github.com/wink-mcp/wink-mcp/sections"
)

// TestSectionIsValid checks that every fixture obeys the tool rules (names,
// descriptions, titles, schemas) so that the section can be turned on.
func TestSectionIsValid(t *testing.T) {
	tree, err := sections.NewTree(New())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tree.Tools()); got != 14 {
		t.Errorf("%d tools, want 14", got)
	}
}

// TestExplicitSchemaIsAdvertisedAsGiven checks that the 2020-12 keywords
// of json_schema_2020_12_tool survive.
func TestExplicitSchemaIsEnforced(t *testing.T) {
	tl := jsonSchema2020()
	if err := tl.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Parse([]byte(`{"name":"a","address":{"city":"b"}}`)); err != nil {
		t.Errorf("valid arguments rejected: %v", err)
	}
	if _, err := tl.Parse([]byte(`{"nope":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
	if _, err := tl.Parse([]byte(`{"address":{"city":1}}`)); err == nil {
		t.Error("city of the wrong type accepted through $ref")
	}
}
