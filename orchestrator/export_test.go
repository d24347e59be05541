package orchestrator

import "testing"

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
