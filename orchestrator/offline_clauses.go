package orchestrator

import (
	"slices"
	"strings"
	"time"
)

// read reads the clause's typed values and places. Tokens read as a date
// or a time are function words from then on: "Friday" is not a place, the
// 14 of "March 14" not a count.
func (c *clause) read(goal string, ix *offlineIndex, now time.Time) {
	c.values = readValues(goal, c, now)
	for i := range c.values.used {
		// A catalog keyword that holds a date word (明天天气) is still
		// the keyword: the date is read from it all the same.
		if t := c.toks[i]; t.kind == tHan && runeLen(t.text) > 2 && len(ix.lookup(t.norm)) > 0 {
			continue
		}
		c.toks[i].stop = true
	}
	c.places, c.placeToks = readPlaces(c.toks, ix)
	for i := range c.placeToks {
		c.toks[i].place = true
	}
	c.names = namesOf(c.toks)
}

// valueBonus is added to an entry's score for each parameter the clause
// has a typed value for (a currency, a ticker, a date, a unit).
const valueBonus = 1.0

// boostValues raises the entries whose typed parameters the clause fills:
// "300 euros to dollars" picks the currency converter over the unit one,
// "GOOG share price" the quote tool. A value that identifies (a pattern
// matched by a word with a digit or of four capitals or more, or two
// typed values) is evidence enough on its own.
func (ix *offlineIndex) boostValues(c *clause) {
	var byEntry map[int]int // made when an entry is boosted
	// Parameters of one vsig have one answer (and near-duplicate vendors
	// have many such), so each is asked once.
	type answer struct{ ok, id bool }
	answers := map[string]answer{}
	counts := map[string]int{}
	for ei, oe := range ix.entries {
		if oe == nil || !oe.valued {
			continue
		}
		n, strong := 0, false
		var groups map[string]int // values counted for a group, at most one a parameter
		for _, p := range oe.params {
			if p.vsig == "" {
				continue
			}
			a, seen := answers[p.vsig]
			if !seen {
				a.ok, a.id = c.hasValueFor(p, ix)
				answers[p.vsig] = a
			}
			ok, id := a.ok, a.id
			if !ok {
				continue
			}
			if p.group != "" {
				if groups == nil {
					groups = map[string]int{}
				}
				gv, seen := counts[p.vsig]
				if !seen {
					gv = c.groupValues(p)
					counts[p.vsig] = gv
				}
				if groups[p.group] >= gv {
					continue
				}
				groups[p.group]++
			}
			n++
			strong = strong || id
		}
		if n == 0 || n == 1 && !strong {
			continue
		}
		if byEntry == nil {
			byEntry = make(map[int]int, len(c.ranked))
			for j := range c.ranked {
				byEntry[c.ranked[j].entry] = j
			}
		}
		j, ok := byEntry[ei]
		if !ok {
			c.ranked = append(c.ranked, match{entry: ei, keys: map[string]bool{}})
			j = len(c.ranked) - 1
		}
		m := &c.ranked[j]
		m.score += valueBonus * float64(n)
		m.strong, m.named = true, true
	}
	ix.sortMatches(c.ranked)
}

// groupValues is how many values the clause has for p's group.
func (c *clause) groupValues(p param) int {
	if p.group == groupCurrency {
		return len(c.values.currencies)
	}
	return len(impliedDegrees(p.syn, c.toks, enumMentions(p.syn, c.toks, c.names, c.values.used)))
}

