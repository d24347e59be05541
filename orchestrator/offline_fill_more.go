package orchestrator

import (
	"math"
	"regexp"
	"strings"
	"unicode"
)

// numbers gives the clause's numbers to number parameters: each first to
// the parameter a word next to it names ("3 nights", "under 150", 两晚),
// the nearest word winning, then the rest in order, required first.
func (f *filler) numbers() {
	var nums []int
	for i, t := range f.c.toks {
		if t.kind == tNum && !f.usedTok[i] && !perUnit(f.c.toks, i) {
			nums = append(nums, i)
		}
		if t.kind == tHan && t.stop && isNumeral(t.text) && i+1 < len(f.c.toks) && numberHints[f.c.toks[i+1].text] != nil && !f.usedTok[i] && !perUnit(f.c.toks, i) {
			// 一个人, 一位: the count in a measure word.
			if v, n := hanNumber(t.text); n > 0 && v > 0 {
				f.c.toks[i].val = float64(v)
				nums = append(nums, i)
			}
		}
	}
	type pick struct {
		n, p int
		d    float64
	}
	var picks []pick
	for ni, n := range nums {
		for pi, p := range f.oe.params {
			if p.role != roleNumber {
				continue
			}
			if d := hintDistance(f.c.toks, n, p); d > 0 {
				picks = append(picks, pick{ni, pi, d})
			}
		}
	}
	usedNum := map[int]bool{}
	for len(picks) > 0 {
		b := 0
		for i, pk := range picks {
			if pk.d < picks[b].d {
				b = i
			}
		}
		pk := picks[b]
		p := f.oe.params[pk.p]
		if !usedNum[pk.n] && f.set(p, numberFor(p, f.c.toks[nums[pk.n]].val)) {
			usedNum[pk.n] = true
			f.usedTok[nums[pk.n]] = true
		}
		picks = append(picks[:b], picks[b+1:]...)
	}
	for _, wantReq := range []bool{true, false} {
		for _, p := range f.oe.params {
			if p.role != roleNumber || f.oe.required[p.name] != wantReq {
				continue
			}
			for ni, n := range nums {
				if !usedNum[ni] && f.set(p, numberFor(p, f.c.toks[n].val)) {
					usedNum[ni] = true
					f.usedTok[n] = true
					break
				}
			}
		}
	}
}

// perUnit says whether the 一 at toks[i] says "a" night or person before
// a price (一晚五百以内, 一人两百): no count.
func perUnit(toks []token, i int) bool {
	return toks[i].text == "一" && i+2 < len(toks) && toks[i+2].kind == tNum && (toks[i+1].kind == tHan || toks[i+1].kind == tHanRaw)
}

// numberHints are words next to a number that say what it counts, read as
// words of a parameter's name or description.
var numberHints = map[string][]string{
	"night": {"night"}, "nite": {"night"}, "day": {"day", "night"}, "晚": {"night"}, "夜": {"night"}, "宿": {"night"}, "人": {"guest", "passeng", "people", "person", "adult"}, "位": {"guest", "passeng", "person", "adult"},
	"people": {"guest", "passeng", "person", "adult"}, "peopl": {"guest", "passeng", "person", "adult"}, "ppl": {"guest", "passeng", "person", "adult"}, "person": {"guest", "passeng", "adult"}, "adult": {"guest", "passeng"}, "pax": {"guest", "passeng"},
	"guest": {"passeng", "person", "adult"}, "traveller": {"passeng", "guest"}, "traveler": {"passeng", "guest"},
	"under": {"max", "maximum", "highest", "budget"}, "below": {"max", "maximum", "highest"}, "max": {"maximum", "highest"}, "budget": {"max", "highest"},
	"以内": {"max", "highest"}, "以下": {"max", "highest"}, "不超过": {"max", "highest"}, "不要超过": {"max", "highest"}, "别超过": {"max", "highest"}, "不能超过": {"max", "highest"}, "口": {"guest", "passeng", "person", "adult"}, "不高于": {"max", "highest"}, "低于": {"max", "highest"}, "最多": {"max", "highest", "limit"}, "分钟": {"minut"}, "小时": {"hour"}, "条": {"limit", "headlin", "many"},
	"家": {"limit"}, "间": {"limit"}, "个": {"limit"}, "top": {"limit"}, "headlin": {"limit"}, "min": {"minut"}, "mins": {"minut"},
	// "gimme 4 options", "3 suggestions" (stemmed: options → opt)
	"opt": {"limit"}, "choic": {"limit"}, "result": {"limit"}, "suggest": {"limit"}, "recommendat": {"limit"}, "idea": {"limit"}, "pick": {"limit"},
}

