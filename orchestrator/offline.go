package orchestrator

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolhub/toolhub/registry"
)

// The offline planner: it reads a goal against whatever catalog the tenant
// can see, without a model. A goal is split into clauses; each clause is
// matched to the tool or capability that fits it best (or to none, said so
// with the closest tools), and its arguments are filled from the tool's input
// schema. Independent steps run in parallel and an integrate step merges
// them.

// Reasons a clause was not planned.
const (
	ReasonNoMatch    = "no_match"          // nothing in the catalog fits
	ReasonNotVisible = "not_visible"       // tools that fit exist, but the tenant may not use them
	ReasonMissing    = "missing_arguments" // a tool fits, but the goal does not say a required argument
	ReasonInvalid    = "invalid_arguments" // a tool fits, but the arguments read from the goal break its schema
	ReasonTooLarge   = "too_large"         // the goal has more clauses than the planner reads (Planner.MaxGoalClauses)
	ReasonCondition  = "condition"         // a condition ("if it's sunny"): the planner plans the steps, it does not check it
)

// Unplanned is a clause of a goal the offline planner did not turn into a
// step, and why.
type Unplanned struct {
	Clause      string   `json:"clause"`
	Reason      string   `json:"reason"` // ReasonNoMatch, ReasonNotVisible, ReasonMissing, ReasonInvalid, ReasonTooLarge, ReasonCondition
	Message     string   `json:"message"`
	Tool        string   `json:"tool,omitempty"`        // the tool that fits (missing or invalid arguments)
	Missing     []string `json:"missing,omitempty"`     // required arguments the goal does not give
	Suggestions []string `json:"suggestions,omitempty"` // the closest tools the tenant can use
}

// minScore is the least score of a clause's best entry for it to be used.
const minScore = 1.0

// offline holds the planner's index of the catalog, updated when the
// catalog or the configured keywords change: only the vendors whose tools
// (or keywords) changed are indexed again (offlineIndex.update).
type offline struct {
	mu sync.Mutex
	ix atomic.Pointer[offlineIndex]
}

func (p *Planner) index() *offlineIndex {
	if p.Catalog == nil {
		return nil
	}
	version := p.Catalog.Version()
	if ix := p.off.ix.Load(); ix != nil && ix.version == version && (p.Keywords == nil || ix.fp == ix.keywordsFP(p.Keywords)) {
		return ix
	}
	p.off.mu.Lock()
	defer p.off.mu.Unlock()
	old := p.off.ix.Load()
	if old != nil && old.version == version && (p.Keywords == nil || old.fp == old.keywordsFP(p.Keywords)) {
		return old
	}
	var ix *offlineIndex
	if old != nil {
		ix = old.update(p.Catalog, version, p.Keywords)
	}
	if ix == nil {
		ix = buildIndex(version, p.Catalog.Entries(nil), p.Keywords)
	}
	p.off.ix.Store(ix)
	return ix
}

// PlanOffline plans goal for tenant from the catalog alone, without
// running anything: the plan (possibly with no steps) and the clauses it
// could not plan.
func (p *Planner) PlanOffline(tenant, goal string) (*Plan, []Unplanned) {
	ix := p.index()
	plan := &Plan{Goal: goal}
	if ix == nil {
		return plan, []Unplanned{{Clause: goal, Reason: ReasonNoMatch, Message: "the planner has no catalog"}}
	}
	vis := make([]bool, len(ix.entries))
	v := p.visibility()
	for i, e := range ix.entries {
		vis[i] = e != nil && (v == nil || v.Visible(tenant, e.e))
	}
	return ix.plan(goal, vis, orDefault(p.MaxGoalClauses, DefaultMaxGoalClauses), p.now())
}

// clause is a part of a goal that asks for one thing.
type clause struct {
	toks       []token
	start, end int
	ranked     []match
	best       int // index into ranked of the chosen visible entry, or -1
	// scored is best as the scores choose it (and a capability over its
	// vendor tool), before the generic words are set aside
	// (preferSpecific) and the clause's first word may name another entry
	// (preferLeadVerb): tool search takes it first.
	scored    int
	places    places
	placeToks map[int]bool // tokens read as places
	values    clauseValues
	names     tokenNames
	// before and after are the separators around the clause, lower-case
	// ("and", "，", "if"; "" at the ends of the goal).
	before, after string
	cond          bool // it follows "if", 如果: a condition
	// laterDay: it names no day of its own but "that day" (那天), and the
	// clause before names a day later than tomorrow.
	laterDay bool
}

// condOnly says whether a condition clause is only the condition, its
// action following ("if it's sunny, find …", 如果下雨的话，…, 跌了就…).
func (c *clause) condOnly() bool {
	return c.after != "" && !andLike[c.after]
}

// places a clause names. A clause that says "there" or "附近" names none of
// its own and so reuses the last one named.
type places struct {
	place, origin, dest string
	// fromThere and toThere: the clause goes from or to the place named
	// before ("drive to Mombasa from there", 从那里去机场), a route's other end.
	fromThere, toThere bool
	// at is where the user said they are (我在深圳北站, "I'm at Union
	// Station"): a later route's start when it names none.
	at string
	// party is how many people a clause before counted ("for 4 of us"):
	// a later step's guests or passengers when it counts none.
	party int
}

func (pl places) any() string {
	switch {
	case pl.place != "":
		return pl.place
	case pl.dest != "":
		return pl.dest
	}
	return pl.origin
}

// plan plans goal for the entries vis marks visible; now dates "tomorrow".
// A goal of more than maxClauses clauses is not planned: its one Unplanned
// says so.
func (ix *offlineIndex) plan(goal string, vis []bool, maxClauses int, now time.Time) (*Plan, []Unplanned) {
	folded := hanFold(unsay(unlist(goal)))
	plan, unplanned := ix.planFolded(folded, vis, maxClauses, now)
	if folded != goal {
		restoreTyped(goal, folded, plan, unplanned)
		plan.Goal = goal
	}
	return plan, unplanned
}

// planFolded plans a goal hanFold has folded.
func (ix *offlineIndex) planFolded(goal string, vis []bool, maxClauses int, now time.Time) (*Plan, []Unplanned) {
	clauses := splitConditions(splitClauses(tokenize(goal, ix.dict)))
	if len(clauses) > maxClauses {
		return &Plan{Goal: goal}, []Unplanned{{Clause: cut(goal, 200), Reason: ReasonTooLarge, Message: tooManyClauses(len(clauses), maxClauses).Message}}
	}
	ix.rankClauses(goal, clauses, vis, now)
	clauses = ix.splitSpaced(goal, clauses, vis, now)
	clauses = ix.joinClauses(goal, clauses, now)
	clauses = ix.joinUnfit(goal, clauses, vis, now)
	clauses = ix.joinPrompt(goal, clauses, vis, now)
	b := &planBuilder{ix: ix, goal: goal, vis: vis, plan: &Plan{Goal: goal}, seen: map[string]int{}, taken: map[string]bool{IntegrateTool: true}, lastNoMatch: -1, lastMissing: -1, today: now.Format(time.DateOnly)}
	b.build(clauses)
	return b.plan, b.unplanned
}

// planBuilder turns ranked clauses into steps and unplanned clauses.
type planBuilder struct {
	ix        *offlineIndex
	goal      string
	vis       []bool
	plan      *Plan
	unplanned []Unplanned
	ids       []string
	seen      map[string]int // a step's tool and arguments (but kinds) → its index in plan.Steps
	taken     map[string]bool
	partial   []partialStep // the clauses that miss arguments (dropAnswered)
	// lastNoMatch is the clause of the last unplanned entry when it is
	// no_match (else -1), noMatchFrom the first clause it spans.
	lastNoMatch, noMatchFrom int
	// lastMissing is the clause of the last unplanned entry when it misses
	// arguments (else -1), missingFrom the first clause it spans.
	lastMissing, missingFrom int
	today                    string // the planner's day, YYYY-MM-DD
}

// noMatchMessage says why nothing was planned for a clause no tool fits.
const noMatchMessage = "no tool in the catalog fits this (list the catalog with GET /v1/tools, or configure an LLM for free-form goals)"

// sameEntry says whether two ranked clauses chose the same entry.
func sameEntry(a, b *clause) bool {
	return a.best >= 0 && b.best >= 0 && a.ranked[a.best].entry == b.ranked[b.best].entry
}

// sameMissing says whether two unplanned entries miss the same arguments
// of the same tool.
func sameMissing(a, b Unplanned) bool {
	return a.Reason == ReasonMissing && b.Reason == ReasonMissing && a.Tool == b.Tool && slices.Equal(a.Missing, b.Missing)
}

func (b *planBuilder) build(clauses []clause) {
	// The place a clause without its own refers to: the last one named
	// before it, or else the first one named after it (later[i+1]: the
	// first named after clause i).
	var ctx places
	var dates []value       // the dates named last: a clause without its own takes them ("后天从深圳飞曼谷，顺便看看曼谷的酒店")
	var remarks []Unplanned // clauses that only remark (remark), reported when nothing is planned
	party := 0              // the people counted last ("for 4 of us")
	later := make([]string, len(clauses)+1)
	for i := len(clauses) - 1; i >= 0; i-- {
		if later[i] = clauses[i].places.any(); later[i] == "" {
			later[i] = later[i+1]
		}
	}
	for i := range clauses {
		c := &clauses[i]
		text := strings.TrimSpace(b.goal[c.start:c.end])
		switch {
		case i > 0 && neverMind(c):
			// 不下雨就算了, "otherwise nvm we'll walk": the other branch of a
			// condition asks for nothing.
			continue
		case c.cond && c.condOnly():
			b.condition(clauses, i, ctx, text)
		case c.best >= 0 && i > 0 && sameEntry(&clauses[i-1], c) && statement(c, true) && refersBack(c),
			c.best >= 0 && b.lastNoMatch == i-1 && i > 0 && fragment(c):
			// "create a picture of a cake … I should like to print it for
			// my granddaughter's card": what the user will do with it;
			// "whats the weather gonna be in austin on monday week? bbq
			// cookoff and i aint tryna melt": after a request no tool
			// serves, a fragment that asks nothing is its context.
			remarks = append(remarks, Unplanned{Clause: text, Reason: ReasonNoMatch, Message: noMatchMessage})
		case c.best >= 0:
			if len(c.values.dates) == 0 {
				c.values.dates = dates
			}
			n := len(b.unplanned)
			ctx.party = party
			if i+1 < len(clauses) && clauses[i+1].best < 0 && !clauses[i+1].cond {
				// "flights from Cork to Lanzarote on the 22nd, there's
				// the two of us going": a part after it counts its people.
				if n := peopleCount(slices.Concat(c.toks, clauses[i+1].toks)); n > 0 {
					ctx.party = n // ("for me and my two sisters": the part after "and" too)
				}
			}
			b.step(c, text, ctx, later[i+1])
			if len(b.unplanned) == n+1 && n > 0 && b.lastMissing == i-1 && sameMissing(b.unplanned[n-1], b.unplanned[n]) {
				// "any halal spots near me? starving": one request that
				// misses the same arguments, said twice.
				b.unplanned[n-1].Clause = strings.TrimSpace(b.goal[clauses[b.missingFrom].start:c.end])
				b.unplanned = b.unplanned[:n]
				b.partial = slices.DeleteFunc(b.partial, func(p partialStep) bool { return p.at >= n })
				b.lastMissing = i
			} else if len(b.unplanned) == n+1 && b.unplanned[n].Reason == ReasonMissing {
				b.lastMissing, b.missingFrom = i, i
			}
			if len(b.unplanned) > n && b.unplanned[n].Reason == ReasonMissing && statement(c, false) {
				// "My Lisbon meeting has moved, …": it names what a tool
				// takes but asks nothing of it.
				remarks = append(remarks, b.unplanned[n:]...)
				b.unplanned = b.unplanned[:n]
				b.partial = slices.DeleteFunc(b.partial, func(p partialStep) bool { return p.at >= n })
			}
			if c.cond {
				b.unplanned = append(b.unplanned, Unplanned{Clause: text, Reason: ReasonCondition,
					Message: "the offline planner does not check conditions: this step runs whatever the condition says"})
			}
		default:
			if u, ok := b.ix.unplanned(text, c, b.vis); ok {
				switch {
				case u.Reason == ReasonNoMatch && (remark(c) || followUp(c) || statement(c, true) || aside(c)):
					remarks = append(remarks, u)
				case u.Reason == ReasonNoMatch && b.lastNoMatch == i-1 && i > 0:
					// "need a table for 4 tonight around 8, can you reserve
					// for us?": one request no tool serves, said in two parts.
					last := &b.unplanned[len(b.unplanned)-1]
					last.Clause = strings.TrimSpace(b.goal[clauses[b.noMatchFrom].start:c.end])
					b.lastNoMatch = i
				default:
					b.unplanned = append(b.unplanned, u)
					if u.Reason == ReasonNoMatch {
						b.lastNoMatch, b.noMatchFrom = i, i
					}
				}
			}
		}
		if len(c.values.dates) > 0 {
			dates = c.values.dates
		}
		if n := peopleCount(c.toks); n > 0 {
			party = n
		}
		if c.places.any() != "" && !b.placeInText(c) {
			at := ctx.at
			if userAt(text) {
				at = c.places.any()
			}
			ctx = c.places
			ctx.at = at
			if ctx.place == "" {
				ctx.place = c.places.any()
			}
		}
	}
	b.fillListed()
	b.dropAnswered()
	if len(b.plan.Steps) == 0 && len(b.unplanned) == 0 {
		// A remark beside nothing planned, nor said, may be what the
		// user asks (beside a request no tool serves it is its context:
		// "reserve a table at Nando's, it's my bru's birthday").
		b.unplanned = append(b.unplanned, remarks...)
	}
	if len(b.ids) > 1 {
		b.plan.Steps = append(b.plan.Steps, Step{ID: IntegrateTool, Tool: IntegrateTool, DependsOn: b.ids})
	}
	if len(b.plan.Steps) == 0 && len(b.unplanned) == 0 {
		// Only scene-setting and places, or nothing readable: say so.
		b.unplanned = append(b.unplanned, Unplanned{Clause: strings.TrimSpace(b.goal), Reason: ReasonNoMatch,
			Message: noMatchMessage})
	}
}

// placeInText says whether clause c's places are words of the text its
// tool takes, not where later steps happen ("draw a dragon over Hong Kong
// harbour, then how long to my office": from where is not said).
func (b *planBuilder) placeInText(c *clause) bool {
	if c.best < 0 {
		return false
	}
	for _, p := range b.ix.entries[c.ranked[c.best].entry].params {
		if p.ofPlace() {
			return false
		}
	}
	return true
}