// hasValueFor says whether the clause has a typed value for p, and
// whether that value identifies the tool.
func (c *clause) hasValueFor(p param, ix *offlineIndex) (bool, bool) {
	switch {
	case p.group == groupCurrency:
		return len(c.values.currencies) > 0, len(c.values.currencies) > 1
	case p.syn != nil:
		ms := enumMentions(p.syn, c.toks, c.names, c.values.used)
		id := false
		for _, m := range ms {
			id = id || strings.ContainsAny(c.toks[m.tok].text, "0123456789")
		}
		return len(ms) > 0, id
	case p.pattern != nil:
		for i, t := range c.toks {
			if !c.values.used[i] && patternCandidate(t, ix) && t.kind != tNum && p.pattern.MatchString(t.text) {
				// A ticker's pattern fits most words in capitals (CA981,
				// a flight): alone it names the tool only for a known
				// symbol or one with its market (0700.HK).
				strong := len(t.text) >= 4 && t.kind != tQuote && (!p.ticker || knownTickers[t.text] || strings.Contains(t.text, "."))
				return true, strong
			}
		}
		if p.ticker && marketTalk(c) && companyIn(c) {
			return true, true // "hows tencent doing today", "how's tsla doing"
		}
		for i, t := range c.toks {
			if !c.values.used[i] && !c.placeToks[i] && lowerIdentifier(t, ix) && p.pattern.MatchString(strings.ToUpper(t.text)) {
				return true, false // "msft": evidence with the tool's own words
			}
		}
	}
	return false, false
}

// marketTalk says whether a clause asks how a listed thing fares: "how's
// tsla doing", "is nvidia up today", 腾讯今天涨了吗.
func marketTalk(c *clause) bool {
	for _, t := range c.toks {
		if marketWords[strings.ToLower(t.text)] || (t.kind == tHan || t.kind == tHanRaw) && strings.ContainsAny(t.text, "涨跌") {
			return true
		}
	}
	return false
}

var marketWords = map[string]bool{"doing": true, "trading": true, "performing": true, "走势": true, "表现": true, "行情": true}

// companyIn says whether the clause names a company of companyTickers.
func companyIn(c *clause) bool {
	for i := range c.toks {
		if _, n := companyAt(c.toks, i); n > 0 {
			return true
		}
	}
	return false
}

// joinClauses joins to a clause the parts that only carry its arguments
// ("…, 2 guests", "，主题是周报", "body: …", "，下周一入住"), and gives a part
// that only names another place or value ("Sydney and Melbourne", "NVDA
// and MSFT") the tool of its neighbour.
func (ix *offlineIndex) joinClauses(goal string, clauses []clause, now time.Time) []clause {
	out := clauses[:0:0]
	for i := range clauses {
		c := clauses[i]
		if n := len(out); n > 0 && out[n-1].best >= 0 && (c.best < 0 && (ix.carriesArgs(&c, &out[n-1]) || ix.saysMoreText(&c, &out[n-1]) || onlyAsks(&c)) || modifies(&c, &out[n-1], ix) || !c.cond && ix.colonText(&c, &out[n-1]) ||
			c.best >= 0 && onlyACount(&c) && ix.family(c.ranked[c.best].entry) == ix.family(out[n-1].ranked[out[n-1].best].entry)) {
			// (", 3 places enough lah": how many of what the step before finds.)
			prev := &out[n-1]
			if ix.colonText(&c, prev) {
				// "加个日程：家庭聚餐": what follows the colon is the text.
				c.toks = colonQuote(goal, &c)
			}
			prev.toks = append(slices.Clone(prev.toks), c.toks...)
			prev.end, prev.after = c.end, c.after
			prev.read(goal, ix, now)
			continue
		}
		if n := len(out); n > 0 && c.best < 0 && out[n-1].best < 0 && !out[n-1].cond && (c.before == ":" || c.before == "：") {
			// "把这句话翻译成英文：我很好": what follows the colon is the
			// text of the clause before, one request no tool fits.
			prev := &out[n-1]
			prev.toks = append(slices.Clone(prev.toks), c.toks...)
			prev.end, prev.after = c.end, c.after
			continue
		}
		out = append(out, c)
	}
	out = ix.joinForward(goal, out, now)
	// A list of places takes the tool of the clause it is listed with,
	// before or after it ("weather in Lyon, Nice and Marseille",
	// 北京、上海和广州的天气): forward, then backward.
	for pass := 0; pass < 2; pass++ {
		for k := range out {
			i := k
			if pass == 1 {
				i = len(out) - 1 - k
			}
			c := &out[i]
			if c.best >= 0 || c.cond {
				continue
			}
			if c.places.any() == "" {
				c.places.place, c.placeToks = loneName(c)
			}
			if !onlyValues(c, ix) {
				continue
			}
			if i > 0 && out[i-1].best >= 0 && qualifies(out[i-1].places.any(), c.places.any()) {
				c.toks = nil // "near Marina Bay Sands, Singapore": where the place is
				continue
			}
			for _, j := range []int{i - 1, i + 1} {
				if j < 0 || j >= len(out) || out[j].best < 0 || !listSep(c.before, c) && j < i || !listSep(c.after, c) && j > i {
					continue
				}
				c.ranked, c.best, c.scored = out[j].ranked, out[j].best, out[j].scored
				break
			}
		}
	}
	return slices.DeleteFunc(out, func(c clause) bool { return c.toks == nil })
}

