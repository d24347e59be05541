package orchestrator

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Rules configure the offline rule planner: intents recognised in a goal by
// regular expressions, each mapped to a tool or capability. The zero Rules
// matches nothing; [DefaultRules] matches the example capabilities. It is
// YAML-taggable so it can live in toolhub.yaml under planner.rules.
type Rules struct {
	// Context patterns pick named values out of the whole goal for every
	// intent, e.g. `from (?P<from>{place}) to (?P<to>{place})`.
	Context []string `yaml:"context" json:"context,omitempty"`
	// Intents, in the order their steps appear in the plan.
	Intents []Intent `yaml:"intents" json:"intents"`
	// NoIntegrate leaves out the integrate step that otherwise merges the
	// results when two or more intents match.
	NoIntegrate bool `yaml:"no_integrate" json:"no_integrate,omitempty"`
}

// Intent maps a pattern to a tool call.
//
// Patterns are Go regular expressions; {place} stands for a place name (a
// word, then capitalised words: "Paris", "New York", "paris"). A match
// triggers the intent; its named groups, over the Context values, are the
// values. Each argument is a template: "${a|b}" takes value a, else b, else
// leaves the argument out; anything else is literal. An intent whose
// Required arguments end up missing is skipped.
type Intent struct {
	Name      string            `yaml:"name" json:"name"` // step id
	Tool      string            `yaml:"tool" json:"tool"` // catalog name of a tool or capability
	Pattern   string            `yaml:"pattern" json:"pattern"`
	Arguments map[string]string `yaml:"arguments" json:"arguments,omitempty"`
	Required  []string          `yaml:"required" json:"required,omitempty"`
	Timeout   Duration          `yaml:"timeout" json:"timeout,omitempty"`
	Retries   int               `yaml:"retries" json:"retries,omitempty"`
}

// placeRe is what {place} expands to.
const placeRe = `[\p{L}][\p{L}'’.-]*(?:\s+\p{Lu}[\p{L}'’.-]*)*`

// DefaultRules match the capabilities of the default config: weather,
// route, restaurants and image generation, and trips "from A to B".
func DefaultRules() Rules {
	return Rules{
		Context: []string{
			`(?i:\bfrom)\s+(?P<from>{place})\s+(?i:to)\s+(?P<to>{place})`,
			`\b(?i:trip|visit|travel|holiday|weekend)\s+(?i:to|in)\s+(?P<to>{place})`,
		},
		Intents: []Intent{
			{
				Name: "weather", Tool: "weather.current",
				Pattern:   `(?i:\b(?:weather|temperature|forecast|rain|sunny))(?:\s+(?i:in|for|at)\s+(?P<city>{place}))?`,
				Arguments: map[string]string{"city": "${city|to}"}, Required: []string{"city"},
				Retries: 1,
			},
			{
				Name: "route", Tool: "maps.route",
				Pattern:   `(?i:\b(?:route|directions|drive|driving|walk|walking|transit|get)\b)(?:.*?(?i:\bfrom)\s+(?P<from>{place})\s+(?i:to)\s+(?P<to>{place}))?`,
				Arguments: map[string]string{"from": "${from}", "to": "${to}", "mode": "${mode}"}, Required: []string{"from", "to"},
				Retries: 1,
			},
			{
				Name: "restaurants", Tool: "places.restaurants",
				Pattern:   `(?i:\b(?:restaurants?|eat|food|dinner|lunch|dine))(?:\s+(?i:near|in|around|at)\s+(?:the\s+)?(?P<near>{place}))?`,
				Arguments: map[string]string{"near": "${near|to}"}, Required: []string{"near"},
				Retries: 1,
			},
			{
				Name: "image", Tool: "image.generate",
				Pattern:   `(?i:\b(?:draw|paint|sketch|(?:image|picture|illustration)\s+of))\s+(?i:me\s+)?(?i:an?\s+(?:image|picture)\s+of\s+)?(?P<prompt>[^.!?]+)`,
				Arguments: map[string]string{"prompt": "${prompt}"}, Required: []string{"prompt"},
			},
		},
	}
}