// hintDistance is how near toks[i] a word naming p is (0: none): the
// word right after a number is nearest, then the one right before.
func hintDistance(toks []token, i int, p param) float64 {
	for _, d := range []struct {
		off  int
		dist float64
	}{{1, 1}, {-1, 1.5}, {2, 2}, {-2, 2.5}} {
		j := i + d.off
		if j < 0 || j >= len(toks) {
			continue
		}
		t := toks[j]
		w := t.norm
		if t.kind == tHanRaw || t.kind == tHan {
			w = t.text
			if _, ok := numberHints[w]; !ok {
				w = firstRune(t.text)
			}
		}
		if t.kind != tWord && t.kind != tHan && t.kind != tHanRaw || t.stop && t.kind == tWord && numberHints[w] == nil {
			continue
		}
		if p.words[w] {
			return d.dist
		}
		for _, h := range numberHints[w] {
			if p.words[h] {
				return d.dist
			}
		}
	}
	return 0
}

func firstRune(s string) string {
	for _, r := range s {
		return string(r)
	}
	return ""
}

// text gives quoted text, then the clause itself, to free-text parameters.
func (f *filler) text(quotes []string) {
	for _, wantReq := range []bool{true, false} {
		for _, p := range f.oe.params {
			if _, done := f.args[p.name]; done || f.oe.required[p.name] != wantReq || p.role != roleText && !(p.role == roleOther && wantReq && (p.typ == "string" || p.typ == "")) {
				continue
			}
			if len(quotes) > 0 {
				if f.set(p, quotes[0]) {
					quotes = quotes[1:]
				}
				continue
			}
			if p.role != roleText {
				continue
			}
			if run := f.latinRun(); wantReq && run != "" {
				// 帮我把where is the station翻成中文: the words in
				// another script are the text.
				f.set(p, run)
				continue
			}
			if obj := f.baObject(); wantReq && obj != "" {
				f.set(p, obj) // 把你好翻译成英文: what 把 takes is the text
				continue
			}
			tail := f.trimUsed(freeText(f.goal, f.c, f.matched))
			if !wantReq && f.holdsKeyed(tail) {
				continue // "… with subject X": the text before a value said by its key is no body
			}
			if titleNames[strings.ToLower(p.name)] || tail == "" || f.onlyArgs(tail) {
				tail = f.rest()
			}
			if p.words["topic"] {
				tail = afterTopicLead(tail) // "top 10 aussie headlines on the AFL": the AFL
			}
			if wantReq && namesNothing(tail) {
				continue // "draw me a picture", 帮我画张图呗: what of is not said
			}
			if tail != "" && !filledWith(f.args, tail) {
				f.set(p, tail)
			}
		}
	}
}

// namesNothing says whether a free text only names the kind of thing
// asked for and asks politely ("a picture", "张图呗", "一张图片可不可以"):
// a prompt or message that says nothing of what it is about.
func namesNothing(text string) bool {
	rest := strings.ToLower(text)
	for _, w := range hanAskTails {
		rest = strings.ReplaceAll(rest, w, " ")
	}
	for _, w := range strings.FieldsFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) {
		if hanRuns(w) != nil {
			for _, r := range w {
				if !strings.ContainsRune(hanNothing, r) {
					return false
				}
			}
			continue
		}
		if !latinNothing[w] {
			return false
		}
	}
	return true
}