// onlyAsks says whether a part without a tool only asks again what the
// step before answers (", which way", ", how far is it", "要多久").
func onlyAsks(c *clause) bool {
	if c.cond || c.places.any() != "" {
		return false
	}
	content := 0
	for _, t := range c.toks {
		if t.stop || t.kind == tPunct || t.kind == tWord && askAgainWords[strings.ToLower(t.text)] {
			continue
		}
		if t.kind != tWord || !askWords[strings.ToLower(t.text)] {
			return false
		}
		content++
	}
	return content > 0
}

// askAgainWords ask for what the step before answers without adding to it
// ("show mi di way", "tell me how far").
var askAgainWords = map[string]bool{"show": true, "tell": true, "give": true, "me": true, "mi": true, "us": true, "di": true, "da": true,
	"please": true, "pls": true, "also": true, "too": true, "how": true, "much": true, "take": true, "takes": true, "it": true, "that": true, "would": true}

var askWords = map[string]bool{"time": true, "way": true, "far": true, "long": true, "distance": true, "quickest": true, "fastest": true, "best": true, "route": true}

// saysMoreText says whether c, a short part after a comma that no tool
// fits and that names no place, says more of the text of the step before
// (", anime style" of "paint me a dragon, anime style"); after "and" too
// when it is a thing, not an errand ("an image with a mountain and a
// coffee cup").
func (ix *offlineIndex) saysMoreText(c, prev *clause) bool {
	if c.cond || c.before != "," && c.before != "，" && !(andLike[c.before] && namesAThing(c)) {
		return false
	}
	oe := ix.entries[prev.ranked[prev.best].entry]
	takes, placed := false, false
	for _, p := range oe.params {
		takes = takes || p.role == roleText && oe.required[p.name]
		placed = placed || p.ofPlace()
	}
	if placed && c.places.any() != "" {
		return false
	}
	content := 0
	for _, t := range c.toks {
		if !t.stop && t.kind != tPunct {
			content++
		}
	}
	return takes && content > 0 && content <= 3
}

// modifies says whether c, after a comma, only says more of the step
// before it: its tool is prev's, it names no place and no action, and it
// is short (", watercolor style", ", pm2.5 specifically", "，PM10高不高").
// After "and" (和) it does when the step only takes a text: two things
// of one picture are one prompt (画一幅富士山和樱花的图).
func modifies(c, prev *clause, ix *offlineIndex) bool {
	if c.best < 0 || c.cond || c.ranked[c.best].entry != prev.ranked[prev.best].entry {
		return false
	}
	oe := ix.entries[prev.ranked[prev.best].entry]
	placed, text := false, false // the entry takes a place: a place of c is its own request
	for _, p := range oe.params {
		placed = placed || p.ofPlace()
		text = text || p.role == roleText && oe.required[p.name]
	}
	sentence := strings.ContainsAny(c.before, ".。!！") && c.places.any() == ""
	if c.before != "," && c.before != "，" && !(andLike[c.before] && text && !placed) && !sentence {
		return false // (a new sentence of the same tool that names no place of its own goes on: "Especially PM2.5 I worry.")
	}
	content := 0
	for i, t := range c.toks {
		if placed && c.placeToks[i] && !c.values.used[i] && !patternCandidate(t, ix) {
			return false
		}
		if t.stop || t.kind == tPunct {
			continue
		}
		if content == 0 && actionVerbs[strings.ToLower(t.norm)] && !makeIt(c.toks, i) {
			return false // "draw a cat, draw a dog": two steps (but "…, make it brighter")
		}
		content++
	}
	return content <= 3
}