// ErrNoIntent is wrapped when no configured rule matches a goal, and when
// the offline planner can plan no part of it.
var ErrNoIntent = errors.New("orchestrator: no tool fits the goal")

type compiledRules struct {
	r       Rules
	context []*regexp.Regexp
	intents []*regexp.Regexp
}

var tmplRe = regexp.MustCompile(`^\$\{([a-zA-Z0-9_|]+)\}$`)

func compileRules(r Rules) (*compiledRules, error) {
	c := &compiledRules{r: r}
	comp := func(what, p string) (*regexp.Regexp, error) {
		re, err := regexp.Compile(strings.ReplaceAll(p, "{place}", placeRe))
		if err != nil {
			return nil, fmt.Errorf("orchestrator: rules: %s: %v", what, err)
		}
		return re, nil
	}
	for i, p := range r.Context {
		re, err := comp(fmt.Sprintf("context[%d]", i), p)
		if err != nil {
			return nil, err
		}
		c.context = append(c.context, re)
	}
	seen := map[string]bool{}
	for _, in := range r.Intents {
		if !stepIDRe.MatchString(in.Name) || in.Name == IntegrateTool || seen[in.Name] {
			return nil, fmt.Errorf("orchestrator: rules: intent name %q must be unique, not %q, and match %s", in.Name, IntegrateTool, stepIDRe)
		}
		seen[in.Name] = true
		if in.Tool == "" {
			return nil, fmt.Errorf("orchestrator: rules: intent %q: tool is required", in.Name)
		}
		re, err := comp("intent "+in.Name, in.Pattern)
		if err != nil {
			return nil, err
		}
		c.intents = append(c.intents, re)
	}
	return c, nil
}

// plan turns goal into a plan: one step per matching intent, in parallel,
// then an integrate step over them when two or more match.
func (c *compiledRules) plan(goal string) (*Plan, error) {
	ctxVals := map[string]string{}
	for _, re := range c.context {
		collect(re, goal, ctxVals)
	}
	p := &Plan{Goal: goal}
	var ids []string
	for i, in := range c.r.Intents {
		if !c.intents[i].MatchString(goal) {
			continue
		}
		vals := map[string]string{}
		for k, v := range ctxVals {
			vals[k] = v
		}
		collect(c.intents[i], goal, vals)
		args := map[string]any{}
		for name, t := range in.Arguments {
			if m := tmplRe.FindStringSubmatch(t); m != nil {
				for _, k := range strings.Split(m[1], "|") {
					if v := vals[k]; v != "" {
						args[name] = v
						break
					}
				}
				continue
			}
			args[name] = t
		}
		ok := true
		for _, r := range in.Required {
			if _, has := args[r]; !has {
				ok = false
			}
		}
		if !ok {
			continue
		}
		p.Steps = append(p.Steps, Step{ID: in.Name, Tool: in.Tool, Arguments: args, Timeout: in.Timeout, Retries: in.Retries, OnFailure: Degrade})
		ids = append(ids, in.Name)
	}
	if len(ids) == 0 {
		names := make([]string, len(c.r.Intents))
		for i, in := range c.r.Intents {
			names[i] = in.Name
		}
		return nil, fmt.Errorf("%w %q (known intents: %s; name a place, e.g. \"weather in Paris\"; or configure an LLM for free-form goals)", ErrNoIntent, goal, strings.Join(names, ", "))
	}
	if len(ids) > 1 && !c.r.NoIntegrate {
		p.Steps = append(p.Steps, Step{ID: IntegrateTool, Tool: IntegrateTool, DependsOn: ids})
	}
	return p, nil
}

// collect adds the named groups of re's first match in s to vals.
func collect(re *regexp.Regexp, s string, vals map[string]string) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return
	}
	for i, name := range re.SubexpNames() {
		if name != "" && m[i] != "" {
			vals[name] = strings.TrimSpace(m[i])
		}
	}
}
