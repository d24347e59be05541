package orchestrator

import (
	"strings"
	"testing"
)

// Test helpers for the external e2e test package (which may import
// internal/drill: an internal test may not, as drill's app imports this
// package).

type ScriptedModel = scriptedModel
type Call = call

var (
	NewScriptedModel = newScriptedModel
	ToolCalls        = toolCalls
	Final            = final
	ToolMessages     = toolMessages
)

func (m *scriptedModel) Client(t testing.TB) *Client { return m.client(t) }
func (m *scriptedModel) Requests() []map[string]any  { return m.requests() }
func NewCall(id, name, args string) Call             { return call{id, name, args} }

// SearchOffline is the offline planner's ranking of the catalog for query:
// "tool word,word" for the entries that fit, best first.
func SearchOffline(p *Planner, query string) []string {
	var out []string
	for _, m := range p.index().search(query, p.now()) {
		if m.fits {
			out = append(out, m.name+" "+strings.Join(m.words, ","))
		}
	}
	return out
}