// step plans clause c with its best entry, or says why it cannot.
func (b *planBuilder) step(c *clause, text string, ctx places, later string) {
	oe, args, missing, err := b.fillStep(c, ctx, later)
	lang := ""
	if len(missing) > 0 {
		lang = unservedLanguage(c, oe, missing)
	}
	switch {
	case lang != "":
		// "translate … into Urdu" of a tool whose languages lack Urdu: no
		// value the user could add makes it serve this.
		b.unplanned = append(b.unplanned, Unplanned{Clause: text, Reason: ReasonNoMatch, Suggestions: []string{oe.e.Name},
			Message: fmt.Sprintf("%s does not offer %s (no tool in the catalog does)", oe.e.Name, lang)})
	case len(missing) > 0:
		b.partial = append(b.partial, partialStep{at: len(b.unplanned), args: args, oe: oe, listed: andLike[c.after]})
		b.unplanned = append(b.unplanned, Unplanned{Clause: text, Reason: ReasonMissing, Tool: oe.e.Name, Missing: missing,
			Message: fmt.Sprintf("%s needs %s; say it in the goal (e.g. %s)", oe.e.Name, strings.Join(missing, " and "), example(oe, missing))})
	case err != nil:
		b.unplanned = append(b.unplanned, Unplanned{Clause: text, Reason: ReasonInvalid, Tool: oe.e.Name,
			Message: fmt.Sprintf("%s: the arguments read from the goal do not fit its schema: %v", oe.e.Name, err)})
	default:
		b.addStep(oe, args)
	}
}

// unservedLanguage returns the language a clause names ("into Urdu", 翻译成泰语)
// when a missing parameter of oe chooses a language and none of its values
// is that one, else "".
func unservedLanguage(c *clause, oe *offEntry, missing []string) string {
	for _, p := range oe.params {
		if len(p.enum) == 0 || !slices.Contains(missing, p.name) || !strings.Contains(strings.ToLower(p.name+" "+p.desc), "lang") {
			continue
		}
		for i, t := range c.toks {
			if name := languageNames[strings.ToLower(t.text)]; name != "" && p.syn[strings.ToLower(t.text)] == nil {
				return name
			}
			if lw := strings.ToLower(t.text); (lw == "to" || lw == "into") && i > 0 && c.toks[i-1].kind == tQuote && i+1 < len(c.toks) {
				// "translate 'thank you' to Ilocano": a language named after
				// the text that is none of the tool's nor a place.
				if w := c.toks[i+1]; w.kind == tWord && isCapitalised(w.text) && p.syn[strings.ToLower(w.text)] == nil && gazetteerName(c.toks, i+1) == 0 && !englishPlaceNames[strings.ToLower(w.text)] {
					return w.text
				}
			}
			if t.kind == tHan || t.kind == tHanRaw {
				for _, w := range hanLanguages {
					if strings.Contains(t.text, w) && p.syn[w] == nil {
						return languageNames[w]
					}
				}
			}
		}
	}
	return ""
}

// languageNames are languages a translation may be asked into, by their
// English and Chinese names.
var languageNames = map[string]string{"urdu": "Urdu", "hindi": "Hindi", "bengali": "Bengali", "punjabi": "Punjabi", "tamil": "Tamil",
	"telugu": "Telugu", "thai": "Thai", "vietnamese": "Vietnamese", "indonesian": "Indonesian", "malay": "Malay", "tagalog": "Tagalog",
	"filipino": "Filipino", "swahili": "Swahili", "turkish": "Turkish", "persian": "Persian", "farsi": "Persian", "hebrew": "Hebrew",
	"greek": "Greek", "polish": "Polish", "dutch": "Dutch", "swedish": "Swedish", "norwegian": "Norwegian", "danish": "Danish",
	"finnish": "Finnish", "czech": "Czech", "hungarian": "Hungarian", "romanian": "Romanian", "ukrainian": "Ukrainian", "amharic": "Amharic",
	"yoruba": "Yoruba", "zulu": "Zulu", "afrikaans": "Afrikaans", "nepali": "Nepali", "sinhala": "Sinhala", "burmese": "Burmese",
	"khmer": "Khmer", "mongolian": "Mongolian", "kazakh": "Kazakh", "uzbek": "Uzbek",
	"泰语": "Thai", "越南语": "Vietnamese", "印地语": "Hindi", "乌尔都语": "Urdu", "土耳其语": "Turkish", "希腊语": "Greek", "荷兰语": "Dutch",
	"波兰语": "Polish", "瑞典语": "Swedish", "印尼语": "Indonesian", "马来语": "Malay", "希伯来语": "Hebrew", "波斯语": "Persian",
	"斯瓦希里语": "Swahili", "泰文": "Thai", "越南文": "Vietnamese"}

// hanLanguages are the Chinese names of languageNames, longest first: a
// Chinese run is searched for them in this order.
var hanLanguages = hanKeys(languageNames)

// partialStep is a clause a tool fits that misses arguments: its
// unplanned entry (at) and the arguments it has.
type partialStep struct {
	at     int
	args   map[string]any
	oe     *offEntry
	listed bool // listed with the clause after it ("200 USD and 150 EUR in CNY")
}

// fillListed plans a clause listed with the one after it that misses
// only what that one's step of the same tool says: "200 USD and 150 EUR in
// CNY", 200美元和150欧元分别是多少人民币 — both to yuan.
func (b *planBuilder) fillListed() {
	drop := map[int]bool{}
	for _, ps := range b.partial {
		if !ps.listed || len(ps.args) == 0 {
			continue
		}
		u := b.unplanned[ps.at]
		for _, st := range b.plan.Steps {
			if st.Tool != u.Tool || !slices.ContainsFunc(u.Missing, func(k string) bool { return st.Arguments[k] != nil }) {
				continue
			}
			args := maps.Clone(ps.args)
			for _, k := range u.Missing {
				args[k] = st.Arguments[k]
			}
			if slices.ContainsFunc(u.Missing, func(k string) bool { return args[k] == nil }) || ps.oe.validate != nil && ps.oe.validate(args) != nil {
				continue
			}
			b.addStep(ps.oe, args)
			drop[ps.at] = true
			break
		}
	}
	b.dropUnplanned(drop)
}

// dropUnplanned removes the unplanned entries at the indexes drop holds.
func (b *planBuilder) dropUnplanned(drop map[int]bool) {
	if len(drop) == 0 {
		return
	}
	kept, moved := b.unplanned[:0], map[int]int{}
	for i, u := range b.unplanned {
		if !drop[i] {
			moved[i] = len(kept)
			kept = append(kept, u)
		}
	}
	if b.unplanned = kept; len(kept) == 0 {
		b.unplanned = nil
	}
	b.partial = slices.DeleteFunc(b.partial, func(p partialStep) bool { return drop[p.at] })
	for i := range b.partial {
		b.partial[i].at = moved[b.partial[i].at]
	}
}

// dropAnswered drops the missing arguments of a clause that a step of
// another clause answers: the same tool with all it has ("where's my
// parcel?? RR123456785CN", "help me track am, UPS number na 1Z…").
func (b *planBuilder) dropAnswered() {
	drop := map[int]bool{}
	for _, ps := range b.partial {
		u := b.unplanned[ps.at]
		for _, st := range b.plan.Steps {
			if st.Tool == u.Tool && subsetOf(ps.args, st.Arguments) {
				drop[ps.at] = true
			}
		}
	}
	b.dropUnplanned(drop)
}

// fillStep picks the clause's entry among near ties (preferFillable) and
// reads its arguments.
func (b *planBuilder) fillStep(c *clause, ctx places, later string) (*offEntry, map[string]any, []string, error) {
	b.ix.preferFillable(b.goal, c, b.vis, ctx, later)
	oe := b.ix.entries[c.ranked[c.best].entry]
	args, missing, err := b.ix.fill(b.goal, c, oe, ctx, later)
	return oe, args, missing, err
}

// addStep adds a step of oe with args to the plan. Steps that differ only
// in a kind ("pizza and pasta in Rome") are one step that asks for both
// kinds.
func (b *planBuilder) addStep(oe *offEntry, args map[string]any) {
	plain, kinds := maps.Clone(args), map[string]string{}
	for _, p := range oe.params {
		if v, ok := args[p.name].(string); ok && kindOf(p) != nil {
			kinds[p.name] = v
			delete(plain, p.name)
		}
	}
	sig := oe.e.Name + fmt.Sprint(plain)
	for k := range b.plan.Steps {
		// "… by public transport from Paddington to the Royal Albert Hall.
		// Could you kindly advise us of the route?", "the AQI in Delhi?
		// PM2.5 level specifically": a step that says less than another
		// of the same tool is that one.
		st := &b.plan.Steps[k]
		switch {
		case st.Tool != oe.e.Name || len(st.Arguments) == len(args):
		case subsetOf(args, st.Arguments):
			return
		case subsetOf(st.Arguments, args):
			st.Arguments = args
			b.seen[sig] = k
			return
		}
	}
	if at, ok := b.seen[sig]; ok {
		prev := b.plan.Steps[at].Arguments
		for name, v := range kinds {
			switch old, _ := prev[name].(string); {
			case old == "":
				prev[name] = v
			case !strings.Contains(old, v):
				prev[name] = old + ", " + v
			}
		}
	} else {
		b.seen[sig] = len(b.plan.Steps)
		id := stepID(oe.e.Name, b.taken)
		b.plan.Steps = append(b.plan.Steps, Step{ID: id, Tool: oe.e.Name, Arguments: args, Retries: oe.retries, OnFailure: Degrade})
		b.ids = append(b.ids, id)
	}
}

// example shows how a goal could give the first missing argument.
func example(oe *offEntry, missing []string) string {
	for _, p := range oe.params {
		if p.name != missing[0] {
			continue
		}
		switch p.role {
		case roleOrigin, roleDest:
			return "\"from Paris to Lyon\""
		case rolePlace:
			return "\"in Paris\""
		case roleNumber:
			return "the number"
		case roleEnum:
			return fmt.Sprintf("one of %v", p.enum)
		}
	}
	return "the value in quotes"
}

// codePair says whether a and b are two airports' codes typed as a pair
// (DXB-LHR): three capitals each, one character apart, and no currency
// (USD-EUR) nor ticker.
func codePair(a, b token) bool {
	code := func(t token) bool {
		return t.kind == tWord && len(t.text) == 3 && t.text == strings.ToUpper(t.text) && isASCII(t.text) && !strings.ContainsAny(t.text, "0123456789") &&
			!isoCurrencies[t.text] && !knownTickers[t.text]
	}
	return code(a) && code(b) && b.start == a.end+1
}

// capitalisedPlace reads the capitalised words at toks[i] (up to five),
// or a longer name of the gazetteer with a word in lower case there ("Rio
// de Janeiro", "Dar es Salaam").
func capitalisedPlace(toks []token, i int) (string, []int) {
	if _, ok := weekdays[strings.ToLower(toks[i].text)]; ok || fillerWords[strings.ToLower(toks[i].text)] {
		return "", nil // "Hotel Frankfurt, check-in Monday week", "Especially PM2.5": a day or a filler, never a place
	}
	n := 0
	for j := i; j < len(toks) && toks[j].kind == tWord && n < 5; j++ {
		if !isCapitalised(toks[j].text) {
			if j > i && nameJoiners[toks[j].text] && j+1 < len(toks) && isCapitalised(toks[j+1].text) && toks[j+1].kind == tWord && !timeName(toks[j+1].text) {
				n++ // "Port of Spain", "Ciudad de México"
				continue
			}
			break
		}
		if j > i && toks[j].start > toks[j-1].end+1 {
			break // "near Osu. Just 2-3 is fine": a sentence ends between them
		}
		n++
	}
	return span(toks, i, i+max(n, gazetteerSpan(toks, i)))
}

// timeName says whether a capitalised word names a day or a month.
func timeName(w string) bool {
	lw := strings.ToLower(w)
	_, day := weekdays[lw]
	_, abbr := months[lw]
	return day || abbr || monthNames[lw]
}

// monthNames are the months' names in full (months has their
// abbreviations).
var monthNames = map[string]bool{"january": true, "february": true, "march": true, "april": true, "may": true, "june": true, "july": true,
	"august": true, "september": true, "october": true, "november": true, "december": true, "sept": true}

// infinitiveLeads come before a "to" that leads a verb ("want to call").
var infinitiveLeads = map[string]bool{"want": true, "wants": true, "need": true, "needs": true, "have": true, "has": true, "like": true,
	"love": true, "try": true, "trying": true, "able": true, "used": true, "going": true, "planning": true, "hoping": true, "wanted": true}

// nameJoiners are the small words inside a place's name (Port of Spain,
// Rio de Janeiro, Isle of Man), between two capitalised words.
var nameJoiners = map[string]bool{"of": true, "de": true, "del": true, "da": true, "do": true, "dos": true, "das": true, "di": true,
	"la": true, "le": true, "du": true, "des": true, "upon": true, "y": true}

// span returns the words of toks[from:to], joined by spaces, and their
// indexes.
func span(toks []token, from, to int) (string, []int) {
	words := make([]string, 0, to-from)
	idx := make([]int, 0, to-from)
	for j := from; j < to; j++ {
		words = append(words, toks[j].text)
		idx = append(idx, j)
	}
	return strings.Join(words, " "), idx
}

// nearWords follow the place they are near.
var nearWords = map[string]bool{"附近": true, "周边": true, "周围": true, "一带": true}

// latinName returns how many capitalised Latin words begin at toks[i]
// (up to four, typed together: "Kings Cross", "Stanley Park"), or 0.
func latinName(toks []token, i int) int {
	n := 0
	for j := i; j < len(toks) && n < 4 && toks[j].kind == tWord && isCapitalised(toks[j].text) && !toks[j].stop; j++ {
		if j > i && toks[j].start > toks[j-1].end+1 {
			break
		}
		n++
	}
	return n
}

// latinNameBefore returns where the capitalised Latin words that end
// right before toks[i] begin, or -1.
func latinNameBefore(toks []token, i int) int {
	k := i
	for k > 0 && toks[k-1].kind == tWord && isCapitalised(toks[k-1].text) && !toks[k-1].stop && i-k < 4 && (k == i || toks[k].start <= toks[k-1].end+1) {
		k--
	}
	if k == i || toks[i-1].end != toks[i].start {
		return -1
	}
	return k
}

// condition plans what condition clauses[i] asks about, when it, or the
// goal before it, says all it needs ("if it's raining in portland, …",
// "how's austin, if it's nice out …"; not from the action after it:
// 如果天气好的话，推荐一下昆明的餐厅; not of a day the weather of now cannot
// tell: 明天厦门要是下雨的话, tomorrow said before 要是), and says that the
// steps after it run whatever it says.
func (b *planBuilder) condition(clauses []clause, i int, ctx places, text string) {
	c := &clauses[i]
	dayBefore := i > 0 && clauses[i-1].after == c.before && len(clauses[i-1].values.dates) > 0
	onlyToday := !slices.ContainsFunc(c.values.dates, func(v value) bool { return v.val != b.today })
	if c.best >= 0 && onlyToday && !dayBefore {
		// ("if the air in Beijing is bad today": checked now; "if it rains
		// tomorrow" is not a check of now.)
		if oe, args, missing, err := b.fillStep(c, ctx, ""); len(missing) == 0 && err == nil {
			b.addStep(oe, args)
		}
	}
	b.unplanned = append(b.unplanned, Unplanned{Clause: text, Reason: ReasonCondition,
		Message: "the offline planner does not check conditions: the steps after it run whatever it says (configure an LLM to plan conditions)"})
}