var (
	// hanAskTails are the polite asks that end a request (可不可以, 谢谢).
	hanAskTails = []string{"可不可以", "可以吗", "好不好", "行不行", "能不能", "谢谢您了", "谢谢你了", "谢谢", "麻烦了", "麻烦你", "麻烦您"}
	// hanNothing: measure words, particles and the names of pictures.
	hanNothing = "一张个幅副些点呗吧吗呢啊呀嘛哦哈啦图片像照画"
	// latinNothing: articles, pronouns and the names of pictures.
	latinNothing = map[string]bool{"a": true, "an": true, "the": true, "me": true, "us": true, "one": true, "some": true, "something": true,
		"picture": true, "pic": true, "image": true, "photo": true, "drawing": true, "painting": true, "for": true, "please": true, "pls": true}
)

// afterTopicLead returns what follows the last "on", "about" or
// "regarding" of a topic's text ("10 aussie headlines on the AFL"), or the
// text when none leads to anything.
func afterTopicLead(tail string) string {
	lw := " " + strings.ToLower(tail)
	tail = " " + tail
	at := -1
	for _, w := range []string{" on the ", " about the ", " on ", " about ", " regarding "} {
		if i := strings.LastIndex(lw, w); i >= 0 && i+len(w) > at {
			at = i + len(w)
		}
	}
	if at < 0 || strings.TrimSpace(tail[at:]) == "" {
		return strings.TrimSpace(tail)
	}
	return strings.TrimSpace(tail[at:])
}

// latinRun returns the longest run of three or more Latin words in a
// clause written in Chinese (its words and the spaces and marks between
// them, as typed), or "".
func (f *filler) latinRun() string {
	han := false
	for _, t := range f.c.toks {
		han = han || t.kind == tHan || t.kind == tHanRaw
	}
	if !han {
		return ""
	}
	best, bestN := "", 0
	for i := 0; i < len(f.c.toks); {
		j, n := i, 0
		for j < len(f.c.toks) && (f.c.toks[j].kind == tWord || f.c.toks[j].kind == tNum) && !f.usedTok[j] && (j == i || !hanBetween(f.goal[f.c.toks[j-1].end:f.c.toks[j].start])) {
			j++
			n++
		}
		if n >= 3 && n > bestN {
			best, bestN = strings.TrimSpace(f.goal[f.c.toks[i].start:f.c.toks[j-1].end]), n
		}
		i = max(j, i+1)
	}
	return best
}

func hanBetween(s string) bool { return strings.ContainsFunc(s, isHan) }

// baObject returns what 把 takes, up to the word that picked the tool
// (把你好翻译成英文 → 你好), or "".
func (f *filler) baObject() string {
	for a, t := range f.c.toks {
		if t.text != "把" {
			continue
		}
		for b := a + 2; b < len(f.c.toks); b++ {
			if f.matched[b] {
				return strings.TrimSpace(f.goal[t.end:f.c.toks[b].start])
			}
		}
		return ""
	}
	return ""
}

// holdsKeyed says whether text ends with a value the clause says by its
// key ("… with subject X").
func (f *filler) holdsKeyed(text string) bool {
	for _, t := range f.c.toks {
		if t.kind == tQuote && t.key != "" && strings.HasSuffix(text, t.text) {
			return true
		}
	}
	return false
}

// trimUsed cuts from the end of tail the words given to other arguments
// and the connectors before them: "good morning to spanish" is the text
// "good morning" when spanish is the target language.
func (f *filler) trimUsed(tail string) string {
	if tail == "" {
		return tail
	}
	at := strings.LastIndex(f.goal[f.c.start:f.c.end], tail)
	if at < 0 {
		return tail
	}
	from, end := f.c.start+at, f.c.start+at+len(tail)
	cut := end
	for i := len(f.c.toks) - 1; i >= 0; i-- {
		t := f.c.toks[i]
		if t.end > end {
			continue
		}
		if t.start < from {
			break
		}
		used := f.usedTok[i] || f.c.placeToks[i] && f.given(t.text)
		if !used {
			break
		}
		cut = t.start
		for i > 0 && valueLeads[strings.ToLower(f.c.toks[i-1].text)] && f.c.toks[i-1].start >= from {
			i--
			cut = f.c.toks[i].start
		}
	}
	if out := strings.TrimRightFunc(f.goal[from:cut], func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }); out != "" {
		return out
	}
	return tail
}

