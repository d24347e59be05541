package config

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/orchestrator"
)

// TestPlannerBounds: the planner's bounds (issue 32, item 2) are read
// under planner:, zero means the planner's default, and negative values
// are refused.
func TestPlannerConfig(t *testing.T) {
	c, err := Parse([]byte(`
planner: {max_goal_bytes: 4096, max_goal_clauses: 8, max_answer_bytes: 65536, max_concurrent_per_tenant: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := orchestrator.Config{MaxGoalBytes: 4096, MaxGoalClauses: 8, MaxAnswerBytes: 65536, MaxConcurrentPerTenant: 2}
	if got := c.Planner; got.MaxGoalBytes != want.MaxGoalBytes || got.MaxGoalClauses != want.MaxGoalClauses ||
		got.MaxAnswerBytes != want.MaxAnswerBytes || got.MaxConcurrentPerTenant != want.MaxConcurrentPerTenant {
		t.Errorf("planner %+v", got)
	}
	if _, err := Parse([]byte(`planner: {max_goal_clauses: -1}`)); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("negative max_goal_clauses: %v", err)
	}
}

// TestMCPSessionsConfig: the MCP session bounds (issue 32, item 4) are read
// under mcp:, and negative values are refused.
func TestMCPSessionsConfig(t *testing.T) {
	c, err := Parse([]byte(`mcp: {max_sessions_per_key: 50, max_sessions: 500, session_idle_timeout: 90s}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := c.MCP; m.MaxSessionsPerKey != 50 || m.MaxSessions != 500 || m.SessionIdleTimeout.D() != 90*time.Second {
		t.Errorf("mcp %+v", m)
	}
	if _, err := Parse([]byte(`mcp: {session_idle_timeout: -1s}`)); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("negative session_idle_timeout: %v", err)
	}
}