// userAt says whether a clause tells where the user is: 我在…, "I'm at …".
func userAt(text string) bool {
	lw := strings.ToLower(text)
	for _, p := range []string{"我在", "我现在在", "我人在", "我已经到", "我刚到", "俺们刚到", "我们刚到", "我们已经到", "已经到", "刚到",
		"i'm at ", "im at ", "i am at ", "i’m at ", "we're at ", "we are at ", "just got to ", "i just got to ", "we just got to "} {
		if strings.HasPrefix(lw, p) {
			return true
		}
	}
	return false
}

// subsetOf says whether every argument of a is in b with the same value.
func subsetOf(a, b map[string]any) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || fmt.Sprint(w) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// stepID returns a step id for a step of tool name that taken does not
// hold, and adds it to taken.
func stepID(name string, taken map[string]bool) string {
	id := name
	if len(id) > 60 {
		id = id[:60]
	}
	for n := 2; taken[id]; n++ {
		id = fmt.Sprintf("%s_%d", name[:min(len(name), 60)], n)
	}
	taken[id] = true
	return id
}

// clauses splits goal into clauses (splitClauses) and ranks the catalog
// for each (rankClauses).
func (ix *offlineIndex) clauses(goal string, vis []bool, now time.Time) []clause {
	goal = hanFold(goal)
	out := splitClauses(tokenize(goal, ix.dict))
	ix.rankClauses(goal, out, vis, now)
	return out
}

// courtesy says whether a part is only a greeting or thanks.
func courtesy(toks []token) bool {
	has := false
	for _, t := range toks {
		switch {
		case t.kind == tPunct:
		case courtesyWords[strings.ToLower(t.text)]:
			has = true
		case t.stop && t.kind == tWord:
		default:
			return false
		}
	}
	return has
}

// signOff says whether a courtesy part ends a letter ("Yours sincerely",
// "With thanks", "Regards").
func signOff(toks []token) bool {
	return slices.ContainsFunc(toks, func(t token) bool {
		switch strings.ToLower(t.text) {
		case "yours", "sincerely", "faithfully", "regards", "thanks", "thanking", "cheers", "best":
			return true
		}
		return false
	})
}

// signature says whether a part is only a name of one to three
// capitalised words ("Margaret", "Mrs. Okafor").
func signature(toks []token) bool {
	n := 0
	for _, t := range toks {
		switch {
		case t.kind == tPunct:
		case t.kind == tWord && isCapitalised(t.text):
			n++
		default:
			return false
		}
	}
	return n > 0 && n <= 3
}

var courtesyWords = map[string]bool{"hello": true, "hi": true, "hey": true, "thanks": true, "thank": true, "thx": true, "ty": true, "cheers": true,
	"much": true, "lot": true, "advance": true, "bye": true, "dear": true, "sir": true, "madam": true, "good": true, "morning": true,
	"wah": true, "gwaan": true, "wagwan": true, "yo": true, "howdy": true, "g'day": true, "gday": true, "namaste": true, "hola": true, "aloha": true,
	"hiya": true, "oi": true, "mate": true, "bro": true, "fam": true, "guys": true, "y'all": true,
	"assistant": true, "yours": true, "sincerely": true, "faithfully": true, "truly": true, "regards": true, "kind": true, "kindly": true,
	"legend": true, "champ": true, "howzit": true, "abeg": true, "chale": true, "bru": true, "boet": true, "evening": true, "afternoon": true,
	"thanking": true, "salamat": true, "blessings": true, "needful": true, "following": true, "earliest": true, "please": true, "pls": true, "plz": true,
	"kid": true, "cher": true, "brah": true, "bra": true, "lah": true, "ah": true, "eh": true, "innit": true, "yeah": true, "yep": true,
	"anyway": true, "anyways": true, "omg": true, "lol": true, "haha": true, "chur": true, "bore": true, "da": true, "kia": true, "ora": true,
	"assalam": true, "assalamu": true, "alaikum": true, "salaam": true, "salam": true, "sumimasen": true, "duw": true, "o": true, "wa": true, "walaikum": true, "cuz": true, "dude": true,
	"like": true, "so": true, "well": true, "oh": true, "okay": true, "ok": true, "alright": true, "right": true, "aye": true, "hun": true,
	"niaje": true, "sasa": true, "mambo": true, "jambo": true, "habari": true, "ope": true, "ngl": true, "lowkey": true, "highkey": true, "fr": true,
	"tbh": true, "bana": true, "hehe": true, "yall": true, "bestie": true, "fam's": true, "ayo": true, "bruh": true, "sheesh": true, "oof": true, "ugh": true,
	"nb": true, "yyds": true, "xswl": true, "awsl": true, "hhh": true, "hhhh": true, "wow": true, "woah": true,
	"obrigado": true, "obrigada": true, "gracias": true, "merci": true, "danke": true, "grazie": true, "arigato": true, "arigatou": true,
	"shukran": true, "asante": true, "dankie": true, "tak": true, "spasibo": true, "xie": true, "kamsahamnida": true, "tusen": true,
	"你好": true, "您好": true, "谢谢": true, "多谢": true, "谢了": true, "麻烦了": true, "辛苦了": true, "嗨": true, "哈喽": true}

// splitClauses splits the tokens into clauses and folds clauses that only
// carry arguments ("add 3 and 5") into a neighbour.
func splitClauses(toks []token) []clause {
	type part struct {
		toks  []token
		after string // the separator after it, lower-case ("" at the end)
		cond  bool   // it ends in 的话: a condition (不下雨的话就…)
	}
	var parts []part
	var cur []token
	lead := "" // a separator before the first part ("if it rains, …")
	cut := func(sep string) {
		switch {
		case len(cur) > 0:
			parts = append(parts, part{toks: cur, after: strings.ToLower(sep)})
		case len(parts) > 0 && sep != "":
			if !condWords[parts[len(parts)-1].after] {
				parts[len(parts)-1].after = strings.ToLower(sep)
			}
		case sep != "":
			lead = strings.ToLower(sep)
		}
		cur = nil
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.conj && (withPartner(toks, i) || andAHalf(toks, i) || asksWhether(toks, i) || politeIf(toks, i)) {
			// 和老王开会: 和 is "with", no clause ends.
			t.conj, t.stop = false, true
			cur = append(cur, t)
			continue
		}
		if t.conj || t.kind == tPunct || orPlace(toks, i) {
			cut(t.text)
			continue
		}
		if n := conjPhrase(toks, i); t.kind == tWord && n > 0 {
			cut(t.text)
			i += n - 1
			continue
		}
		cur = append(cur, t)
		if t.kind == tHan && t.norm == "的话" && i+1 < len(toks) && len(cur) > 1 && !spokenWords(cur[len(cur)-2]) && !onlyTravel(cur) && !travelWords[cur[len(cur)-2].text] {
			// 下雨的话帮我…, 要是明天不下雨的话就…: what comes before 的话 is
			// a condition, with or without 如果, from the last space on
			// (大阪今天下雨不 不下的话我就…: the question before stays one).
			if j := lastGap(cur); j > 0 {
				rest := cur[j:]
				cur = cur[:j]
				cut(" ")
				cur = rest
			}
			cut(t.text)
			parts[len(parts)-1].cond = true
		}
	}
	cut("")
	// A part with only arguments ("5" in "add 3 and 5", "把3" in "把3和4加起来")
	// joins the clause it belongs to: the next one when "and" leads on to it,
	// else the one before.
	var out []clause
	var pending []token
	before := lead
	for k, pt := range parts {
		sep := before
		before = pt.after
		if !hasContent(pt.toks) {
			if (andLike[pt.after] || onlyStop(pt.toks)) && k+1 < len(parts) || len(out) == 0 {
				// "…, and 5", and "Secondly, …": it leads on.
				pending = append(pending, pt.toks...)
				continue
			}
			prev := &out[len(out)-1]
			prev.toks = append(append(prev.toks, pending...), pt.toks...) // in the goal's order ("…, for me and my wife")
			pending = nil
			prev.end = pt.toks[len(pt.toks)-1].end
			prev.after = pt.after // "if yes find one near umhlanga, just 1": the condition's action goes on
			continue
		}
		toks := pt.toks
		if pending != nil {
			toks = append(pending, toks...)
			pending = nil
		}
		out = append(out, clause{toks: toks, start: toks[0].start, end: toks[len(toks)-1].end, before: sep, after: pt.after, cond: condWords[sep] || pt.cond})
	}
	if pending != nil {
		if len(out) > 0 {
			prev := &out[len(out)-1]
			prev.toks = append(prev.toks, pending...)
			prev.end = pending[len(pending)-1].end
		} else {
			out = append(out, clause{toks: pending, start: pending[0].start, end: pending[len(pending)-1].end})
		}
	}
	if len(out) > 1 {
		// "Hello," and "Thank you very much." ask for nothing.
		// A name after a sign-off ("Yours faithfully, Margaret.") signs it.
		signed := false
		for k := range out {
			if courtesy(out[k].toks) {
				signed = signOff(out[k].toks)
				out[k].toks = nil
			} else if signed && k == len(out)-1 && signature(out[k].toks) {
				out[k].toks = nil
			}
		}
		out = slices.DeleteFunc(out, func(c clause) bool { return c.toks == nil })
	}
	return out
}

// rankClauses reads each clause's values and places and ranks the catalog
// for it, choosing the best visible entry that fits.
func (ix *offlineIndex) rankClauses(goal string, out []clause, vis []bool, now time.Time) {
	later := false // the clause before names a day later than tomorrow
	for i := range out {
		c := &out[i]
		c.read(goal, ix, now)
		// "那天会不会下雨啊？要不要带伞": what follows "that day" stays on it.
		c.laterDay = later && len(c.values.dates) == 0 && (thatDay(c.toks) || i > 0 && thatDay(out[i-1].toks))
		ix.rankClause(c, now)
		later = c.laterDay || laterThanNow(c.toks) || c.values.after(c.toks, now.AddDate(0, 0, 1))
		c.best = -1
		for j, m := range c.ranked {
			if m.score < minScore {
				break
			}
			if m.fits() && vis[m.entry] {
				c.best = j
				break
			}
		}
		if c.best >= 0 {
			first := c.best
			c.best = ix.preferSpecific(c, c.best, vis)
			c.best = ix.preferLeadVerb(c, c.best, vis)
			c.best = ix.preferCapability(c.ranked, c.best, vis)
			c.scored = c.best
			if first != c.best {
				c.scored = ix.preferCapability(c.ranked, first, vis)
			}
		} else {
			c.scored = -1
		}
	}
}

// preferLeadVerb picks the entry the clause's first word names when that
// entry takes a required free text: what follows the verb is its text, not
// another tool's words ("画一张熊猫吃竹子的海报", "draw a cat eating sushi").
func (ix *offlineIndex) preferLeadVerb(c *clause, best int, vis []bool) int {
	first := ""
	for _, t := range c.toks {
		if k := tokKey(t); k != "" && !t.stop {
			first = k
			break
		}
	}
	if first == "" || c.ranked[best].keys[first] {
		return best
	}
	for j, m := range c.ranked {
		if !m.keys[first] || !m.fits() || !vis[m.entry] || !ix.entries[m.entry].takesText() {
			continue
		}
		for _, p := range ix.entries[m.entry].post(ix, first) {
			if p.named {
				return j
			}
		}
	}
	return best
}

// preferSpecific ranks the entries that fit again without the generic
// words (genericKey): "look up the weather in Quito" is about the weather,
// not about a tool that searches.
func (ix *offlineIndex) preferSpecific(c *clause, best int, vis []bool) int {
	adjusted := func(m match) float64 {
		s := m.score
		for k := range m.keys {
			if genericKey(k) {
				for _, p := range ix.entries[m.entry].post(ix, k) {
					s -= p.w
				}
			}
		}
		return s
	}
	top := adjusted(c.ranked[best])
	out := best
	for j, m := range c.ranked {
		if j != best && m.fits() && vis[m.entry] && adjusted(m) > top {
			out, top = j, adjusted(m)
		}
	}
	return out
}

// takesText says whether the entry requires a free text (a prompt).
func (oe *offEntry) takesText() bool {
	for _, p := range oe.params {
		if p.role == roleText && oe.required[p.name] {
			return true
		}
	}
	return false
}

// post returns the postings of key k for the entry, weighed by the key's
// rarity (idf) as rank weighs them.
func (oe *offEntry) post(ix *offlineIndex, k string) []posting {
	ps, _ := ix.post.Get(k)
	var out []posting
	for _, p := range ps {
		if ix.entries[p.entry] == oe {
			p.w *= ix.idf(len(ps))
			out = append(out, p)
		}
	}
	return out
}

// genericKeys are words that name what many tools do ("search", 找): a
// vendor tool is not preferred over the capability that reaches it for
// naming them (search_restaurants over places.restaurants for 找餐厅).
// (A function: the lexicon's keys are made by init functions.)
func genericKey(k string) bool { return k == key("search") }

// rankClause ranks the catalog for one read clause: its words, phrases,
// typos and Chinese words against the index, then its typed values
// (boostValues) and, naming an origin and a destination, routes.
func (ix *offlineIndex) rankClause(c *clause, now time.Time) {
	c.ranked = ix.rank(c.toks, c.placeToks)
	ix.boostValues(c)
	if (c.places.origin != "" || c.places.fromThere) && (c.places.dest != "" || c.places.toThere) && c.places.origin+c.places.dest != "" && hasAction(c) ||
		c.places.origin+c.places.dest != "" && travels(c) || travels(c) && howFar(c) ||
		c.places.origin != "" && c.places.dest != "" && len(c.values.dates) > 0 && !slices.ContainsFunc(c.toks, func(t token) bool { return t.kind == tHan || t.kind == tHanRaw }) {
		// "drive from A to B", a way of travel to or from one place ("how
		// long to drive to the airport": from where is missing), and a way
		// of travel asked how far or how long ("how far is it by car",
		// 开车过去要多久: both ends are missing), and a trip on a day
		// ("London to Edinburgh this Saturday"; in Chinese a ticket of
		// another kind, 明天广州南到长沙南的高铁票, reads the same).
		ix.boostRoutes(c)
	}
	if (c.laterDay || laterThanNow(c.toks) || c.values.after(c.toks, now.AddDate(0, 0, 1))) && !saysNow(c.toks) {
		// 下礼拜北京的天气预报, "the forecast for next week", 这周六上海天气:
		// a tool of now (current weather), with no date to take, cannot
		// say it (tomorrow's it still tells, as users ask it).
		c.ranked = slices.DeleteFunc(c.ranked, func(m match) bool { return ix.entries[m.entry].ofNow() })
	}
	if asksAnAct(c) {
		// 帮我订两张后天西安北到北京西的高铁票, "book me a train from Leeds
		// to York": a route is looked up, never booked or bought.
		c.ranked = slices.DeleteFunc(c.ranked, func(m match) bool { return ix.entries[m.entry].route && !ix.entries[m.entry].dated() })
	}
	if verb := taskVerb(c.toks); verb != "" {
		// "play some afrobeats", 放一首周杰伦的晴天, 把这张照片的背景p掉,
		// 设个明早7点的闹钟: a task no generation, weather or calendar tool
		// does; a tool fits only when its own words include the verb's,
		// not for a song's title that names the weather, a photo that
		// names an image or the time an alarm is set for.
		c.ranked = slices.DeleteFunc(c.ranked, func(m match) bool { return !m.keys[key(verb)] })
	}
}

