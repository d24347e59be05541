package config

import (
	"testing"
)

// FuzzParse feeds Parse arbitrary files: it must return a config or an
// error, never panic, and a config it returns must validate again.
func FuzzParse(f *testing.F) {
	f.Add(DefaultYAML())
	for _, s := range []string{
		"",
		"{}",
		"~",
		"# only a comment",
		"addr: 127.0.0.1:0\nauth: {enabled: true}\ntenants: [{id: acme, tools: [\"weather-a__*\"]}]",
		"vendors: [{id: a, mcp: {transport: stdio, command: x}, max_data_level: 3, redact: [phone]}]",
		"capabilities: [{name: a.b, input_schema: {type: object}, chain: [{tool: a/x}]}]",
		"billing: {budgets: [{tenant: \"*\", period: day, limit: \"20\"}]}",
		"outbound: {allow: [127.0.0.1, \"10.0.0.0/8\"], deny: [example.com]}",
		"a: &a [*a, *a]",
		"timeout: 5",
		"vendors: !!map {}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != nil && c.Validate() == nil {
				t.Fatalf("Parse failed (%v) but its config validates", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", err)
		}
		if c.Addr == "" || c.Data == "" || c.MaxBodyBytes == 0 {
			t.Fatalf("defaults not filled: %+v", c)
		}
	})
}
