package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPlacesEveryProblem(t *testing.T) {
	const text = `addr: 127.0.0.1:8080
timeout: 5
adr: x
log_level: loud
vendors:
  - id: a
    mcp: {transport: stdio, command: x}
    timeout: soon
    limits: {rps: 1, burts: 2}
billing:
  cache_price: abc
`
	got := Check("toolhub.yaml", []byte(text))
	want := []struct {
		line int
		has  []string
		not  string
	}{
		{2, []string{`timeout: duration "5"`}, ""},
		{3, []string{`unknown key "adr" at the top level`, "addr"}, "type config"},
		{8, []string{`vendors[0].timeout: duration "soon"`}, ""},
		{9, []string{`unknown key "burts" under vendors[0].limits`, "burst"}, "registry.Limits"},
		{11, []string{`billing.cache_price`, `"abc"`}, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), got)
	}
	for i, w := range want {
		s := got[i].String()
		if got[i].Line != w.line || !strings.HasPrefix(s, "toolhub.yaml:") {
			t.Errorf("problem %d = %q, want line %d", i, s, w.line)
		}
		for _, h := range w.has {
			if !strings.Contains(s, h) {
				t.Errorf("problem %d = %q, want it to say %q", i, s, h)
			}
		}
		if w.not != "" && strings.Contains(s, w.not) {
			t.Errorf("problem %d = %q says %q", i, s, w.not)
		}
	}
}

func TestCheckPlacesValidationErrors(t *testing.T) {
	const text = `log_level: loud
vendors:
  - id: a
    mcp: {transport: stdio, command: x}
  - id: a
    mcp: {transport: stdio, command: x}
  - id: b
    mcp:
      transport: stdio
capabilities:
  - name: w.current
    chain:
      - tool: a/x
      - tool: nope/x
fallback:
  capabilities:
    w.current: {policy: fastest}
`
	got := Check("f.yaml", []byte(text))
	want := map[string]int{
		`log_level "loud"`:                1,
		`vendor "a" is declared twice`:    5,
		`transport stdio needs a command`: 9,
		`vendor "nope" is not declared`:   14,
		`unknown policy "fastest"`:        17,
	}
	for msg, line := range want {
		found := false
		for _, p := range got {
			if strings.Contains(p.Message, msg) {
				found = true
				if p.Line != line {
					t.Errorf("%q at line %d, want %d", p, p.Line, line)
				}
			}
		}
		if !found {
			t.Errorf("no problem says %q: %v", msg, got)
		}
	}
}

func TestCheckTypesAndSyntax(t *testing.T) {
	got := Check("f.yaml", []byte("addr: [1]\ninstances: many\n"))
	if len(got) != 2 || got[0].Line != 1 || got[1].Line != 2 || !strings.Contains(got[1].Message, "want an integer") {
		t.Errorf("type errors: %v", got)
	}
	got = Check("f.yaml", []byte("a: b: c\n"))
	if len(got) != 1 || got[0].String() != "f.yaml:1: YAML syntax: mapping values are not allowed in this context" {
		t.Errorf("syntax error on line 1: %v", got)
	}
	got = Check("f.yaml", []byte("addr: 127.0.0.1:1\ndata: a: b\n"))
	if len(got) != 1 || got[0].Line != 2 {
		t.Errorf("syntax error on line 2: %v", got)
	}
}

func TestCheckDefaultAndExampleAreClean(t *testing.T) {
	if got := CheckFile(""); len(got) != 0 {
		t.Errorf("embedded default: %v", got)
	}
	path := filepath.Join("..", "..", "examples", "toolhub.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	if got := CheckFile(path); len(got) != 0 {
		t.Errorf("%s: %v", path, got)
	}
}

// FuzzCheck: any text gets problems or none, never a panic, and a text
// Check finds nothing wrong with is one Parse accepts.
func FuzzCheck(f *testing.F) {
	f.Add([]byte("timeout: 5\nadr: x\n"))
	f.Add([]byte("vendors:\n  - id: a\n    mcp: {transport: stdio}\n"))
	f.Add([]byte("a: b: c"))
	f.Add(DefaultYAML())
	f.Fuzz(func(t *testing.T, data []byte) {
		ps := Check("f.yaml", data)
		for _, p := range ps {
			if p.File != "f.yaml" || p.Line < 0 {
				t.Fatalf("problem %+v", p)
			}
		}
		if _, err := Parse(data); len(ps) == 0 && err != nil {
			t.Fatalf("Check finds nothing, Parse refuses: %v", err)
		}
	})
}