// travelWords are ways of going somewhere: with one end of a route they
// ask for one.
var travelWords = map[string]bool{"drive": true, "driving": true, "walk": true, "walking": true, "cycle": true, "cycling": true, "bike": true,
	"biking": true, "commute": true, "开车": true, "走路": true, "步行": true, "坐地铁": true, "打车": true, "骑车": true, "自驾": true, "坐公交": true, "搭地铁": true}

// laterThanNow says whether the clause asks about next week or next
// month (下周, 下星期, "next week"), not about now.
func laterThanNow(toks []token) bool {
	for i, t := range toks {
		lw := strings.ToLower(t.text)
		if (lw == "next" || lw == "coming") && i+1 < len(toks) && (strings.EqualFold(toks[i+1].text, "week") || strings.EqualFold(toks[i+1].text, "month")) {
			return true
		}
		if t.kind == tHan || t.kind == tHanRaw {
			for _, w := range []string{"下周", "下星期", "下个星期", "下个月", "未来一周", "未来几天", "这周末", "下周末"} {
				if strings.HasPrefix(t.text, w) && !weekdayAfter(t.text[len(w):]) {
					return true
				}
			}
		}
	}
	return false
}

// thatDay says whether a clause asks about a day named before: 那天, 当天,
// "that day" ("这周六去苏州玩 那天会不会下雨").
func thatDay(toks []token) bool {
	for i, t := range toks {
		switch lw := strings.ToLower(t.text); {
		case t.kind == tHan || t.kind == tHanRaw:
			if strings.Contains(t.text, "那天") || strings.Contains(t.text, "当天") || strings.Contains(t.text, "那一天") {
				return true
			}
		case lw == "that" && i+1 < len(toks) && strings.EqualFold(toks[i+1].text, "day"):
			return true
		}
	}
	return false
}

// saysNow says whether a clause asks about today or now ("雪梨今天天氣怎樣
// 我下禮拜要過去": next week is when the user goes, not what is asked), or
// names a trip its date belongs to ("goin west this wknd").
func saysNow(toks []token) bool {
	for _, t := range toks {
		lw := strings.ToLower(t.text)
		switch {
		case lw == "now" || lw == "today" || lw == "rn" || lw == "currently" || sceneLeads[lw] || lw == "goin" || lw == "trip":
			return true
		case t.kind == tHan || t.kind == tHanRaw:
			for _, w := range []string{"今天", "现在", "今日", "目前", "此刻", "过去", "要去", "出差", "旅游"} {
				if strings.Contains(t.text, w) {
					return true
				}
			}
		}
	}
	return false
}

// weekdayAfter says whether s begins with a weekday's character (下周五).
func weekdayAfter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return strings.ContainsRune("一二三四五六日天", r)
}

// ofNow says whether an entry tells how things are now (its name or
// description says current or now) and takes no date.
func (oe *offEntry) ofNow() bool {
	for _, p := range oe.params {
		if p.format == "date" || p.words["date"] {
			return false
		}
	}
	text := strings.ToLower(oe.e.Name)
	if c := oe.e.Capability; c != nil {
		text += " " + strings.ToLower(c.Description)
	} else {
		text += " " + strings.ToLower(oe.e.Tool.Def.Description)
	}
	return strings.Contains(text, "current") || strings.Contains(text, "right now")
}

// howFar says whether the clause asks how far or how long a way is.
func howFar(c *clause) bool {
	var han strings.Builder
	for i, t := range c.toks {
		lw := strings.ToLower(t.text)
		if lw == "how" && i+1 < len(c.toks) && (strings.EqualFold(c.toks[i+1].text, "far") || strings.EqualFold(c.toks[i+1].text, "long")) {
			return true
		}
		if t.kind == tHan || t.kind == tHanRaw {
			han.WriteString(t.text)
		}
	}
	for _, w := range []string{"多久", "多远", "多长时间", "几分钟", "几个小时", "要多少时间"} {
		if strings.Contains(han.String(), w) {
			return true
		}
	}
	return false
}

// travelBy are the ways of going after "by" ("by car") or "on" ("on foot").
var travelBy = map[string]bool{"car": true, "taxi": true, "cab": true, "uber": true, "bus": true, "train": true, "tube": true, "metro": true,
	"subway": true, "mrt": true, "bike": true, "bicycle": true, "foot": true, "tram": true}

// travels says whether the clause says a way of travel (开车, "drive", 坐地铁).
func travels(c *clause) bool {
	for i, t := range c.toks {
		if travelWords[strings.ToLower(t.text)] {
			return true
		}
		if i > 0 && (t.text == "地铁" || t.text == "公交" || t.text == "出租车" || t.text == "高铁") && travelVerbs[c.toks[i-1].text] {
			return true
		}
		if i > 0 && travelBy[strings.ToLower(t.text)] && (strings.EqualFold(c.toks[i-1].text, "by") || strings.EqualFold(c.toks[i-1].text, "on") && strings.EqualFold(t.text, "foot")) {
			return true // "by car", "on foot"
		}
	}
	return false
}

// taskVerb returns the word of a clause that asks for a task of its own,
// which only a tool naming it does: to play media (play, listen, 播放,
// 放一首), to edit a picture the user has (edit, crop, 修图, p掉), or to
// set an alarm or a timer ("set an alarm", 设个闹钟; 画一个闹钟 draws one),
// to hail a ride ("order me an uber", 叫个车) or order food, or to ask
// when the sun sets (日落); or "".
func taskVerb(toks []token) string {
	var all strings.Builder
	alarm, set := "", false
	ride, booking := "", false
	for i, t := range toks {
		lw := strings.ToLower(t.text)
		switch {
		case t.kind != tWord:
		case taskWords[lw]:
			return t.norm
		case lw == "alarm" || lw == "alarms" || lw == "timer":
			alarm = t.norm
		case lw == "set" || lw == "start":
			set = true
		case rideWords[lw]:
			ride = t.norm
		case lw == "order" && i+1 < len(toks) && orderObjects[strings.ToLower(toks[i+1].text)] && ride == "" && !slices.ContainsFunc(toks[i+1:], isRide):
			return t.norm // "order me a large pepperoni": a delivery, not a route
		case bookWords[lw] || fareWords[lw]:
			booking = true
		case skyWords[lw] && askedWhen(toks):
			return t.norm // "when is sunset", not the time of a city (a sunset drawn is an image)
		}
		if t.kind != tPunct && t.kind != tQuote {
			all.WriteString(lw)
		}
	}
	if alarm != "" && set {
		return alarm
	}
	if ride != "" && booking {
		return ride // "order me an uber from heathrow", not a route
	}
	han := all.String()
	for _, w := range hanTaskWords {
		if strings.Contains(han, w) {
			return w
		}
	}
	for _, w := range []string{"闹钟", "闹铃", "定时器", "倒计时"} {
		if strings.Contains(han, w) && strings.ContainsAny(han, "设定调") {
			return w
		}
	}
	for _, w := range []string{"专车", "网约车", "顺风车", "叫车", "叫个车", "叫辆车", "约车", "叫个滴滴", "叫滴滴", "叫出租", "叫个出租", "叫个uber", "叫uber", "叫外卖", "点外卖", "点个外卖"} {
		if strings.Contains(han, w) {
			return w
		}
	}
	if i := strings.Index(han, "外卖"); i > 0 && strings.ContainsAny(han[:i], "叫点订") || i >= 0 && strings.Contains(han, "送到") {
		return "外卖" // 叫个麦当劳外卖, 外卖送到公司: food to order, not a restaurant to find
	}
	for _, w := range []string{"日落", "日出", "涨潮", "退潮"} {
		if strings.Contains(han, w) && (strings.Contains(han, "几点") || strings.Contains(han, "什么时候") || strings.Contains(han, "啥时候")) {
			return w
		}
	}
	return ""
}

func isRide(t token) bool { return rideWords[strings.ToLower(t.text)] }

// askedWhen says whether the clause asks when: "when", "what time".
func askedWhen(toks []token) bool {
	for i, t := range toks {
		lw := strings.ToLower(t.text)
		if lw == "when" || lw == "when's" || lw == "whens" || (lw == "what" || lw == "wat") && i+1 < len(toks) && strings.EqualFold(toks[i+1].text, "time") {
			return true
		}
	}
	return false
}

// rideWords are rides to hail; with a verb of bookWords they ask for one
// ("order me an uber", "book a cab"), and with one of fareWords for its
// price ("the uber fare from heathrow"), not for a route ("how long by
// taxi"). orderObjects follow "order" when it orders something; skyWords
// name what the sky does at a time (no city's time).
var (
	rideWords    = map[string]bool{"uber": true, "taxi": true, "cab": true, "lyft": true, "grab": true, "ride": true, "bolt": true, "didi": true}
	bookWords    = map[string]bool{"order": true, "book": true, "call": true, "get": true, "request": true, "hail": true}
	fareWords    = map[string]bool{"fare": true, "fares": true, "price": true, "cost": true, "quote": true}
	orderObjects = map[string]bool{"me": true, "us": true, "a": true, "an": true, "some": true, "food": true, "pizza": true, "takeout": true, "takeaway": true, "delivery": true}
	skyWords     = map[string]bool{"sunset": true, "sunrise": true, "sundown": true, "dawn": true, "tide": true, "tides": true, "moonrise": true}
)

// taskWords and hanTaskWords name the tasks of taskVerb but alarms.
var (
	taskWords    = map[string]bool{"play": true, "listen": true, "stream": true, "edit": true, "retouch": true, "crop": true, "photoshop": true, "resize": true}
	hanTaskWords = []string{"播放", "放一首", "来一首", "听一首", "放首", "放点歌", "放歌",
		"p掉", "p图", "p一下", "ps一下", "ps掉", "修图", "抠图", "美颜", "修一下照片", "去水印", "换背景", "抠掉", "背景换", "换个背景", "照片的背景", "照片背景"}
)

// toolMatch is one entry's rank for a query: what a tool search lists.
type toolMatch struct {
	name  string
	score float64
	fits  bool     // evidence enough to plan with it (match.fits)
	words []string // the query's words that hit it
}

// search ranks the catalog for a free-text query as the planner ranks a
// clause (rankClause), best first, with the words that hit each entry:
// the one ranking tool search and the offline planner share.
func (ix *offlineIndex) search(query string, now time.Time) []toolMatch {
	query = hanFold(query)
	c := &clause{toks: tokenize(query, ix.dict), end: len(query)}
	c.read(query, ix, now)
	ix.rankClause(c, now)
	var out []toolMatch
	for _, m := range c.ranked {
		tm := toolMatch{name: ix.entries[m.entry].e.Name, score: m.score, fits: m.fits()}
		for _, t := range c.toks {
			if k := tokKey(t); k != "" && m.keys[k] || k != "" && m.keys[ix.typo(t.norm)] && ix.typo(t.norm) != "" {
				tm.words = append(tm.words, t.text)
			}
		}
		out = append(out, tm)
	}
	return out
}

// hasAction says whether a clause has a word besides places and function
// words ("drive", "开车"): "plan a trip from Paris to Lyon" has none.
func hasAction(c *clause) bool {
	for i, t := range c.toks {
		if !c.placeToks[i] && !t.stop && (t.kind == tWord || t.kind == tHan) {
			return true
		}
	}
	return false
}

// routeBonus is added to the score of a tool with an origin and a
// destination parameter when the clause names both ("drive from A to B").
const routeBonus = 2.0

func (ix *offlineIndex) boostRoutes(c *clause) {
	seen := map[int]bool{}
	for j := range c.ranked {
		m := &c.ranked[j]
		seen[m.entry] = true
		if ix.entries[m.entry].route {
			m.score += routeBonus
			m.strong, m.named = true, true
		}
	}
	for i, e := range ix.entries {
		if e != nil && e.route && !seen[i] {
			c.ranked = append(c.ranked, match{entry: i, score: routeBonus, strong: true, named: true, keys: map[string]bool{}})
		}
	}
	ix.sortMatches(c.ranked)
}

// preferCapability picks, among entries that score within 10% of the best,
// a capability over the vendor tools of its chain: the capability is the
// governed way to reach them (fallback, cache, queue).
func (ix *offlineIndex) preferCapability(ranked []match, best int, vis []bool) int {
	b := ix.entries[ranked[best].entry]
	if b.e.Capability != nil {
		return best
	}
	covers := func(m match) bool {
		// The capability fits and matches every word the vendor tool
		// does but the generic ones.
		if !m.fits() {
			return false
		}
		for k := range ranked[best].keys {
			if !m.keys[k] && !genericKey(k) {
				return false
			}
		}
		return true
	}
	for _, c := range b.chainedBy {
		if !vis[c] {
			continue
		}
		for j, m := range ranked {
			if m.entry == c && (m.score >= 0.75*ranked[best].score || covers(m)) {
				return j
			}
		}
	}
	return best
}

// asksWhether says whether the "if" at toks[i] asks a question ("tell me
// if i need a jacket", "check if it's raining"): whether, not a condition.
func asksWhether(toks []token, i int) bool {
	if !strings.EqualFold(toks[i].text, "if") || i == 0 {
		return false
	}
	prev := strings.ToLower(toks[i-1].text)
	if prev == "me" && i >= 2 {
		p2 := strings.ToLower(toks[i-2].text)
		return p2 == "tell" || p2 == "show"
	}
	return prev == "check" || prev == "see" || prev == "wonder" || prev == "wondering" || prev == "ask" || prev == "know"
}

