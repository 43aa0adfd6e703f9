package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestSpecsKeepSchemaKeyOrder: a tool schema written in the registry file
// (YAML or JSON) reaches Specs, and so the chat template, with its keys in
// the order written, nested ones included; decoding into a map and
// marshalling it would sort them, and the prompt would then differ from
// what apply_chat_template renders for the same tools.
func TestSpecsKeepSchemaKeyOrder(t *testing.T) {
	const want = `{"type":"object","required":["zeta"],"properties":{"zeta":{"type":"string","description":"z <first>"},"alpha":{"type":"object","properties":{"y":{"type":"integer"},"b":{"type":"string"}}}}}`
	for name, file := range map[string]string{
		"yaml": `tools:
  - type: calculator
    function:
      name: calc
      parameters:
        type: object
        required: [zeta]
        properties:
          zeta: {type: string, description: "z <first>"}
          alpha:
            type: object
            properties:
              y: {type: integer}
              b: {type: string}
`,
		"json": `{"tools": [{"type": "calculator", "function": {"name": "calc", "parameters": ` + want + `}}]}`,
	} {
		reg, err := ParseRegistry(context.Background(), []byte(file), t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		specs := reg.Specs()
		reg.Close()
		var got bytes.Buffer
		if err := json.Compact(&got, specs[0].Function.Parameters); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Errorf("%s: parameters\n got %s\nwant %s", name, got.String(), want)
		}
	}
}
