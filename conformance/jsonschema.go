package conformance

import (
	"github.com/wink-mcp/wink-mcp/tools"
)

// Address is the address of JSONSchemaParams.
type Address struct {
	Street string `json:"street,omitempty"`
	City   string `json:"city,omitempty"`
}

// JSONSchemaParams are the arguments of json_schema_2020_12_tool.
type JSONSchemaParams struct {
	Name    string   `json:"name,omitempty"`
	Address *Address `json:"address,omitempty"`
}

// jsonSchema2020Input is the tool's input schema, with keywords of JSON
// Schema 2020-12 that inferred schemas do not use ($schema, $defs, $ref).
const jsonSchema2020Input = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"}
      }
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"}
  },
  "additionalProperties": false
}`

func jsonSchema2020() *tools.Tool {
	return tools.New("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features.", readOnly("JSON Schema 2020-12"),
		func(_ *tools.Context, p JSONSchemaParams) (tools.Result[noValue], error) {
			city := ""
			if p.Address != nil {
				city = p.Address.City
			}
			return ok("Received name=" + p.Name + ", city=" + city + "."), nil
		},
		tools.WithInputSchema(jsonSchema2020Input))
}