// politeIf says whether "if" at i only asks politely ("I would be most
// grateful if you could …", "if possible"): no condition.
func politeIf(toks []token, i int) bool {
	if !strings.EqualFold(toks[i].text, "if") || i+1 >= len(toks) {
		return false
	}
	next := strings.ToLower(toks[i+1].text)
	if next == "possible" {
		return true
	}
	if next != "you" && next != "u" || i+2 >= len(toks) {
		return false
	}
	switch strings.ToLower(toks[i+2].text) {
	case "could", "can", "would", "will", "may", "might", "please", "don't", "dont", "kindly", "wouldn't", "wouldnt":
		return true
	}
	return false
}

// splitConditions cuts a condition from the action after it when no comma
// does ("if its lashing in dublin give me the bus route …"): at the first
// verb that asks for something after the condition's own words.
func splitConditions(cs []clause) []clause {
	out := cs[:0:0]
	for _, c := range cs {
		k := 0
		for j := 2; c.cond && j < len(c.toks) && k == 0; j++ {
			if t := c.toks[j]; t.kind == tWord && actionHeads[strings.ToLower(t.text)] {
				k = j
			}
		}
		if k == 0 {
			out = append(out, c)
			continue
		}
		cond, act := c, c
		cond.toks, cond.end, cond.after = c.toks[:k], c.toks[k-1].end, ","
		act.toks, act.start, act.before, act.cond = c.toks[k:], c.toks[k].start, ",", false
		out = append(out, cond, act)
	}
	return out
}

// actionHeads begin an action after a condition.
var actionHeads = map[string]bool{"find": true, "give": true, "show": true, "get": true, "book": true, "send": true, "email": true, "convert": true,
	"translate": true, "draw": true, "make": true, "tell": true, "check": true, "search": true, "order": true, "add": true, "put": true,
	"schedule": true, "track": true, "remind": true, "text": true, "look": true, "plan": true, "route": true, "suggest": true, "recommend": true}

// spokenWords says whether 的话 after t is "the words" (他说的话, 你的话),
// not "if".
func spokenWords(t token) bool {
	return strings.HasSuffix(t.text, "说") || strings.HasSuffix(t.text, "讲") || strings.HasSuffix(t.text, "写") ||
		strings.HasSuffix(t.text, "句") || t.text == "你" || t.text == "我" || t.text == "他" || t.text == "她" || t.text == "您"
}

// onlyTravel says whether the words before 的话 only name a way of going
// (走路的话, 开车的话: "on foot", not "if"; so does a way of going right
// before it: …怎么走开车的话大概要多久).
func onlyTravel(toks []token) bool {
	for _, t := range toks[:len(toks)-1] {
		if !t.stop && !travelWords[t.text] {
			return false
		}
	}
	return true
}

// lastGap returns the index of the last token of toks with a space before
// it, or 0.
func lastGap(toks []token) int {
	for j := len(toks) - 1; j > 0; j-- {
		if toks[j].start > toks[j-1].end {
			return j
		}
	}
	return 0
}

// condWords start a condition.
var condWords = map[string]bool{"if": true, "unless": true, "如果": true, "要是": true, "假如": true, "万一": true, "若": true}

// andLike separators join what is on either side ("3 and 5").
var andLike = map[string]bool{"and": true, "vs": true, "versus": true, "n": true, "&": true, "+": true, "＋": true, "plus": true, "和": true, "跟": true, "与": true, "并": true, "、": true}

// namesPair says whether the clause names two values of one of oe's
// groups (km and miles, 华氏 and 摄氏, two currencies).
func (c *clause) namesPair(oe *offEntry) bool {
	for _, p := range oe.params {
		if p.group != "" && c.groupValues(p) >= 2 {
			return true
		}
	}
	return false
}

// preferFillable breaks near ties (within 10% of the best score) in favour
// of the entry whose arguments the clause fills best: "translate hello into
// Spanish" between translate_text and translate_speech (which wants a link).
func (ix *offlineIndex) preferFillable(goal string, c *clause, vis []bool, ctx places, later string) {
	top := c.ranked[c.best].score
	if ix.entries[c.ranked[c.best].entry].e.Capability != nil {
		return
	}
	// When the best misses what it needs, an entry whose typed values the
	// clause names is a near tie further down: 100公里换成英里 is a unit's
	// conversion though 换成 is a word of the currency converter's.
	var alts, paired []int
	for j := c.best; j < len(c.ranked) && len(alts) < 4; j++ {
		m := c.ranked[j]
		if m.score < 0.3*top {
			break
		}
		switch {
		case !m.fits() || !vis[m.entry]:
		case m.score >= 0.9*top:
			alts = append(alts, j)
		case c.namesPair(ix.entries[m.entry]):
			paired = append(paired, j)
		}
	}
	if len(paired) > 0 {
		if _, missing, _ := ix.fill(goal, c, ix.entries[c.ranked[c.best].entry], ctx, later); len(missing) > 0 {
			alts = append(alts, paired...)
		}
	}
	if len(alts) < 2 {
		return
	}
	best, bestN := c.best, -1
	for _, j := range alts {
		c.best = j
		oe := ix.entries[c.ranked[j].entry]
		args, missing, err := ix.fill(goal, c, oe, ctx, later)
		n := -1
		if len(missing) == 0 && err == nil {
			n = 0
			for _, p := range oe.params {
				if v, ok := args[p.name]; ok && !(p.hasDef && fmt.Sprint(v) == fmt.Sprint(p.def)) {
					n++
				}
			}
		}
		if n > bestN {
			best, bestN = j, n
		}
	}
	c.best = best
}

// conjPhrase returns the length of a conjunction phrase ("and then", "as
// well as") starting at toks[i], or 0.
func conjPhrase(toks []token, i int) int {
	for _, ph := range englishConjPhrases {
		if i+len(ph) > len(toks) {
			continue
		}
		ok := true
		for k, w := range ph {
			if toks[i+k].kind != tWord || strings.ToLower(toks[i+k].text) != w {
				ok = false
				break
			}
		}
		if ok {
			return len(ph)
		}
	}
	return 0
}

// orPlace says whether toks[i] is an "or" (或者, 还是) before a place
// ("weather in paris or london"): the place asks again, like "and".
func orPlace(toks []token, i int) bool {
	switch strings.ToLower(toks[i].text) {
	case "or", "或者", "还是", "或":
	default:
		return false
	}
	if i+1 >= len(toks) {
		return false
	}
	next := toks[i+1]
	if toks[i].text == "OR" && i > 0 && placePrepositions[strings.ToLower(toks[i-1].text)] {
		return false // "from OR Tambo": a name
	}
	return gazetteerName(toks, i+1) > 0 || next.kind == tWord && isCapitalised(next.text) && !next.stop || hanPlaceNames[next.text] != ""
}

// placePrepositions come before a place.
var placePrepositions = map[string]bool{"from": true, "to": true, "at": true, "near": true, "via": true, "into": true, "in": true}

// andAHalf says whether toks[i] is the "and" of "an hour and a half".
func andAHalf(toks []token, i int) bool {
	return strings.EqualFold(toks[i].text, "and") && i+2 < len(toks) && strings.EqualFold(toks[i+1].text, "a") && strings.EqualFold(toks[i+2].text, "half")
}

// withPartner says whether the conjunction toks[i] (和, 跟, 与) means
// "with": a name that is no place follows, then a verb done together
// (withVerbs: 和老王开会, 跟客户吃饭).
func withPartner(toks []token, i int) bool {
	if t := toks[i].text; t != "和" && t != "跟" && t != "与" || i+1 >= len(toks) {
		return false
	}
	name := toks[i+1]
	if name.kind != tHanRaw && name.kind != tHan || name.stop || hanPlaceNames[name.text] != "" {
		return false
	}
	for v := range withVerbs {
		if pre, ok := strings.CutSuffix(name.text, v); ok && pre != "" && runeLen(pre) <= 4 && hanPlaceNames[pre] == "" {
			return true // 跟房东看房: the name and the verb as one run
		}
	}
	if i+2 >= len(toks) || runeLen(name.text) > 4 {
		return false
	}
	for v := range withVerbs {
		if strings.HasPrefix(toks[i+2].text, v) {
			return true
		}
	}
	return false
}

// onlyStop says whether a part has only stop words ("Secondly", "also").
func onlyStop(toks []token) bool {
	return !slices.ContainsFunc(toks, func(t token) bool { return t.kind != tPunct && !t.stop })
}

// hasContent says whether a part has a word that could pick a tool or name
// a place; parts with only numbers, quotes and function words do not.
func hasContent(toks []token) bool {
	for _, t := range toks {
		switch t.kind {
		case tWord, tHan:
			if !t.stop && !boundWords[strings.ToLower(t.text)] {
				return true
			}
		case tHanRaw:
			return true
		}
	}
	return false
}

// boundWords say how many, or end a request as Singaporeans and
// Malaysians do ("max 4 can?", "just 1 lah", "like 4 of em", "3 options
// can"): no content of their own.
var boundWords = map[string]bool{"max": true, "maximum": true, "min": true, "minimum": true, "only": true, "just": true, "upto": true,
	"like": true, "em": true, "them": true, "ones": true, "options": true, "option": true, "choices": true,
	"me": true, "myself": true, "wife": true, "husband": true, "partner": true, "missus": true, "hubby": true, "wifey": true,
	"cheapest": true, "fastest": true, "nonstop": true, "non-stop": true, "earliest": true, "latest": true,
	"can": true, "lah": true, "leh": true, "lor": true, "ah": true, "meh": true, "pls": true, "plz": true, "please": true,
	// "…, 3 pax kami", "…, 2 adults": a count of people
	"pax": true, "persons": true, "person": true, "ppl": true, "adults": true, "adult": true, "passengers": true, "passenger": true,
	"travellers": true, "travelers": true, "kami": true, "tayo": true}

// unplanned explains a clause no visible entry fits. A clause that only
// sets the scene ("plan my day in Nairobi") is not reported.
func (ix *offlineIndex) unplanned(text string, c *clause, vis []bool) (Unplanned, bool) {
	// Content is what is left besides places, numbers, quotes and function
	// words; a lone unknown character counts (a verb: "订", "讲").
	content := false
	for i, t := range c.toks {
		if !c.placeToks[i] && !t.stop && t.kind != tNum && t.kind != tQuote && t.kind != tPunct {
			content = true
		}
	}
	if !content || sceneSetting(c) {
		return Unplanned{}, false
	}
	u := Unplanned{Clause: text, Reason: ReasonNoMatch}
	hidden := 0
	for _, m := range c.ranked {
		if m.fits() && !vis[m.entry] {
			hidden++
		}
	}
	for _, m := range c.ranked {
		if len(u.Suggestions) == 3 {
			break
		}
		if vis[m.entry] && m.score > 0 {
			u.Suggestions = append(u.Suggestions, ix.entries[m.entry].e.Name)
		}
	}
	switch {
	case hidden > 0:
		u.Reason = ReasonNotVisible
		u.Message = fmt.Sprintf("the catalog has %d tool(s) for this, but this tenant may not use them; ask an operator to add them to the tenant's tools", hidden)
	case len(u.Suggestions) > 0:
		u.Message = "no tool in the catalog fits this; the closest are " + strings.Join(u.Suggestions, ", ")
	default:
		u.Message = noMatchMessage
	}
	return u, true
}

// sceneSetting says whether a clause only says where the user is or goes
// ("I'm in Lisbon for work", "we're flying to Singapore", "flying into
// Boston tonight"): it starts with "I'm", "we are" and the like or a verb
// of travel, names a place, and asks for nothing. Its
// place is the later clauses' (planBuilder.build); it is no unplanned
// request.
func sceneSetting(c *clause) bool {
	if c.places.any() == "" || len(c.toks) < 2 {
		return false
	}
	lead := strings.ToLower(c.toks[0].text)
	if next := strings.ToLower(c.toks[1].text); lead == "i" || lead == "we" {
		if next != "am" && next != "are" && next != "will" && next != "'ll" {
			return false
		}
	} else if !sceneLeads[lead] {
		return false
	}
	for _, t := range c.toks {
		if requestWords[strings.ToLower(t.text)] {
			return false
		}
	}
	return true
}

// remark says whether a clause no tool fits only remarks on how things
// are ("haze very bad today", "traffic so bad", 雾霾好严重啊): it says how
// much or how bad, and has no question, no request, no verb that asks for
// something. Beside a planned clause it is context, not an unplanned
// request ("a taxi to the airport" is one).
func remark(c *clause) bool {
	var han strings.Builder
	judged := false
	for _, t := range c.toks {
		lw := strings.ToLower(t.text)
		switch t.kind {
		case tWord:
			if requestWords[lw] || questionWords[lw] || askVerbs[lw] {
				return false
			}
			judged = judged || judgeWords[lw]
		case tPunct:
			if strings.ContainsAny(t.text, "?？") {
				return false
			}
		case tHan, tHanRaw:
			han.WriteString(t.text)
		case tQuote:
			return false
		}
	}
	for _, w := range hanAsks {
		if strings.Contains(han.String(), w) {
			return false
		}
	}
	for _, w := range hanJudges {
		judged = judged || strings.Contains(han.String(), w)
	}
	return judged
}

// statement says whether a clause only tells how things are with the
// user or why ("my boss has approved the trip", "am famished", "as my
// daughter is vegan", "I want to ring my dad"): it starts with a subject
// or a reason, asks no question, addresses no one and asks for nothing.
// Beside a planned clause it is context. wants says whether "I want to …"
// of a verb that asks nothing of a tool counts (for a clause no tool
// fits; one a tool half fits and wants is a request).
func statement(c *clause, wants bool) bool {
	if len(c.toks) < 2 {
		return false
	}
	lead := strings.ToLower(c.toks[0].text)
	if !statementLeads[lead] && !(wants && possessive(lead)) {
		return false
	}
	reason := reasonLeads[lead] // "as I intend to take a stroll"
	for i, t := range c.toks {
		lw := strings.ToLower(t.text)
		if asksOrQuotes(t) {
			return false
		}
		switch t.kind {
		case tPunct:
		case tWord:
			switch {
			case wantWords[lw]:
				// "I want to ring my dad", not "I need a taxi" nor "I want to book …".
				if !wants || i+2 >= len(c.toks) || !strings.EqualFold(c.toks[i+1].text, "to") || toolVerbs[strings.ToLower(c.toks[i+2].text)] || askVerbs[strings.ToLower(c.toks[i+2].text)] {
					return false
				}
			case wh[lw] || lw == "you" || lw == "u" || askVerbs[lw] && !reason && !obliged(c.toks, i) || rideWords[lw] || lw == "please" || lw == "pls" || lw == "plz" || lw == "kindly":
				return false
			}
		default:
			return false // a Chinese clause: remark and hanAsks read those
		}
	}
	return true
}