// makeIt says whether toks[i] is "make" of "make it …", "make them …":
// how the thing just asked for should be.
func makeIt(toks []token, i int) bool {
	if !strings.EqualFold(toks[i].text, "make") || i+1 >= len(toks) {
		return false
	}
	switch strings.ToLower(toks[i+1].text) {
	case "it", "them", "this", "that", "em":
		return true
	}
	return false
}

// namesAThing says whether a part begins with an article or a number, as
// a thing does ("a coffee cup"), not an errand ("send it to my sister").
func namesAThing(c *clause) bool {
	if len(c.toks) == 0 {
		return false
	}
	t := c.toks[0]
	return t.kind == tNum || t.kind == tWord && articles[strings.ToLower(t.text)]
}

var articles = map[string]bool{"a": true, "an": true, "the": true, "some": true, "two": true, "three": true}

// thenLike lead on to a part that is only a place, which asks the tool of
// the clause before again ("weather in Paris, then in London").
var thenLike = map[string]bool{"or": true, "或者": true, "还是": true, "或": true, "then": true, "also": true, "and then": true, "然后": true, "再": true, "还有": true, "另外": true}

// listSep says whether a separator lists values around c: "and", 和, 、,
// and a comma after or before a part that is only a name ("Nice", not
// "下个月去米兰").
func listSep(s string, c *clause) bool {
	if andLike[s] || thenLike[s] || s == ";" {
		return true
	}
	if s != "," && s != "，" {
		return false
	}
	for i := range c.toks {
		if !c.placeToks[i] {
			return false
		}
	}
	return true
}

