package orchestrator

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/toolhub/toolhub/registry"
)

// Visibility says whether a tenant may see a catalog entry. *hub.Gateway
// implements it.
type Visibility interface {
	Visible(tenant string, e registry.Entry) bool
}

// Functions renders tenant's view of cat as OpenAI function-calling specs
// (capabilities first, then vendor tools). With n > 0 it keeps only the n
// entries most relevant to goal, most relevant first: relevance is the number
// of distinct goal words found in an entry's name and description (a word
// matches another when one is a prefix of the other and the shorter has at
// least 4 letters, so "restaurant" matches "restaurants"); ties keep catalog
// order. A nil vis shows every entry.
func Functions(cat *registry.Catalog, vis Visibility, tenant, goal string, n int) []registry.FunctionTool {
	var keep func(registry.Entry) bool
	if vis != nil {
		keep = func(e registry.Entry) bool { return vis.Visible(tenant, e) }
	}
	specs := registry.FunctionSpecs(cat.Entries(keep))
	if n <= 0 || n >= len(specs) && goal == "" {
		return specs
	}
	return rank(specs, goal, n)
}

// rank keeps the n specs most relevant to goal, stable on ties.
func rank(specs []registry.FunctionTool, goal string, n int) []registry.FunctionTool {
	want := tokens(goal)
	type scored struct {
		i, score int
	}
	s := make([]scored, len(specs))
	for i, f := range specs {
		have := tokens(f.Function.Name + " " + f.Function.Description)
		score := 0
		for w := range want {
			for h := range have {
				if wordMatch(w, h) {
					score++
					break
				}
			}
		}
		s[i] = scored{i, score}
	}
	slices.SortStableFunc(s, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	if n > len(s) {
		n = len(s)
	}
	out := make([]registry.FunctionTool, n)
	for i := range n {
		out[i] = specs[s[i].i]
	}
	return out
}

func wordMatch(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 4 && strings.HasPrefix(b, a)
}

// stopwords are left out of relevance: they match everything.
var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"for": true, "from": true, "on": true, "at": true, "by": true, "with": true, "me": true, "my": true,
	"is": true, "it": true, "be": true, "what": true, "please": true, "then": true, "tries": true,
}

// tokens splits s into lower-case words on anything but letters and
// digits (so "weather.current" and "maps__route" split too).
func tokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) > 1 && !stopwords[w] {
			out[w] = true
		}
	}
	return out
}