var (
	// statementLeads start a clause that tells: a subject, a possessive, a reason.
	statementLeads = map[string]bool{"i": true, "i'm": true, "im": true, "i’m": true, "i've": true, "ive": true, "am": true, "my": true, "we": true,
		"we're": true, "we’re": true, "we've": true, "our": true, "it's": true, "its": true, "it’s": true, "it": true, "he": true, "she": true,
		"they": true, "he's": true, "she's": true, "they're": true, "his": true, "her": true, "their": true, "as": true, "because": true,
		"since": true, "cos": true, "coz": true, "cuz": true, "bc": true, "gotta": true, "reckon": true, "just": true, "goin": true, "going": true,
		"gonna": true, "leaving": true, "heading": true, "need": true, "needs": true, "fixin": true, "fixing": true}
	reasonLeads = map[string]bool{"as": true, "because": true, "since": true, "cos": true, "coz": true, "cuz": true, "bc": true}
	// toolVerbs ask a tool for something: "I want to book …" is a request, "I want to ring my dad" is not.
	toolVerbs = map[string]bool{"find": true, "get": true, "book": true, "order": true, "search": true, "check": true, "show": true, "tell": true,
		"know": true, "see": true, "convert": true, "track": true, "hire": true, "rent": true, "fly": true, "go": true, "eat": true, "try": true}
	wantWords = map[string]bool{"want": true, "wanna": true, "need": true, "needs": true, "wants": true, "like": true, "love": true, "wish": true, "hope": true}
	wh        = map[string]bool{"what": true, "whats": true, "what's": true, "how": true, "hows": true, "how's": true, "when": true, "where": true,
		"which": true, "who": true, "why": true}
)

// obliged says whether the verb at toks[i] is what the user must do
// themselves ("I have to pay the college fees", "we gotta bring the kids").
func obliged(toks []token, i int) bool {
	prev := func(k int) string {
		if i-k < 0 {
			return ""
		}
		return strings.ToLower(toks[i-k].text)
	}
	switch prev(1) {
	case "must", "gotta":
		return true
	case "to":
		return prev(2) == "have" || prev(2) == "has" || prev(2) == "got"
	}
	return false
}

// possessive says whether a word is a noun with 's ("footy's back this
// arvo", "mum's birthday").
func possessive(w string) bool {
	return len(w) > 3 && (strings.HasSuffix(w, "'s") || strings.HasSuffix(w, "’s")) && !wh[w] && !statementLeads[w]
}

// followUp says whether a clause no tool fits only goes on about the one
// before it: how long or far that is ("…, how long does it take"), or
// when the user sets off ("flying out tmrw"): no place, no request of its
// own.
func followUp(c *clause) bool {
	if c.places.any() != "" || len(c.toks) == 0 {
		return false
	}
	if howFar(c) {
		return true
	}
	lead := strings.ToLower(c.toks[0].text)
	if !sceneLeads[lead] {
		return false
	}
	for _, t := range c.toks {
		if lw := strings.ToLower(t.text); requestWords[lw] || askVerbs[lw] || questionWords[lw] {
			return false
		}
	}
	return true
}

// neverMind says whether a clause takes its request back or waives it
// (就算了, 算啦, "nvm", "never mind", "forget it").
func neverMind(c *clause) bool {
	for i, t := range c.toks {
		lw := strings.ToLower(t.text)
		switch {
		case t.kind == tHan || t.kind == tHanRaw:
			if strings.Contains(t.text, "算了") || strings.Contains(t.text, "算啦") || strings.Contains(t.text, "拉倒") {
				return true
			}
		case lw == "nvm" || lw == "nevermind":
			return true
		case (lw == "never" && i+1 < len(c.toks) && strings.EqualFold(c.toks[i+1].text, "mind")) || (lw == "forget" && i+1 < len(c.toks) && strings.EqualFold(c.toks[i+1].text, "it")):
			return true
		}
	}
	return false
}

// refersBack says whether a clause speaks of what was asked before it as
// "it" or "them" ("print it", "frame them").
func refersBack(c *clause) bool {
	return slices.ContainsFunc(c.toks, func(t token) bool {
		lw := strings.ToLower(t.text)
		return t.kind == tWord && (lw == "it" || lw == "them")
	})
}

// fragment says whether a sentence only names things: no place of its own,
// no number, no quote, no question, and no word that asks, wants or leads
// on ("bbq cookoff", not "then pizza" nor "find tacos").
func fragment(c *clause) bool {
	if c.places.any() != "" || !strings.ContainsAny(c.before, ".?!。？！") {
		return false // a new sentence, not a part led on to ("…, then pizza")
	}
	for _, t := range c.toks {
		lw := strings.ToLower(t.text)
		switch {
		case t.kind == tPunct:
			if strings.ContainsAny(t.text, "?？") {
				return false
			}
		case t.kind != tWord:
			return false
		case requestWords[lw] || askVerbs[lw] || questionWords[lw] || imperatives[lw] || wantWords[lw] || toolVerbs[lw] || thenLike[lw] || leadFillers[lw] && lw != "and" || wh[lw]:
			return false
		}
	}
	return true
}

// asksOrQuotes says whether a token asks (a question mark) or quotes: a
// clause with one is no remark.
func asksOrQuotes(t token) bool {
	return t.kind == tPunct && strings.ContainsAny(t.text, "?？") || t.kind == tQuote
}

// aside says whether a clause only tells ("she grew up next to one in Nova
// Scotia", "got a call with a supplier there", 朋友在冰岛等极光): no
// question, no quote, no word that asks or addresses, and no verb of a
// request first. Beside a planned clause it is the goal's context.
func aside(c *clause) bool {
	var han strings.Builder
	lead := true
	refused := false // it says what the user does not want
	told := false    // it names who it tells of, or starts "got …", "been …" ("a taxi to the airport" asks for one)
	for i, t := range c.toks {
		lw := strings.ToLower(t.text)
		prev := ""
		if i > 0 {
			prev = strings.ToLower(c.toks[i-1].text)
		}
		if asksOrQuotes(t) {
			return false
		}
		switch t.kind {
		case tPunct:
		case tWord:
			negated := prev == "dont" || prev == "don't" || prev == "not" || prev == "no"
			switch {
			case lead && leadFillers[lw]:
				continue
			case lw == "like" && prev != "i'd" && prev != "would" && prev != "i" && prev != "we":
				// "like know befo I go": a filler, not "I'd like …"; "I no
				// like wake her up": what the user does not want.
				refused = refused || negated
			case lead && (toolVerbs[lw] || askVerbs[lw] || requestWords[lw] || imperatives[lw] || questionWords[lw]):
				return false // "book a cab", "also rent me a car", "is it …"
			case (wantWords[lw] || requestWords[lw]) && negated:
				refused, told = true, true // "dont want to ring at midnight"
			case lw == "wants" || lw == "needs":
				// "the guy wants cash": what someone else wants is told
			case wantWords[lw] || wh[lw] || lw == "you" || lw == "u" || lw == "ya" || !refused && (askVerbs[lw] || requestWords[lw] || imperatives[lw]):
				return false
			}
			told = told || statementLeads[lw] || lead && toldLeads[lw] || strings.HasSuffix(lw, "'s") && kinWords[strings.TrimSuffix(lw, "'s")] || kinWords[lw]
			lead = false
		case tHan, tHanRaw:
			han.WriteString(t.text)
			lead, told = false, true
		default:
			lead = false
		}
	}
	for _, w := range hanAsks {
		if strings.Contains(han.String(), w) {
			return false
		}
	}
	return told
}

var (
	// toldLeads start a clause that tells what happened ("got a call …").
	toldLeads = map[string]bool{"got": true, "had": true, "been": true, "was": true, "were": true, "have": true, "has": true}
	// kinWords are the people a user tells of.
	kinWords = map[string]bool{"mum": true, "mam": true, "mom": true, "ma": true, "dad": true, "pa": true, "wife": true, "husband": true,
		"son": true, "daughter": true, "kids": true, "grandma": true, "grandpa": true, "nan": true, "aunty": true, "auntie": true, "uncle": true,
		"cousin": true, "friend": true, "boss": true, "missus": true, "sister": true, "brother": true, "sis": true, "bro": true,
		"guy": true, "lady": true, "driver": true, "waiter": true, "landlord": true, "flatmate": true, "roommate": true, "host": true,
		"colleague": true, "coworker": true, "neighbour": true, "neighbor": true, "kid": true, "baby": true, "partner": true, "girlfriend": true, "boyfriend": true}
	// leadFillers may come before a clause's first verb ("and also book …").
	leadFillers = map[string]bool{"and": true, "also": true, "then": true, "just": true, "pls": true, "plz": true, "n": true, "an'": true, "an": true}
	// imperatives ask for something done, besides toolVerbs and askVerbs.
	imperatives = map[string]bool{"rent": true, "call": true, "reserve": true, "cancel": true, "schedule": true, "add": true, "put": true,
		"create": true, "plan": true, "arrange": true, "sort": true, "fix": true, "edit": true, "remove": true, "delete": true, "share": true,
		"post": true, "upload": true, "download": true, "install": true, "deliver": true, "pick": true, "drop": true, "wake": true, "ring": true,
		"dial": true, "gimme": true, "lemme": true, "order": true, "look": true, "write": true, "read": true, "sing": true, "watch": true, "listen": true}
)

// judgeWords and hanJudges say how much or how bad (hanJudges are also
// function words of the dictionary: 雾霾好严重 names no place 好严重).
var (
	judgeWords = map[string]bool{"so": true, "very": true, "really": true, "too": true, "super": true, "bad": true, "terrible": true, "awful": true,
		"horrible": true, "crazy": true, "insane": true, "worse": true, "worst": true, "lovely": true, "great": true, "nice": true}
	hanJudges = []string{"好严重", "太严重", "很严重", "非常严重", "特别严重", "严重", "太差", "很差", "好差", "糟糕", "太糟", "太堵", "好堵", "堵死", "好热", "好冷", "太热", "太冷", "好累", "太累", "烦死", "受不了", "饿死", "饿坏", "渴死", "热死", "冷死", "困死", "累死"}
)

// questionWords ask; askVerbs and hanAsks ask for something done.
var (
	questionWords = map[string]bool{"what": true, "whats": true, "what's": true, "how": true, "hows": true, "how's": true, "when": true, "where": true,
		"which": true, "who": true, "why": true, "is": true, "are": true, "do": true, "does": true, "any": true, "will": true, "would": true, "should": true}
	askVerbs = map[string]bool{"play": true, "make": true, "draw": true, "send": true, "buy": true, "reserve": true, "set": true, "open": true, "turn": true,
		"start": true, "stop": true, "remind": true, "text": true, "message": true, "email": true, "pay": true, "transfer": true, "translate": true,
		"give": true, "let": true, "take": true, "bring": true, "split": true, "venmo": true}
	hanAsks = []string{"帮", "请", "给我", "查", "找", "订", "看看", "看下", "瞅", "要", "想", "能", "吗", "呢", "怎么", "咋", "多少", "几", "什么", "啥", "哪", "放", "画", "发", "买", "叫", "打", "设", "告诉", "推荐", "翻"}
)

// sceneLeads start a clause that tells where the user is ("I'm in …").
var sceneLeads = map[string]bool{"i'm": true, "im": true, "i’m": true, "we're": true, "we’re": true, "i'll": true, "we'll": true, "currently": true,
	"flying": true, "heading": true, "going": true, "travelling": true, "traveling": true, "visiting": true, "staying": true, "landing": true,
	"arriving": true, "moving": true, "off": true, "back": true, "headed": true, "headin": true, "driving": true, "leavin": true}

// requestWords ask for something: a clause with one sets no scene ("I'm
// looking for a taxi to the airport").
var requestWords = map[string]bool{"need": true, "want": true, "looking": true, "trying": true, "find": true, "get": true, "book": true,
	"order": true, "call": true, "help": true, "like": true, "i'd": true, "wanna": true, "show": true, "tell": true, "check": true, "search": true,
	"please": true, "pls": true, "can": true, "could": true, "?": true}