// joinForward joins a part without a tool that gives a date or a time to
// the clause after it when that one's entry takes one ("4月1号到香港，订个酒店").
func (ix *offlineIndex) joinForward(goal string, cs []clause, now time.Time) []clause {
	out := cs[:0:0]
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		if i+1 < len(cs) && c.best < 0 && !c.cond && (len(c.values.dates)+len(c.values.times) > 0 && cs[i+1].best >= 0 && ix.takesDate(&cs[i+1]) || ix.topicFor(&c, &cs[i+1]) || ix.numberFor(&c, &cs[i+1])) {
			next := cs[i+1]
			next.toks = append(slices.Clone(c.toks), next.toks...)
			next.start, next.before = c.start, c.before
			next.read(goal, ix, now)
			out = append(out, next)
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

// numberFor says whether c, a part no tool fits, gives the number of
// next, a part whose tool takes a required number and that names none
// ("手机app说明天最高才41°F，换成摄氏度是多少").
func (ix *offlineIndex) numberFor(c, next *clause) bool {
	if next.best < 0 || next.cond || !slices.ContainsFunc(c.toks, func(t token) bool { return t.kind == tNum }) ||
		slices.ContainsFunc(next.toks, func(t token) bool { return t.kind == tNum }) {
		return false
	}
	oe := ix.entries[next.ranked[next.best].entry]
	for _, p := range oe.params {
		if (p.typ == "number" || p.typ == "integer") && oe.required[p.name] {
			return true
		}
	}
	return false
}

// topicFor says whether c, a part no tool fits, is the topic of next, a
// part of only the tool's words and numbers whose tool takes a topic
// ("whats happening with the elections in germany, give me 3 headlines").
func (ix *offlineIndex) topicFor(c, next *clause) bool {
	if next.best < 0 || next.cond || !hasContent(c.toks) {
		return false
	}
	oe := ix.entries[next.ranked[next.best].entry]
	topic := false
	for _, p := range oe.params {
		topic = topic || p.role == roleText && !oe.required[p.name]
	}
	if !topic {
		return false
	}
	for _, t := range next.toks {
		if !t.stop && t.kind != tPunct && t.kind != tNum && !(t.kind == tWord && ix.strongKey(key(t.norm))) {
			return false
		}
	}
	return true
}

func (ix *offlineIndex) takesDate(c *clause) bool {
	for _, p := range ix.entries[c.ranked[c.best].entry].params {
		if p.format == "date" || p.format == "date-time" || p.format == "time" || p.isTimeParam() {
			return true
		}
	}
	return false
}

// carriesArgs says whether part c only carries arguments of prev's entry:
// no place of its own, and a key-value, a quote, a date or time, a number
// or a value the entry takes.
func (ix *offlineIndex) carriesArgs(c, prev *clause) bool {
	if c.cond || asksAnAct(c) {
		return false
	}
	if len(c.values.dates)+len(c.values.times) > 0 || ix.colonText(c, prev) || allKeyValues(c) {
		return true
	}
	oe := ix.entries[prev.ranked[prev.best].entry]
	if onlyACount(c) && slices.ContainsFunc(oe.params, func(p param) bool { return p.role == roleNumber && !p.countsPeople() }) {
		return true // "…, like 5 can already lah": how many
	}
	if _, _, _, ok := readDuration(tokText(c.toks)); ok && oe.countsTime() {
		return true // "，一个半小时": the event's length
	}
	if oe.route && (c.places.origin != "" && c.places.dest == "" && c.places.place == "" && prev.places.origin == "" ||
		c.places.dest != "" && c.places.origin == "" && c.places.place == "" && prev.places.dest == "") {
		// "导航到机场，从酒店出发": the part gives the route its other end.
		return true
	}
	if c.places.any() != "" {
		return false
	}
	for _, t := range c.toks {
		if t.kind == tQuote && (t.key != "" || prev.before == ":" || prev.after == ":" || prev.after == "：") {
			return true
		}
	}
	for i, t := range c.toks {
		if t.kind != tNum && !(i > 0 && isNumeral(c.toks[i-1].text) && c.toks[i-1].stop && numberHints[t.text] != nil) {
			continue
		}
		// A number, or a count in a measure word before a word that says
		// what it counts ("，一个人": 一个 is a function word).
		at := i
		if t.kind != tNum {
			at = i - 1
		}
		for _, p := range oe.params {
			if p.role == roleNumber && hintDistance(c.toks, at, p) > 0 {
				return true
			}
		}
	}
	for _, p := range oe.params {
		if ok, _ := c.hasValueFor(p, ix); ok && (p.group != "" || p.pattern != nil || p.syn != nil) {
			return true
		}
		if len(p.enum) > 0 {
			if _, ok := ix.enumIn(p.enum, c.toks, c.placeToks, ""); ok {
				return true
			}
		}
	}
	return false
}

// onlyACount says whether a part is one number (or a range, "2-3") and
// words that only say it will do ("like 5 can already lah", "3 is
// enough"), or one amount and what it is paid for ("maximum 120 euros the
// night").
func onlyACount(c *clause) bool {
	if len(c.values.currencies) > 1 {
		return false // "…, and 100 quid to euros": a conversion of its own
	}
	n, ranged := 0, false
	money := map[int]bool{}
	for _, v := range c.values.currencies {
		money[v.tok] = true
	}
	for i, t := range c.toks {
		switch {
		case money[i] || t.kind == tWord && rateWords[strings.ToLower(t.text)]:
			// "maximum 120 euros the night": an amount and what it is for
		case t.kind == tNum:
			n++
			ranged = ranged || i > 0 && c.toks[i-1].kind == tNum && t.start-c.toks[i-1].end <= 3 // "2-3", "2 – 3"
		case t.kind == tPunct, t.kind == tWord && (t.stop || courtesyWords[strings.ToLower(t.text)] || enoughWords[strings.ToLower(t.text)]):
		default:
			return false
		}
	}
	return n == 1 || n == 2 && ranged // "2-3 is fine"
}

// rateWords say what an amount is paid for ("a night", "per person").
var rateWords = map[string]bool{"night": true, "nite": true, "per": true, "each": true, "person": true, "head": true, "pp": true, "pn": true}

var enoughWords = map[string]bool{"can": true, "already": true, "enough": true, "fine": true, "will": true, "do": true, "is": true, "be": true,
	"max": true, "maximum": true, "tops": true, "only": true, "just": true, "about": true, "around": true, "or": true, "so": true,
	"top": true, "most": true, "options": true, "choices": true, "results": true, "ones": true, "places": true, "spots": true,
	"suggestions": true, "recommendations": true, "picks": true, "to": true, "good": true}

// asksAnAct says whether a clause asks for something done that no lookup
// does ("book me a sushi place in Ginza tonight", 订个寿司): one a tool
// fits would have its tool, so it is a request of its own that no tool
// serves, not more arguments of the step before, even when it says a time.
func asksAnAct(c *clause) bool {
	var han strings.Builder
	for _, t := range c.toks {
		switch t.kind {
		case tWord:
			if actVerbs[strings.ToLower(t.text)] {
				return true
			}
		case tHan, tHanRaw:
			han.WriteString(t.text)
		}
	}
	for _, w := range hanActs {
		if strings.Contains(han.String(), w) {
			return true
		}
	}
	return false
}

var (
	actVerbs = map[string]bool{"book": true, "reserve": true, "order": true, "buy": true, "purchase": true, "rent": true, "hire": true, "cancel": true, "pay": true}
	hanActs  = []string{"订", "预约", "预定", "帮我买", "给我买", "点个外卖", "叫个", "叫辆"}
)

// colonText says whether c follows a colon after prev, whose entry wants
// a free text the goal does not quote.
func (ix *offlineIndex) colonText(c, prev *clause) bool {
	if c.before != ":" && c.before != "：" {
		return false
	}
	for _, t := range prev.toks {
		if t.kind == tQuote && t.format == "" {
			return false
		}
	}
	oe := ix.entries[prev.ranked[prev.best].entry]
	for _, p := range oe.params {
		if p.role == roleText && oe.required[p.name] {
			return true
		}
	}
	return false
}

func allKeyValues(c *clause) bool {
	for _, t := range c.toks {
		if t.kind != tQuote || t.key == "" {
			return false
		}
	}
	return true
}

// loneName reads a part that is only a capitalised name ("Brisbane" of
// "weather in Perth and Brisbane") as a place.
func loneName(c *clause) (string, map[int]bool) {
	var words []string
	idx := map[int]bool{}
	for i := 0; i < len(c.toks); i++ {
		t := c.toks[i]
		switch n := gazetteerName(c.toks, i); {
		case n > 0:
			// "hong kong", "rome": a name of the gazetteer as typed.
			for j := i; j < i+n; j++ {
				words = append(words, c.toks[j].text)
				idx[j] = true
			}
			i += n - 1
		case t.kind == tWord && isCapitalised(t.text) && !t.stop:
			words = append(words, t.text)
			idx[i] = true
		case t.stop:
		default:
			return "", c.placeToks
		}
	}
	if len(words) == 0 {
		return "", c.placeToks
	}
	return strings.Join(words, " "), idx
}

// onlyValues says whether a clause names only places and values (and
// function words): "Melbourne", "MSFT", "墨尔本".
func onlyValues(c *clause, ix *offlineIndex) bool {
	has := false
	money := len(c.values.currencies) == 1
	for i, t := range c.toks {
		switch {
		case c.placeToks[i]:
			has = true
		case money && (t.kind == tNum || c.values.currencies[0].tok == i):
			has = true // "200 USD and 150 EUR in CNY": an amount, listed
		case t.stop || t.kind == tPunct:
		case i == 0 && t.kind == tWord && courtesyWords[strings.ToLower(t.text)]:
			// "nb 帮我看下腾讯 英伟达 …": an exclamation before the list
		case patternCandidate(t, ix) && t.kind == tWord:
			has = true
		case t.kind == tWord && companyTickers[strings.ToLower(t.text)] != "":
			has = true // "tesla n nvidia": a company, listed like a ticker
		default:
			return false
		}
	}
	return has
}

// tokText is the tokens' text, joined as typed closely enough to read a
// length of time.
func tokText(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && t.kind == tWord && toks[i-1].kind == tWord {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// countsTime says whether the entry has a number parameter that counts
// minutes, hours or seconds.
func (oe *offEntry) countsTime() bool {
	for _, p := range oe.params {
		if p.role == roleNumber && (p.words["minut"] || p.words["hour"] || p.words["second"]) {
			return true
		}
	}
	return false
}

// joinUnfit joins two parts after one another, split at a comma, that no
// tool fits alone when together they fit one: "bake at 180 celsius,
// what's that in fahrenheit" converts units.
func (ix *offlineIndex) joinUnfit(goal string, cs []clause, vis []bool, now time.Time) []clause {
	out := cs[:0:0]
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		if i+1 < len(cs) && c.best < 0 && cs[i+1].best < 0 && !c.cond && !cs[i+1].cond && (c.after == "," || c.after == "，") {
			if j := ix.joinRanked(goal, c, cs[i+1], vis, now); j.best >= 0 {
				out = append(out, j)
				i++
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// colonQuote is the text after a colon as one quoted token, up to a comma
// after which only arguments follow ("：项目评审，一个小时": the text is 项目评审,
// the length of time stays a value).
func colonQuote(goal string, c *clause) []token {
	text := goal[c.start:c.end]
	cut := strings.IndexAny(text, ",，")
	if cut <= 0 {
		return []token{{kind: tQuote, text: text, start: c.start, end: c.end}}
	}
	end := c.start + cut
	out := []token{{kind: tQuote, text: strings.TrimSpace(goal[c.start:end]), start: c.start, end: end}}
	for _, t := range c.toks {
		if t.start > end {
			out = append(out, t)
		}
	}
	return out
}

// splitSpaced splits a clause at the spaces between its Chinese words
// when the parts ask for different tools (伦敦现在几点 给我妈发个邮件…,
// 巴黎天气咋样 埃菲尔铁塔附近有啥像样的法餐): Chinese users often end a
// request with a space, not a comma. A part that no tool fits alone
// (住三晚, 给我top10) stays with the part before it (or, first, after
// it), so a space inside one request splits nothing.
func (ix *offlineIndex) splitSpaced(goal string, cs []clause, vis []bool, now time.Time) []clause {
	out := cs[:0:0]
	for _, c := range cs {
		parts := spacedParts(goal, c)
		if parts == nil {
			out = append(out, c)
			continue
		}
		ix.rankClauses(goal, parts, vis, now)
		tools := map[int]bool{}
		for _, p := range parts {
			if p.best >= 0 {
				tools[ix.family(p.ranked[p.best].entry)] = true
			}
		}
		scene := sceneFirst(goal, parts)
		if len(tools) < 2 && !scene {
			out = append(out, c)
			continue
		}
		var merged []clause
		var pending []token
		for k, p := range parts {
			switch {
			case k == 0 && scene:
				// "下礼拜去日本玩 从新宿坐电车到浅草寺要多久": the trip is
				// the scene; the request names its own places.
				merged = append(merged, clause{toks: p.toks, start: p.start, end: p.end, before: p.before, after: p.after, cond: p.cond})
			case p.best < 0 && len(merged) > 0:
				last := &merged[len(merged)-1]
				last.toks = slices.Concat(last.toks, p.toks) // the parts share c's tokens: no append into them
				last.end, last.after = p.end, p.after
			case p.best < 0:
				pending = slices.Concat(pending, p.toks)
			default:
				if pending != nil {
					p.toks, p.start = slices.Concat(pending, p.toks), pending[0].start
					pending = nil
				}
				merged = append(merged, clause{toks: p.toks, start: p.start, end: p.end, before: p.before, after: p.after, cond: p.cond})
			}
		}
		ix.rankClauses(goal, merged, vis, now)
		out = append(out, merged...)
	}
	return out
}

// sceneFirst says whether the first of a clause's spaced parts only sets
// the scene (no tool fits it, it names a place) and a later part a tool
// fits names places of its own: the scene's place is then not the
// request's.
func sceneFirst(goal string, parts []clause) bool {
	first := parts[0].places
	if len(parts) < 2 || parts[0].best >= 0 || parts[0].cond {
		return false
	}
	if at := strings.TrimSpace(goal[parts[0].start:parts[0].end]); userAt(at) && first.any() != "" && !strings.HasPrefix(at, "我在") {
		// 我已经到解放碑了 走路去洪崖洞要好久: where the user has got to is
		// where the way starts (我在三里屯 找3家… stays one request).
		return slices.ContainsFunc(parts[1:], func(p clause) bool { return p.best >= 0 })
	}
	if first.dest == "" || first.origin != "" || first.place != "" {
		return false // a trip's destination alone (去日本玩, not 我在三里屯)
	}
	for _, p := range parts[1:] {
		if p.best >= 0 {
			return p.places.origin != "" && p.places.dest != "" || p.places.place != "" && p.places.place != first.dest
		}
	}
	return false
}

// spacedParts cuts c at the spaces between two Chinese words, or returns
// nil when it has none. The parts are unread (rankClauses reads them);
// the first keeps c's separator before, the last c's after, and those
// between are separated by a comma.
func spacedParts(goal string, c clause) []clause {
	han := func(t token) bool { return t.kind == tHan || t.kind == tHanRaw }
	var parts []clause
	from := 0
	for k := 0; k+1 < len(c.toks); k++ {
		a, b := c.toks[k], c.toks[k+1]
		if !han(a) || !han(b) || b.start <= a.end || strings.TrimSpace(goal[a.end:b.start]) != "" {
			continue
		}
		parts = append(parts, clause{toks: c.toks[from : k+1], start: c.toks[from].start, end: a.end, after: "，"})
		from = k + 1
	}
	if parts == nil {
		return nil
	}
	parts = append(parts, clause{toks: c.toks[from:], start: c.toks[from].start, end: c.toks[len(c.toks)-1].end, after: c.after})
	parts[0].before, parts[0].cond = c.before, c.cond
	for i := 1; i < len(parts); i++ {
		parts[i].before = "，"
	}
	return parts
}

// family is the capability entry i is a vendor tool of, or i: a
// capability and the tools of its chain do one thing.
func (ix *offlineIndex) family(i int) int {
	if e := ix.entries[i]; e != nil && e.e.Capability == nil {
		if c, ok := ix.capIdx[e.e.Tool.Vendor+"/"+e.e.Tool.Def.Name]; ok {
			return c
		}
	}
	return i
}

// joinRanked is c and next, the clause after it, as one clause, ranked.
func (ix *offlineIndex) joinRanked(goal string, c, next clause, vis []bool, now time.Time) clause {
	one := []clause{{toks: slices.Concat(c.toks, next.toks), start: c.start, end: next.end, before: c.before, after: next.after}}
	ix.rankClauses(goal, one, vis, now)
	return one[0]
}

// joinPrompt joins to a clause whose tool takes a free text the parts
// after it that go on describing it ("generate a pic of the jollof rice
// war, as an old school boxing poster"; "a logo - a baobab tree, minimal,
// green and gold"): a part no tool fits, or that asks for the same tool,
// after a comma, a dash or "and", with no verb of its own at its head.
func (ix *offlineIndex) joinPrompt(goal string, cs []clause, vis []bool, now time.Time) []clause {
	out := cs[:0:0]
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		for c.best >= 0 && !c.cond && i+1 < len(cs) && ix.entries[c.ranked[c.best].entry].takesText() && promptGoesOn(c, cs[i+1], ix) {
			j := ix.joinRanked(goal, c, cs[i+1], vis, now)
			if j.best < 0 || ix.family(j.ranked[j.best].entry) != ix.family(c.ranked[c.best].entry) {
				break
			}
			c = j
			i++
		}
		out = append(out, c)
	}
	return out
}

// promptGoesOn says whether next goes on describing c's free text.
func promptGoesOn(c, next clause, ix *offlineIndex) bool {
	if next.cond || !(c.after == "," || c.after == "，" || c.after == "and" || c.after == "-" || c.after == "、") {
		return false
	}
	if next.best >= 0 && ix.family(next.ranked[next.best].entry) != ix.family(c.ranked[c.best].entry) {
		return false
	}
	for _, t := range next.toks {
		if t.kind == tPunct {
			continue
		}
		lw := strings.ToLower(t.text)
		if t.kind == tWord && t.stop && !askVerbs[lw] && !questionWords[lw] {
			continue
		}
		// The head word: a verb or a question starts a request of its own.
		return !(askVerbs[lw] || questionWords[lw] || requestWords[lw] || ix.strongKey(key(t.norm)) && t.kind == tWord && next.best >= 0 && next.ranked[next.best].keys[key(t.norm)])
	}
	return false
}
