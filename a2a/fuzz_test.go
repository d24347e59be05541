package a2a

import (
	"testing"

	"github.com/toolhub/toolhub/registry"
)

// FuzzParseCard: any body either fails with an error or gives a card whose
// skills all register as tools with compiling schemas.
func FuzzParseCard(f *testing.F) {
	f.Add([]byte(goodCard))
	f.Add([]byte(`{"name":"A","url":"http://h/","protocolVersion":"0.3.0","skills":[{"id":"s","inputModes":["application/json"]}]}`))
	f.Add([]byte(`{"name":"A","supportedInterfaces":[{"url":"http://h","protocolBinding":"HTTP+JSON","protocolVersion":"1.2"}],"skills":[{"id":"x y/z"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		card, err := ParseCard(body)
		if err != nil {
			return
		}
		if pickInterface(card) == nil {
			t.Fatal("a valid card without a usable interface")
		}
		for _, d := range SkillTools(card) {
			if _, err := registry.CompileSchema(d.InputSchema); err != nil {
				t.Fatalf("skill %q: schema does not compile: %v", d.Name, err)
			}
		}
	})
}