// readPlaces finds the places a clause names: "from X to Y", "X到Y",
// "in X", "X的", "X附近", "near the station", and words that refer back
// ("there", "附近").
func readPlaces(toks []token, ix *offlineIndex) (places, map[int]bool) {
	var pl places
	used := map[int]bool{}
	weak := []int(nil) // the tokens of a place read from a plain word after "for" or "of" ("for shorts")
	set := func(dst *string, val string, idx ...int) {
		if *dst == "" && val != "" {
			*dst = innermostPlace(val)
			for _, i := range idx {
				used[i] = true
			}
		}
	}
	for i, t := range toks {
		switch t.kind {
		case tNum:
			// 到798, 从101出发: a number of three digits or more right after
			// 从 or 到, and no count or amount, names a place.
			if i > 0 && (toks[i-1].text == "从" || leadsTo(toks[i-1].text)) && toks[i-1].end == t.start && len(t.text) >= 3 && isDigits(t.text) &&
				(i+1 == len(toks) || !strings.ContainsRune(hanUnitChars, firstRuneOf(toks[i+1].text)) && numberHints[firstRune(toks[i+1].text)] == nil) {
				if toks[i-1].text == "从" {
					set(&pl.origin, t.text, i)
				} else {
					set(&pl.dest, t.text, i)
				}
			}
		case tWord:
			if i+1 < len(toks) && codePair(t, toks[i+1]) {
				// "DXB-LHR 18/03", "PVG-FRA": two airports' codes, from and to.
				set(&pl.origin, t.text, i)
				set(&pl.dest, toks[i+1].text, i+1)
				continue
			}
			lw := strings.ToLower(t.text)
			if p, ok := prepositionTypos[lw]; ok {
				lw = p
			}
			if (lw == "until" || lw == "till") && slices.ContainsFunc(toks[:i], func(t token) bool { return strings.EqualFold(t.text, "from") }) {
				lw = "to" // "from the Hauptbahnhof until the Marienplatz"
			}
			if (lw == "go" || lw == "reach") && i > 0 && i+1 < len(toks) && isCapitalised(toks[i+1].text) && (isCapitalised(toks[i-1].text) && !strings.EqualFold(toks[i-1].text, "i") ||
				slices.ContainsFunc(toks[:i], func(t token) bool { return strings.EqualFold(t.text, "from") })) {
				// "walk from Half Way Tree go Devon House", "take MRT KLCC go
				// Bukit Bintang": a name, then "go" and a name, is a way to it.
				lw = "to"
			}
			switch lw {
			case "from":
				if i+1 < len(toks) && backRef[strings.ToLower(toks[i+1].text)] {
					pl.fromThere = true
				}
				if v, idx := englishPlace(toks, i+1, ix); v != "" {
					set(&pl.origin, v, idx...)
					j := idx[len(idx)-1] + 1
					if j < len(toks) && strings.EqualFold(toks[j].text, "to") {
						if v, idx := englishPlace(toks, j+1, ix); v != "" {
							set(&pl.dest, v, idx...)
						}
					}
				}
			case "to", "towards":
				if i > 0 && infinitiveLeads[strings.ToLower(toks[i-1].text)] && (i+1 >= len(toks) || !isCapitalised(toks[i+1].text)) {
					continue // "my bro there want to video call": to do, not to where
				}
				if i+1 < len(toks) && backRef[strings.ToLower(toks[i+1].text)] {
					pl.toThere = true
				}
				if v, idx := englishPlace(toks, i+1, ix); v != "" {
					set(&pl.dest, v, idx...)
					if o, oidx := nameBefore(toks, i, ix); pl.origin == "" && o != "" && !used[oidx[0]] {
						// "directions Vienna to Prague", "fly Paris to Rome".
						set(&pl.origin, o, oidx...)
					}
				}
			case "in", "at", "near", "around", "for", "of", "into":
				if lw == "into" && (i+1 >= len(toks) || gazetteerName(toks, i+1) == 0 && !isCapitalised(toks[i+1].text)) {
					continue // "translate it into spanish": a language, not a place
				}
				if lw == "of" && (i == 0 || !strings.EqualFold(toks[i-1].text, "weather") && !strings.EqualFold(toks[i-1].text, "north") && !strings.EqualFold(toks[i-1].text, "south")) {
					continue
				}
				v, idx := englishPlace(toks, i+1, ix)
				if v == "" {
					continue
				}
				if weak != nil && (lw != "for" && lw != "of" || isCapitalised(v)) {
					// "warm enough for shorts in Miami": the name after
					// "in" is the place, not the plain word after "for".
					for _, j := range weak {
						delete(used, j)
					}
					pl.place, weak = "", nil
				}
				if pl.place == "" && (lw == "for" || lw == "of") && !isCapitalised(v) {
					weak = idx
				}
				set(&pl.place, v, idx...)
			}
		case tHan:
			if n := latinName(toks, i+1); n > 0 && (t.text == "从" || leadsTo(t.text)) {
				// 从Kings Cross走路去大英博物馆, 去Bukit Bintang: a name in
				// Latin letters after 从 or 去 is a place.
				name, idx := span(toks, i+1, i+1+n)
				if t.text == "从" {
					set(&pl.origin, name, idx...)
				} else {
					set(&pl.dest, name, idx...)
				}
			}
			if nearWords[t.text] && i > 0 {
				// 洛杉矶San Gabriel附近: the Latin name before 附近 is the
				// place, inside the city named before it.
				if k := latinNameBefore(toks, i); k >= 0 {
					name, idx := span(toks, k, i)
					pl.place = ""
					set(&pl.place, name, idx...)
				}
			}
			if t.text == "过去" && i > 0 && travelWords[toks[i-1].text] {
				pl.toThere = true // 开车过去: to the place named before
			}
			if i > 0 && backRef[t.text] {
				// 从那里, 去那边: the place named before.
				switch prev := toks[i-1].text; {
				case prev == "从":
					pl.fromThere = true
				case leadsTo(prev):
					pl.toThere = true
				}
			}
			// 从酒店出发, 到机场: a word after 从 or 到 that names no tool
			// of the catalog is a place.
			if i > 0 && !t.stop && !ix.strongKey(key(t.norm)) && (toks[i-1].text == "从" || leadsTo(toks[i-1].text)) && !used[i] {
				if toks[i-1].text == "从" {
					set(&pl.origin, t.text, i)
				} else {
					set(&pl.dest, t.text, i)
				}
			}
		case tHanRaw:
			prev, next := "", ""
			if i > 0 {
				prev = toks[i-1].text
			}
			if aboutWords[prev] {
				continue // 关于特斯拉的新闻: a topic, not a place
			}
			if numberHints[t.text] != nil {
				continue // 八百八以内的: a bound of a number, not a place
			}
			if i+1 < len(toks) {
				next = toks[i+1].text
				if foodKindAt(toks, i) {
					continue // 泰国菜, 日本料理, 那里的印度餐厅: a kind of food, not a place
				}
			}
			// 从X…到Y, X到Y
			if j := hanTo(toks, i+1); j > 0 && (prev == "从" || i == 0 || toks[i-1].stop) {
				set(&pl.origin, t.text, i)
				if j+1 < len(toks) && toks[j].kind == tNum && toks[j+1].kind == tHanRaw && toks[j].end == toks[j+1].start {
					// 去798艺术区: a name that starts with a number.
					set(&pl.dest, toks[j].text+toks[j+1].text, j, j+1)
				} else {
					set(&pl.dest, toks[j].text, j)
				}
				continue
			}
			if activity(t.text) {
				continue // 去看极光: what the user goes to do, not where
			}
			switch {
			case leadsTo(prev):
				set(&pl.dest, t.text, i)
			case prev == "从":
				set(&pl.origin, t.text, i) // 从广州南站开车过去
			case next == "的" || next == "附近" || next == "周边" || next == "周围" || prev == "在" || prev == "人在":
				set(&pl.place, t.text, i)
			}
		}
	}
	if pl.place == "" && pl.dest == "" && pl.origin == "" {
		// A Chinese run the dictionary does not know ("北京明天天气怎么样"), or
		// a capitalised name not at the start ("Paris weather" too).
		for i, t := range toks {
			if t.kind == tHanRaw && runeLen(t.text) >= 2 && !foodKindAt(toks, i) && !activity(t.text) && (i == 0 || !aboutWords[toks[i-1].text]) && numberHints[t.text] == nil {
				set(&pl.place, t.text, i)
				break
			}
			if n := gazetteerName(toks, i); n > 0 && !isCapitalised(t.text) && !ix.strongKey(key(t.norm)) {
				// "tokyo weather", "hong kong weather tomorrow".
				var words []string
				var idx []int
				for j := i; j < i+n; j++ {
					words = append(words, toks[j].text)
					idx = append(idx, j)
				}
				set(&pl.place, strings.Join(words, " "), idx...)
				break
			}
			if t.kind == tWord && isCapitalised(t.text) && !t.stop && !ix.strongKey(key(t.norm)) && (i > 0 || len(toks) > 1) {
				v, idx := englishPlace(toks, i, ix)
				set(&pl.place, v, idx...)
				if v != "" {
					break
				}
			}
		}
	}
	return pl, used
}

// loneWordBesideKey returns the index of the one plain word of a clause
// of two words, the other a word of the catalog or a typo of one
// ("weahter sarajevo"), or -1: the plain word is what the word asks of.
func loneWordBesideKey(toks []token, ix *offlineIndex) int {
	var content []int
	for i, t := range toks {
		if t.kind == tPunct || t.kind == tWord && (t.stop || timeWords[strings.ToLower(t.text)]) {
			continue
		}
		if t.kind != tWord {
			return -1
		}
		content = append(content, i)
	}
	if len(content) != 2 {
		return -1
	}
	isKey := func(t token) bool {
		return ix.strongKey(key(t.norm)) || ix.typo(t.norm) != "" && ix.strongKey(ix.typo(t.norm))
	}
	for k, i := range content {
		other := toks[content[1-k]]
		t := toks[i]
		if lw := strings.ToLower(t.text); len(t.text) >= 3 && isKey(other) && !isKey(t) && !statementLeads[lw] && !strings.ContainsAny(lw, "'’") && plainNameWord(t, lw, ix) {
			// (Not "she's been on about jollof": a person, not where.)
			return i
		}
	}
	return -1
}

// aboutWords lead a topic: 关于特斯拉, 有关选举.
var aboutWords = map[string]bool{"关于": true, "有关": true}

// prepositionTypos are the prepositions of a place as typed in haste:
// "directions frm brooklyn bridge".
var prepositionTypos = map[string]string{"frm": "from", "fom": "from", "fromm": "from", "neer": "near", "nr": "near", "nearr": "near"}

// foodKindAt says whether the Chinese run toks[i] names a kind of food,
// not a place: before 菜 or 料理 (泰国菜), or between 的 and a word for a
// restaurant (那里的印度餐厅).
func foodKindAt(toks []token, i int) bool {
	if i+1 >= len(toks) {
		return false
	}
	next := toks[i+1]
	return cuisineSuffix[next.text] && next.start == toks[i].end || i > 0 && toks[i-1].text == "的" && restaurantHeads[next.text]
}

// innermostPlace is the last of two names of the gazetteer written
// together, a country and its city (加拿大温哥华 → 温哥华), or in English
// the first, a city and its state or country (cityOfRegion); any other
// name as it is.
func innermostPlace(s string) string {
	if hanRuns(s) == nil {
		return cityOfRegion(s)
	}
	if hanPlaceNames[s] != "" {
		return s
	}
	for i := range s {
		if i > 0 && hanPlaceNames[s[:i]] != "" && hanPlaceNames[s[i:]] != "" {
			return s[i:]
		}
	}
	return s
}

// cityOfRegion is the city of "austin tx", "kingston jamaica", "paris
// france": a name of the gazetteer followed by a state's code or another
// name of the gazetteer; any other name as it is ("mexico city").
func cityOfRegion(s string) string {
	words := strings.Fields(s)
	for k := len(words) - 1; k >= 1; k-- {
		head := foldAccents(strings.ToLower(strings.Join(words[:k], " ")))
		tail := foldAccents(strings.ToLower(strings.Join(words[k:], " ")))
		if englishPlaceNames[head] && (englishPlaceNames[tail] || stateCodes[tail]) {
			return strings.Join(words[:k], " ")
		}
	}
	return s
}

// stateCodes are the codes of states and provinces written after a city
// (not those that are words: in, or, me, hi, ok, oh).
var stateCodes = map[string]bool{"al": true, "ak": true, "az": true, "ar": true, "ca": true, "co": true, "ct": true, "dc": true, "fl": true, "ga": true,
	"ia": true, "id": true, "il": true, "ks": true, "ky": true, "la": true, "ma": true, "md": true, "mi": true, "mn": true, "mo": true, "ms": true, "mt": true,
	"nc": true, "nd": true, "ne": true, "nh": true, "nj": true, "nm": true, "nv": true, "ny": true, "pa": true, "ri": true, "sc": true, "sd": true, "tn": true,
	"tx": true, "ut": true, "va": true, "vt": true, "wa": true, "wi": true, "wv": true, "wy": true,
	"nsw": true, "qld": true, "vic": true, "bc": true, "qc": true, "ab": true, "ont": true}

// backRef are the words after "from", "to", 从 or 到 that mean the place
// named before.
var backRef = map[string]bool{"there": true, "here": true, "那里": true, "那儿": true, "那边": true, "这里": true, "这儿": true, "这边": true}

// nameBefore reads a capitalised name (up to four words) that ends right
// before toks[i], "Vienna" of "Vienna to Prague": no function word and no
// word of the lexicon or the catalog ("Fly to Rome", "Walk to the park").
func nameBefore(toks []token, i int, ix *offlineIndex) (string, []int) {
	if i > 1 && toks[i-1].kind == tWord && towardWords[strings.ToLower(toks[i-1].text)] {
		i-- // "drive Baton Rouge down to New Orleans"
	}
	j := i
	for j > 0 && i-j < 4 {
		t := toks[j-1]
		if j > 1 && j < i && nameJoiners[t.text] && isCapitalised(toks[j-2].text) && !timeName(toks[j].text) {
			j-- // "Port of Spain", "Rio de Janeiro": a name's small word
			continue
		}
		if t.kind != tWord || !isCapitalised(t.text) || t.stop || t.conj || concepts[t.norm] != "" || ix.post.Has(key(t.norm)) {
			break
		}
		j--
	}
	if j == i {
		// "seats san francisco to taipei": a name of the gazetteer as typed.
		for n := min(maxPlaceWords, i); n > 0; n-- {
			if gazetteerName(toks, i-n) == n {
				j = i - n
				break
			}
		}
	}
	if j == i {
		return "", nil
	}
	var words []string
	var idx []int
	for k := j; k < i; k++ {
		words = append(words, toks[k].text)
		idx = append(idx, k)
	}
	return strings.Join(words, " "), idx
}

// towardWords may come between a route's start and "to".
var towardWords = map[string]bool{"down": true, "up": true, "over": true, "out": true, "across": true, "back": true, "on": true}

// demonstratives may stand between 到 and the place it leads to.
var demonstratives = map[string]bool{"那个": true, "这个": true, "那": true, "这": true}

// activity says whether a Chinese run the dictionary does not know starts
// with a verb of what one goes to do (看极光, 吃海鲜, 爬长城), not a name.
func activity(s string) bool {
	if baseDict.words[s].place || hanPlaceNames[s] != "" {
		return false
	}
	switch firstRuneOf(s) {
	case '看', '吃', '玩', '买', '逛', '拍', '泡', '爬', '滑', '听', '见':
		return true
	}
	return false
}

// hanToWords lead on to a destination: 到, 去, 飞 (从上海飞东京).
var hanToWords = map[string]bool{"到": true, "去": true, "至": true, "往": true, "飞": true, "飞往": true, "前往": true, "开往": true}

// leadsTo says whether a Chinese word leads on to a destination: one of
// hanToWords, or a word of the lexicon ending in one (怎么去, 咋去, 怎么到).
func leadsTo(w string) bool {
	if hanToWords[w] {
		return true
	}
	return runeLen(w) > 1 && (strings.HasSuffix(w, "去") || strings.HasSuffix(w, "到")) && concepts[w] != ""
}

// travelVerbs may come between the origin and 到: 从大阪坐地铁到京都.
var travelVerbs = map[string]bool{"坐": true, "乘": true, "搭": true, "骑": true, "打车": true}

// hanTo returns the index of Y in "…到Y" starting at toks[i] (mode words
// such as 步行 may come first), or 0.
func hanTo(toks []token, i int) int {
	for ; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tHan && leadsTo(t.text) {
			for i+2 < len(toks) && demonstratives[toks[i+1].text] {
				i++ // 到那个春熙路
			}
			if i+1 < len(toks) && toks[i+1].kind == tHanRaw || i+2 < len(toks) && toks[i+1].kind == tNum && toks[i+2].kind == tHanRaw && toks[i+1].end == toks[i+2].start {
				return i + 1
			}
			return 0
		}
		if t.kind != tHan || t.stop && !travelVerbs[t.text] {
			return 0
		}
	}
	return 0
}

// strongKey says whether k names a tool somewhere in the catalog (in a
// keyword, name, title or description, not only in a parameter's example).
func (ix *offlineIndex) strongKey(k string) bool {
	ps, _ := ix.post.Get(k)
	for _, p := range ps {
		if p.strong {
			return true
		}
	}
	return false
}

func isCapitalised(s string) bool {
	for _, r := range s {
		// A word with digits is a code (BA117, M25), not a name.
		return unicode.IsUpper(r) && !strings.ContainsAny(s, "0123456789")
	}
	return false
}

