package orchestrator

import (
	"time"

	"github.com/toolhub/toolhub/registry"
)

// Config is the planner's section of toolhub.yaml ("planner:"). The zero
// Config plans offline from the catalog, with no LLM.
type Config struct {
	// LLM; no base_url means none (mode auto uses the rules). The API key
	// is not here: the caller passes it to [New] (cmd reads TOOLHUB_LLM_API_KEY).
	LLM Options `yaml:"llm" json:"llm"`
	// Rules are tried before the catalog by the offline planner; nil means
	// none (the catalog alone: names, descriptions, parameters and keywords).
	Rules *Rules `yaml:"rules" json:"rules,omitempty"`
	// MaxSteps, Timeout, MaxTools, Parallel: see [Planner]; zero means the default.
	MaxSteps int      `yaml:"max_steps" json:"max_steps,omitempty"`
	Timeout  Duration `yaml:"timeout" json:"timeout,omitempty"`
	MaxTools int      `yaml:"max_tools" json:"max_tools,omitempty"`
	Parallel int      `yaml:"parallel" json:"parallel,omitempty"`
	// Bounds of one request (docs/security.md); zero means the default.
	// See [Planner]'s fields of the same names.
	MaxGoalBytes           int `yaml:"max_goal_bytes" json:"max_goal_bytes,omitempty"`                       // default 8192
	MaxGoalClauses         int `yaml:"max_goal_clauses" json:"max_goal_clauses,omitempty"`                   // default 16
	MaxAnswerBytes         int `yaml:"max_answer_bytes" json:"max_answer_bytes,omitempty"`                   // default 1 MiB
	MaxConcurrentPerTenant int `yaml:"max_concurrent_per_tenant" json:"max_concurrent_per_tenant,omitempty"` // default 4
}

// New builds a planner from cfg over gw and cat, with apiKey for the LLM.
func New(cfg Config, gw Gateway, cat *registry.Catalog, apiKey string) (*Planner, error) {
	p := &Planner{Gateway: gw, Catalog: cat, MaxSteps: cfg.MaxSteps, Timeout: time.Duration(cfg.Timeout), MaxTools: cfg.MaxTools, Parallel: cfg.Parallel,
		MaxGoalBytes: cfg.MaxGoalBytes, MaxGoalClauses: cfg.MaxGoalClauses, MaxAnswerBytes: cfg.MaxAnswerBytes, MaxConcurrentPerTenant: cfg.MaxConcurrentPerTenant}
	if cfg.Rules != nil {
		p.Rules = *cfg.Rules
	}
	if cfg.LLM.BaseURL != "" {
		o := cfg.LLM
		o.APIKey = apiKey
		c, err := NewClient(o)
		if err != nil {
			return nil, err
		}
		p.Model = c
	}
	if err := p.Init(); err != nil {
		return nil, err
	}
	return p, nil
}