// valueLeads come before a value given to an argument: "to spanish", "in
// japanese", 成法语.
var valueLeads = map[string]bool{"to": true, "into": true, "in": true, "as": true, "成": true, "为": true}

// onlyArgs says whether the clause's tokens within tail are all function
// words or values given to other arguments ("from Brazil" of "sports news
// from Brazil", Brazil being the country).
func (f *filler) onlyArgs(tail string) bool {
	at := strings.LastIndex(f.goal[f.c.start:f.c.end], tail)
	if at < 0 {
		return false
	}
	from, to := f.c.start+at, f.c.start+at+len(tail)
	for i, t := range f.c.toks {
		if t.start < from || t.end > to {
			continue
		}
		if !t.stop && !f.usedTok[i] && !(f.c.placeToks[i] && f.given(t.text)) {
			return false
		}
	}
	return true
}

// given says whether an argument holds s (a place given to a parameter).
func (f *filler) given(s string) bool {
	for _, a := range f.args {
		if v, ok := a.(string); ok && strings.Contains(strings.ToLower(v), strings.ToLower(s)) {
			return true
		}
	}
	return false
}

// titleNames are free-text parameters filled with the rest of the clause
// rather than the words after the tool's.
var titleNames = map[string]bool{"title": true, "subject": true, "summary": true, "name": true}

// rest is the clause without the words that picked the tool, the values
// given to other arguments and the function words at its ends: the title
// of "add dentist appointment on March 14 at 10:00".
func (f *filler) rest() string {
	var words, inner []string // inner: function words after the first word, kept when a word follows (人工智 能)
	for i, t := range f.c.toks {
		if f.matched[i] || f.usedTok[i] || f.c.placeToks[i] && f.given(t.text) || t.kind == tNum || t.kind == tPunct || t.kind == tQuote {
			continue
		}
		if t.stop && !(t.kind == tHan && i > 0 && f.c.toks[i-1].kind == tHanRaw && f.c.toks[i-1].end == t.start && !markers[t.text] && runeLen(t.text) == 1 && len(words) > 0) {
			// (A function character right after an unknown word ends
			// it: 人工智 能.)
			if len(words) > 0 {
				inner = append(inner, t.text)
			}
			continue
		}
		words = append(append(words, inner...), t.text)
		inner = nil
	}
	sep := " "
	if len(words) > 0 && hanRuns(words[0]) != nil {
		sep = ""
	}
	return aboutLeadRe.ReplaceAllString(strings.Join(words, sep), "")
}

// aboutLeadRe is a leading "about" of a title or a topic (关于人工智能).
var aboutLeadRe = regexp.MustCompile(`^(?:关于|有关|(?i:about|regarding)\s+)`)

// accepts says whether v fits the parameter's schema as far as the
// planner reads it: its type, enum and pattern (the tool's validator has
// the last word).
func (p param) accepts(v any) bool {
	if len(p.enum) > 0 {
		ok := false
		for _, e := range p.enum {
			ok = ok || e == v
		}
		if !ok {
			return false
		}
	}
	switch x := v.(type) {
	case string:
		if p.typ != "" && p.typ != "string" {
			return false
		}
		return p.pattern == nil || p.pattern.MatchString(x)
	case int, float64:
		if p.typ == "integer" {
			if fv, ok := x.(float64); ok && fv != math.Trunc(fv) {
				return false
			}
		}
		return p.typ == "number" || p.typ == "integer" || p.typ == ""
	case bool:
		return p.typ == "boolean" || p.typ == ""
	}
	return true
}