// englishPlace reads a place name at toks[i]: capitalised words ("New
// York"), "the" and up to three plain words ("the train station"), or one
// plain word that is not a stop word, a time or a number ("paris").
func englishPlace(toks []token, i int, ix *offlineIndex) (string, []int) {
	if i >= len(toks) {
		return "", nil
	}
	the := false
	if toks[i].kind == tWord && determiners[strings.ToLower(toks[i].text)] {
		the = true
		i++
	}
	if i >= len(toks) {
		return "", nil
	}
	t := toks[i]
	if t.kind == tQuote && t.format == "" {
		return t.text, []int{i} // not an address or a link ("to my son at bob@x.com")
	}
	if t.kind != tWord {
		return "", nil
	}
	lw := strings.ToLower(t.text)
	if englishThere[lw] || timeWords[lw] || the && people[lw] || inIdioms[lw] || !the && travelBy[lw] && (i+1 >= len(toks) || !placeHeads[strings.ToLower(toks[i+1].text)]) {
		return "", nil // "to my son": a person
	}
	var words []string
	var idx []int
	if isCapitalised(t.text) {
		return capitalisedPlace(toks, i)
	}
	if n := gazetteerSpan(toks, i); n > 0 {
		// "new york", "cape town": a name of the gazetteer, as typed; and
		// the head noun after it ("santa monica pier").
		if j := i + n; j < len(toks) && toks[j].kind == tWord && placeHeads[strings.ToLower(toks[j].text)] {
			n++
		}
		for j := i; j < i+n; j++ {
			words = append(words, toks[j].text)
			idx = append(idx, j)
		}
		words, idx = ofCity(toks, words, idx) // "the old quarter of hanoi"
		return strings.Join(words, " "), idx
	}
	limit := 1
	switch {
	case the || placeHeadAt(toks, i):
		limit = 3
	default:
		limit = max(1, plainRunAt(toks, i, ix))
	}
	for j := i; j < len(toks) && len(words) < limit; j++ {
		tj := toks[j]
		lj := strings.ToLower(tj.text)
		if tj.kind != tWord || tj.stop || tj.conj || timeWords[lj] || englishThere[lj] || boundWords[lj] {
			break
		}
		if travelWords[lj] {
			break // "to drive from cusco": a way of going, not a place
		}
		if !the && ix.strongKey(key(tj.norm)) && !(placeHeads[lj] && len(words) > 0) {
			break // a word of the catalog ("weather"), not a place ("connaught place" is one)
		}
		words = append(words, tj.text)
		idx = append(idx, j)
		if placeHeads[lj] && len(words) > 1 && !(j+1 < len(toks) && placeHeads[strings.ToLower(toks[j+1].text)]) {
			break // the noun ends the name: "leicester square", not "leicester square top" (but "brooklyn bridge park")
		}
	}
	if n := len(idx); n > 0 && placeHeads[strings.ToLower(words[n-1])] {
		words, idx = ofCity(toks, words, idx)
	}
	return strings.Join(words, " "), idx
}

// ofCity extends a part of a city read as words (its tokens idx) with the
// city it is of: "the old town of tbilisi".
func ofCity(toks []token, words []string, idx []int) ([]string, []int) {
	if j := idx[len(idx)-1] + 1; j+1 < len(toks) && strings.EqualFold(toks[j].text, "of") {
		if m := gazetteerName(toks, j+1); m > 0 {
			for k := j; k < j+1+m; k++ {
				words = append(words, toks[k].text)
				idx = append(idx, k)
			}
		}
	}
	return words, idx
}

// plainRunAt returns how many plain words at toks[i], three or two, are
// one name typed in lower case ("tsim sha tsui", "kowloon tong", "downtown
// austin"), or 0: none is a function word, a time, a word of the catalog
// or the lexicon, a praise or a filler, and the clause ends after them or
// goes on with a function word or a number ("kings cross by tube",
// "tsim sha tsui 6 places").
func plainRunAt(toks []token, i int, ix *offlineIndex) int {
	city := gazetteerName(toks, i) == 1
	for n := 3; n >= 2; n-- {
		if i+n > len(toks) {
			continue
		}
		plain := true
		for k, t := range toks[i : i+n] {
			if t.kind != tWord || !plainNameWord(t, strings.ToLower(t.text), ix) || city && k > 0 && ix.post.Has(key(t.norm)) {
				// (After a city of the gazetteer, a word of the catalog's
				// is no part of its name: "santiago ozone", but "dubai
				// marina".)
				plain = false
				break
			}
		}
		if !plain {
			continue
		}
		if i+n == len(toks) {
			return n
		}
		next := toks[i+n]
		lw := strings.ToLower(next.text)
		if next.kind == tPunct || next.kind == tNum || next.kind == tWord && (next.stop || next.conj || timeWords[lw] || englishThere[lw] || fillerWords[lw]) {
			return n
		}
	}
	return 0
}

// plainNameWord says whether a lower-case word may be part of a place's
// name: no function word, time, filler, praise, number, word of the
// catalog or concept of the lexicon ("food", "walking").
func plainNameWord(t token, lw string, ix *offlineIndex) bool {
	if t.stop || t.conj || timeWords[lw] || englishThere[lw] || fillerWords[lw] || kindAdjectives[lw] || determiners[lw] {
		return false
	}
	if ix.strongKey(key(t.norm)) || concepts[t.norm] != "" || kindLists[0].words[lw] || kindLists[0].heads[lw] {
		return false
	}
	for _, r := range lw {
		if unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// fillerWords end a clause without meaning anything for its arguments:
// "weather in lisbon rn", "pizza near soho asap".
var fillerWords = map[string]bool{"right": true, "gimme": true, "lemme": true, "specifically": true, "especially": true, "only": true, "exactly": true, "rn": true, "asap": true, "plz": true, "pls": true, "please": true, "thx": true, "thanks": true,
	"tho": true, "lol": true, "btw": true, "pronto": true, "quickly": true, "fast": true, "now": true, "today": true, "real": true, "atm": true,
	// how it is, not where: "haze very bad today"
	"bad": true, "terrible": true, "awful": true, "horrible": true, "crazy": true, "insane": true, "worse": true, "worst": true, "lovely": true,
	"fine": true, "okay": true, "ok": true, "very": true, "really": true, "super": true, "damn": true}

// determiners lead a place of plain words: "the train station", "my
// hotel", "our office".
var determiners = map[string]bool{"the": true, "my": true, "our": true, "your": true}

// inIdioms follow "in" as no place does ("PM10 in particular").
var inIdioms = map[string]bool{"particular": true, "general": true, "total": true, "advance": true, "short": true, "fact": true,
	"case": true, "person": true, "full": true, "detail": true, "brief": true}

// people are who a message goes to, never places ("email my son at …").
var people = map[string]bool{"son": true, "daughter": true, "wife": true, "husband": true, "mom": true, "mum": true, "mother": true, "dad": true,
	"father": true, "brother": true, "sister": true, "boss": true, "friend": true, "friends": true, "colleague": true, "colleagues": true,
	"client": true, "team": true, "manager": true, "partner": true, "kids": true, "children": true, "family": true, "parents": true}

// placeHeadAt says whether a plain word at toks[i] begins a name of up to
// three words that ends in a noun of a place ("hoan kiem lake", "union
// square"): no function word, time or word of the lexicon between.
func placeHeadAt(toks []token, i int) bool {
	for j := i + 1; j < len(toks) && j <= i+2; j++ {
		t := toks[j]
		lw := strings.ToLower(t.text)
		if t.kind != tWord || t.stop || t.conj || timeWords[lw] {
			return false
		}
		if placeHeads[lw] {
			return true
		}
		if concepts[t.norm] != "" {
			return false
		}
	}
	return false
}

// filledWith says whether another argument already holds v (the rest of
// "email bob@example.com" is the address, not a message).
func filledWith(args map[string]any, v string) bool {
	for _, a := range args {
		if s, ok := a.(string); ok && strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}

func formatNamed(name, format string) bool {
	n := strings.ToLower(name)
	if format == "uri" {
		return strings.Contains(n, "url") || strings.Contains(n, "uri") || strings.Contains(n, "link")
	}
	return strings.Contains(n, "email") || strings.Contains(n, "mail")
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func tokKey(t token) string {
	switch t.kind {
	case tWord, tHan:
		return key(t.norm)
	}
	return ""
}

// enumIn finds an enum value named in the clause: by its words ("walking"
// in "walking route"), or through the lexicon ("步行" → walking).
func (ix *offlineIndex) enumIn(enum []any, toks []token, placeToks map[int]bool, goal string) (any, bool) {
	keys := map[string]bool{}
	lower := map[string]bool{}
	for i, t := range toks {
		if t.kind == tWord {
			lower[strings.ToLower(t.text)] = true
		}
		if placeToks[i] {
			continue // "train station" is a place, not a mode (but "to blob 3" names Blob)
		}
		if k := tokKey(t); k != "" {
			keys[k] = true
		}
		if t.kind == tWord {
			if k := ix.typo(t.norm); k != "" {
				keys[k] = true // "drivng directions"
			}
		}
		if v, ok := hanEnumWords[t.text]; ok {
			keys[key(stem(v))] = true // 打车 goes by car: driving (the taxi concept is a tool's, not a mode)
		}
		// A phrase of the lexicon ("public transport") names its concept.
		words := []string{t.norm}
		for j := i + 1; t.kind == tWord && j < len(toks) && j-i < 3 && toks[j].kind == tWord && !placeToks[j]; j++ {
			words = append(words, toks[j].norm)
			if id := concepts[strings.Join(words, " ")]; id != "" {
				keys[id] = true
			}
		}
	}
	// The value of the most words named wins: "premium economy" is
	// premium_economy, not economy.
	var best any
	bestWords := 0
	for _, v := range enum {
		s, ok := v.(string)
		if !ok || s == "" {
			continue
		}
		ws := splitWords(s)
		all := len(ws) > 0
		for _, w := range ws {
			if !keys[key(stem(w))] && !lower[w] {
				all = false
			}
		}
		if all && len(ws) > bestWords {
			best, bestWords = v, len(ws)
		}
		if hanRuns(s) != nil && strings.Contains(goal, s) && bestWords == 0 {
			return v, true
		}
	}
	return best, best != nil
}

// hanEnumWords name an enum value in words the lexicon gives a concept of
// their own: 打车 is a taxi (a tool's concept) and, as a way of going,
// driving.
var hanEnumWords = map[string]string{"打车": "driving", "打个车": "driving", "坐出租": "driving", "出租车": "driving", "叫车": "driving"}

func enumValue(enum []any, v string) (any, bool) {
	for _, e := range enum {
		if s, ok := e.(string); ok && strings.EqualFold(s, v) {
			return e, true
		}
	}
	return nil, false
}

func numberFor(p param, v float64) any {
	if p.typ == "integer" && v == math.Trunc(v) {
		return int(v)
	}
	return v
}

// boolNamed says whether the clause names a switch's words ("includeImage"
// in "with an image").
func boolNamed(name string, toks []token) bool {
	keys := map[string]bool{}
	for _, t := range toks {
		if k := tokKey(t); k != "" {
			keys[k] = true
		}
	}
	n := 0
	for _, w := range splitWords(name) {
		switch w {
		case "include", "is", "enable", "use", "with", "show", "has", "should", "do":
			continue
		}
		if !keys[key(stem(w))] {
			return false
		}
		n++
	}
	return n > 0
}

var (
	aboutRe      = regexp.MustCompile(`(?i)\b(?:about|regarding|on the topic of)\s+|关于`)
	leadFillerRe = regexp.MustCompile(`^(?i:(?:me|us|for me|please|now)\s+)+|^(?:一下|一张|一幅|一遍|一个|帮我|给我|请)+`)
	tailFillerRe = regexp.MustCompile(`(?i)(?:\s+(?:please|for me|now)|吧|吗|呢|。)+$`)
	connectorRe  = regexp.MustCompile(`^(?i:of|showing|that shows|with|where)\s+|^的`)
)

// freeText is the clause after the words that picked the tool: "draw a
// cat on a skateboard" → "a cat on a skateboard", "an image of a
// lighthouse" → "a lighthouse", "研究一下量子计算" → "量子计算".
func freeText(goal string, c *clause, matched map[int]bool) string {
	first := -1
	for i := range c.toks {
		if matched[i] {
			first = i
			break
		}
	}
	if first < 0 {
		return ""
	}
	start := c.toks[first].end
	// Skip articles and more words of the tool ("an image of …").
	j := first + 1
	skippedTool := false
	for j < len(c.toks) && (c.toks[j].stop && c.toks[j].kind == tWord && !isConnector(c.toks[j]) || matched[j]) {
		if matched[j] {
			skippedTool = true
		}
		j++
	}
	if skippedTool && j < len(c.toks) {
		if isConnector(c.toks[j]) {
			start = c.toks[j].end
		} else if !matched[j] {
			start = c.toks[j].start
		}
	}
	tail := goal[start:c.end]
	if loc := aboutRe.FindStringIndex(tail); loc != nil {
		tail = tail[loc[1]:]
	}
	tail = strings.TrimFunc(tail, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) && r != '"' })
	tail = leadFillerRe.ReplaceAllString(tail, "")
	tail = connectorRe.ReplaceAllString(tail, "")
	tail = tailFillerRe.ReplaceAllString(tail, "")
	return strings.TrimFunc(tail, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
}

func isConnector(t token) bool {
	switch strings.ToLower(t.text) {
	case "of", "showing", "about", "的":
		return true
	}
	return false
}

// functions offers the model the tenant's tools as function specs. With
// MaxTools set it keeps the MaxTools entries most relevant to goal, read as
// the offline planner reads it (so a Chinese goal finds its tools too): each
// clause's best fit first, then every other match by score, then the rest
// in catalog order.
func (p *Planner) functions(tenant, goal string) []registry.FunctionTool {
	ix := p.index()
	if p.MaxTools <= 0 || ix == nil {
		return Functions(p.Catalog, p.visibility(), tenant, goal, p.MaxTools)
	}
	vis := make([]bool, len(ix.entries))
	v := p.visibility()
	for i, e := range ix.entries {
		vis[i] = e != nil && (v == nil || v.Visible(tenant, e.e))
	}
	var order []int
	taken := make([]bool, len(ix.entries))
	take := func(i int) {
		if vis[i] && !taken[i] {
			taken[i] = true
			order = append(order, i)
		}
	}
	clauses := ix.clauses(goal, vis, p.now())
	var all []match
	for _, c := range clauses {
		if c.best >= 0 {
			take(c.ranked[c.best].entry)
		}
		all = append(all, c.ranked...)
	}
	ix.sortMatches(all)
	for _, m := range all {
		take(m.entry)
	}
	for _, i := range ix.order {
		take(i)
	}
	out := make([]registry.FunctionTool, 0, min(p.MaxTools, len(order)))
	for _, i := range order[:min(p.MaxTools, len(order))] {
		out = append(out, registry.FunctionSpec(ix.entries[i].e))
	}
	return out
}
