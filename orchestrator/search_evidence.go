package orchestrator

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Evidence tool search weighs besides the planner's ranking of a clause
// ([offlineIndex.rank]): the planner chooses one entry and wants proof
// enough for it; search orders every entry and may read the words the
// planner sets aside. Each kind is a class of goal, read from the same
// index (no second one):
//
//   - time scope: a goal about the future ("tomorrow", 明天, "will it")
//     wants a forecast, one about the past ("was", "in 2019", 去年) a
//     history, of whatever its other words found;
//   - Chinese text across words: the character pairs the planner reads
//     inside each word are also read across the words ("走了多少步") and
//     across a measure word ("叫辆车" is 叫车, "放一首歌" is 放歌);
//   - a clipped word ("coords", "pic") read as the catalog word it begins;
//   - a word after 去 or 到 as the place the user goes;
//   - the words users say for the catalog's (searchSynonyms: 退掉 is
//     取消, a recording is audio).

// evidence is postings one reading of the query adds to the clause's
// matches, each weighing share of its own weight (and its key's rarity),
// and the query word it is shown by (Hit.Matched).
type evidence struct {
	word  string
	ps    []posting
	share float64
	// grow says the postings may add entries the planner's keys did not
	// find; else they only raise those it found, and lead only those
	// scoring leadShare of the best or more (a tie-breaker among the
	// entries the goal's other words found).
	grow, lead bool
}

// leadShare is how near the best score an entry must be for a
// tie-breaker to raise it.
const leadShare = 0.6

// Shares of the kinds of evidence against a word's own weight.
const (
	timeShare   = 0.6 // a time-scope word an entry has ("forecast" for "tomorrow")
	acrossShare = 0.8 // a character pair across words or a measure word
	clipShare   = 0.8 // the catalog word a clipped word begins
	// a Chinese keyword said in two parts, which weigh already as words
	compoundShare = 0.75
)

// futureWords and pastWords say a goal's time scope; scopeWords are the
// words of a tool that serves it.
var (
	futureWords = map[string]bool{}
	pastWords   = map[string]bool{}
	futureScope = []string{"forecast", "upcoming", "预报", "未来"}
	pastScope   = []string{"past", "historical", "history", "archive", "histor", "历史", "记录", "过去", "走势"}
)

func init() {
	for _, w := range []string{"tomorrow", "tmrw", "tmr", "tonight", "weekend", "will", "gonna", "upcoming", "next", "later",
		"明天", "后天", "周末", "这周末", "这周", "会", "下周", "下个月", "未来", "会不会", "明早", "明晚", "下周末"} {
		futureWords[stem(w)] = true
	}
	for _, w := range []string{"was", "were", "yesterday", "last", "ago", "past", "history", "historical", "previous",
		"昨天", "前天", "去年", "上周", "上个月", "以前", "当时", "那天", "过去", "历史"} {
		pastWords[stem(w)] = true
	}
}

// measureWords are Chinese measure words (and 一) that stand between a
// verb and its object: 叫辆车, 放首歌, 订个位子, 挂一个号.
const measureWords = "一两个辆首张份位本件条杯台部间只家双套次"

// evidence reads the clause c of goal (now is the time to read dates by)
// into the evidence it gives.
func (ix *offlineIndex) evidence(goal string, c *clause, now time.Time) []evidence {
	var out []evidence
	out = ix.timeScope(c, now, out)
	out = ix.hanAcross(goal, c, out)
	out = ix.clipped(c, out)
	out = ix.destination(c, out)
	out = ix.topic(c, out)
	out = ix.compounds(c, out)
	out = ix.synonyms(c, out)
	out = ix.hanHeads(goal, c, out)
	return out
}

// hanVerbs are Chinese characters that say a catalog word by themselves
// where the dictionary reads no word: a one-character verb (翻成英文 is
// 翻译, 读出来 is 朗读, 挂个号 is 挂号), not of what is done already
// (约了客户). hanKinds are the last character of a compound that names
// its kind (狗狗币 is a coin, 皮肤科 a hospital department, 女声 a
// voice): alone or inside a run the dictionary does not know, never its
// first character (声明).
var (
	hanVerbs = map[rune][]string{
		'翻': {"翻译"}, '译': {"翻译"}, '读': {"朗读"}, '念': {"朗读"}, '挂': {"挂号"},
		'订': {"预订"}, '约': {"预约"}, '画': {"画图"}, '绘': {"画图"},
	}
	hanKinds = map[rune][]string{
		'币': {"虚拟币", "加密货币"}, '科': {"看医生", "挂号"}, '声': {"语音合成", "朗读"}, '嗓': {"语音合成", "朗读"},
		'位': {"订座"},
	}
)

// doneMarks after a verb say it is done already.
const doneMarks = "了过"

// hanCharShare is the weight of a catalog word a single character says.
const hanCharShare = 0.5

// hanHeads is the evidence of the hanVerbs and hanKinds of the clause's
// Chinese text the dictionary does not segment (tHanRaw: also one whose
// date the planner took, "约个周六" keeps 约) or reads as one character.
func (ix *offlineIndex) hanHeads(goal string, c *clause, out []evidence) []evidence {
	var seen map[string]bool
	for _, t := range c.toks {
		if t.kind != tHanRaw && (t.stop || t.kind != tHan || utf8.RuneCountInString(t.norm) != 1) {
			continue
		}
		for at, r := range t.text {
			words := hanVerbs[r]
			if next, _ := utf8.DecodeRuneInString(goal[t.start+at+utf8.RuneLen(r):]); words != nil && strings.ContainsRune(doneMarks, next) {
				continue
			}
			if words == nil && (at > 0 || len(t.text) == utf8.RuneLen(r)) && !endsPlace(t.text[:at+utf8.RuneLen(r)]) {
				words = hanKinds[r]
			}
			for _, w := range words {
				out = ix.keyEvidence(out, &seen, key(w), evidence{word: string(r), share: hanCharShare, grow: true})
			}
		}
	}
	return out
}

// keyEvidence appends ev with the postings of the catalog key k, unless
// the clause gave k already (seen) or the catalog has no entry for it.
func (ix *offlineIndex) keyEvidence(out []evidence, seen *map[string]bool, k string, ev evidence) []evidence {
	if (*seen)[k] {
		return out
	}
	if *seen == nil {
		*seen = map[string]bool{}
	}
	(*seen)[k] = true
	if ps, _ := ix.post.Get(k); len(ps) > 0 {
		ev.ps = ps
		out = append(out, ev)
	}
	return out
}

// endsPlace says s ends with a Chinese place name of the gazetteer
// (莫斯科 ends in 科 and is no hospital department).
func endsPlace(s string) bool {
	for i := range s {
		if _, ok := hanPlaceNames[s[i:]]; ok && utf8.RuneCountInString(s[i:]) > 1 {
			return true
		}
	}
	return false
}

// lookup is the postings of a word as the index keys it: its literal key
// when it belongs to a concept (the word itself, not its whole concept),
// else its key.
func (ix *offlineIndex) lookup(w string) []posting {
	s := w
	if isASCII(w) {
		s = stem(strings.ToLower(w))
	}
	k := key(s)
	if k != s {
		k = literalKey(s)
	}
	ps, _ := ix.post.Get(k)
	return ps
}

// timeScope is the evidence of the goal's time scope: the scope words of
// the future or the past, whichever the clause says (a year before now's
// says the past).
func (ix *offlineIndex) timeScope(c *clause, now time.Time, out []evidence) []evidence {
	future, past := "", ""
	for _, t := range c.toks {
		switch {
		case futureWords[t.norm]:
			future = t.text
		case pastWords[t.norm]:
			past = t.text
		case t.kind == tWord || t.kind == tNum:
			if y, err := strconv.Atoi(strings.SplitN(t.text, "-", 2)[0]); err == nil && y >= 1900 && y < now.Year() {
				past = t.text
			}
		}
	}
	scope, word := futureScope, future
	switch {
	case past != "" && future == "":
		scope, word = pastScope, past
	case future == "":
		return out
	}
	for _, w := range scope {
		if ps := ix.lookup(w); len(ps) > 0 {
			out = append(out, evidence{word: word, ps: ps, share: timeShare, lead: true})
		}
	}
	return out
}

// hanAcross is the evidence of the character pairs of the clause's
// Chinese text that no word of it holds: pairs across two words (not of a
// one-character function word: 的歌 is no word), the word a measure word
// stands inside (叫辆车 is 叫车, 挂一个号 is 挂号: a dictionary word is
// looked up as the word) and the noun a measure word stands for (放首 is
// 放歌).
func (ix *offlineIndex) hanAcross(goal string, c *clause, out []evidence) []evidence {
	if ix.bigrams.Len() == 0 {
		return out
	}
	text := goal[c.start:c.end]
	// inWord[i] says runes i and i+1 of text are in one token of the
	// clause; function[i] that rune i is a one-character stop word.
	var rs []rune
	var inWord, function []bool
	ti := 0
	for at, r := range text {
		for ti < len(c.toks) && c.toks[ti].end-c.start <= at {
			ti++
		}
		in := ti < len(c.toks) && c.toks[ti].start-c.start <= at
		if len(rs) > 0 {
			inWord = append(inWord, in && c.toks[ti].start-c.start < at && c.toks[ti].kind != tPunct)
		}
		function = append(function, in && c.toks[ti].stop && c.toks[ti].end-c.toks[ti].start == utf8.RuneLen(r))
		rs = append(rs, r)
	}
	seen := map[string]bool{}
	add := func(a, b rune, word bool) {
		if !isHan(a) || !isHan(b) {
			return
		}
		var buf [8]byte
		n := utf8.EncodeRune(buf[:], a)
		n += utf8.EncodeRune(buf[n:], b)
		bg := string(buf[:n])
		if seen[bg] {
			return
		}
		seen[bg] = true
		if _, ok := ix.dict.words[bg]; ok && word {
			if ps, _ := ix.post.Get(key(bg)); len(ps) > 0 {
				out = append(out, evidence{word: bg, ps: ps, share: 1, grow: true})
				return
			}
		}
		if ps, _ := ix.bigrams.Get(bg); len(ps) > 0 {
			out = append(out, evidence{word: bg, ps: ps, share: acrossShare, grow: true})
		}
	}
	for j := 0; j+1 < len(rs); j++ {
		if !inWord[j] && !function[j] && !function[j+1] {
			add(rs[j], rs[j+1], false)
		}
		// Over a measure word (and 一 before it).
		k := j + 1
		for k < len(rs)-1 && k-j <= 2 && strings.ContainsRune(measureWords, rs[k]) {
			k++
		}
		if k > j+1 && k < len(rs) && !strings.ContainsRune(measureWords, rs[j]) {
			add(rs[j], rs[k], true)
			if noun, ok := measureNouns[rs[k-1]]; ok {
				add(rs[j], noun, true)
			}
		}
	}
	return out
}

// measureNouns are the nouns some measure words stand for: 放首 is 放歌,
// 订间 is 订房.
var measureNouns = map[rune]rune{'首': '歌', '辆': '车', '间': '房', '张': '票', '部': '片'}

// maxClipped is the longest stem read as clipped.
const maxClipped = 6

// clipped is the evidence of the clause's words the index does not know
// that begin a word of its typo vocabulary ("coords" → coordinates): the
// most common such word, when one is at least twice as common as the
// next.
func (ix *offlineIndex) clipped(c *clause, out []evidence) []evidence {
	for i, t := range c.toks {
		// A capitalised word past the first is a name ("Arsenal"), as typo reads it.
		if t.kind != tWord || t.stop || len(t.norm) < 3 || len(t.norm) > maxClipped || !isASCII(t.norm) || i > 0 && isCapitalised(t.text) || ix.post.Has(key(t.norm)) || calendarWords[t.norm] {
			continue
		}
		best, bestN, second := "", int32(0), int32(0)
		letters := letterSet(t.norm)
		ix.vocab.Range(func(v string, vw vocabWord) bool {
			if letters&^vw.letters == 0 && len(v) >= len(t.norm)+2 && strings.HasPrefix(v, t.norm) {
				switch {
				case vw.refs > bestN:
					best, bestN, second = v, vw.refs, bestN
				case vw.refs > second:
					second = vw.refs
				}
			}
			return true
		})
		if best == "" || bestN < 2*second || ix.typo(t.norm) != "" {
			continue
		}
		if ps, _ := ix.post.Get(key(best)); len(ps) > 0 {
			out = append(out, evidence{word: t.text, ps: ps, share: clipShare, grow: true})
		}
	}
	return out
}

// weigh adds the evidence ev to the matches of c (new matches for the
// evidence that may grow them; the matches are left unordered, for
// Search orders them with the other clauses'). The planner's pick
// (c.scored) stays first unless the evidence raised another entry
// further above it.
func (ix *offlineIndex) weigh(c *clause, ev []evidence) {
	if len(ev) == 0 {
		return
	}
	least := 0.0
	if len(c.ranked) > 0 {
		least = leadShare * c.ranked[0].score
	}
	gap := 0.0
	if c.scored >= 0 {
		gap = c.ranked[0].score - c.ranked[c.scored].score
	}
	at := make(map[int]int32, len(c.ranked))
	for j, m := range c.ranked {
		at[m.entry] = int32(j)
	}
	for _, e := range ev {
		idf := ix.idf(len(e.ps))
		for _, p := range e.ps {
			j, ok := at[p.entry]
			if !ok {
				if !e.grow {
					continue
				}
				j = int32(len(c.ranked))
				at[p.entry] = j
				c.ranked = append(c.ranked, match{entry: p.entry})
			} else if e.lead && c.ranked[j].score < least {
				continue
			}
			c.ranked[j].score += e.share * p.w * idf
		}
	}
	if c.scored >= 0 {
		best := 0.0
		for _, m := range c.ranked {
			best = max(best, m.score)
		}
		if best-c.ranked[c.scored].score > gap+1e-9 {
			c.scored = -1
		}
	}
}

// evidenceWords adds to matched the words of the evidence ev that hit
// entry.
func evidenceWords(matched []string, ev []evidence, entry int) []string {
	for _, e := range ev {
		if e.word == "" || e.share < 0 || slices.Contains(matched, e.word) {
			continue
		}
		if slices.ContainsFunc(e.ps, func(p posting) bool { return p.entry == entry }) {
			matched = append(matched, e.word)
		}
	}
	return matched
}

// topicWords lead the topic of a search or a message ("the email about
// the invoice", 关于报销的邮件): what it is about, not the tool.
// The content of a message is said after 说 ("发封邮件说明天的会取消": the
// email, not the cancellation).
var topicWords = map[string]bool{"about": true, "regarding": true, "关于": true, "有关": true, "说": true, "saying": true}

// topic is the evidence that the words after a topic word are the
// topic: they weigh placeShare, as the places the planner reads do.
func (ix *offlineIndex) topic(c *clause, out []evidence) []evidence {
	in := false
	for i, t := range c.toks {
		_, first := utf8.DecodeRuneInString(t.text)
		switch {
		case topicWords[strings.ToLower(t.text)] || t.kind == tHanRaw && topicWords[t.text[:first]]:
			// A run the dictionary does not know may begin with one ("说周五…").
			in = true
		case !in || t.stop || c.placeToks[i] || t.kind != tWord && t.kind != tHan:
		default:
			if ps, _ := ix.post.Get(key(t.norm)); len(ps) > 0 {
				out = append(out, evidence{ps: ps, share: -(1 - placeShare)})
			}
		}
	}
	return out
}

// destination is the evidence that the Chinese words right after 去 or
// 到 ("叫辆车去浦东机场") are where the user goes, not what they want:
// they weigh placeShare, as the places the planner reads do (a negative
// share takes the rest of their weight back).
func (ix *offlineIndex) destination(c *clause, out []evidence) []evidence {
	for i := 0; i+1 < len(c.toks); i++ {
		if t := c.toks[i]; t.text != "去" && t.text != "到" {
			continue
		}
		for j := i + 1; j < len(c.toks); j++ {
			u := c.toks[j]
			if u.kind != tHan && u.kind != tHanRaw || u.stop || u.start != c.toks[j-1].end {
				break
			}
			if u.kind == tHanRaw || c.placeToks[j] {
				continue
			}
			if ps, _ := ix.post.Get(key(u.norm)); len(ps) > 0 {
				out = append(out, evidence{ps: ps, share: -(1 - placeShare)})
			}
		}
	}
	return out
}

// compounds is the evidence of the Chinese keywords a clause says in two
// parts: 订一张去成都的机票 says 订机票, 汇率到7.5的时候提醒我 says 汇率提醒;
// not a verb right before 的, which says what a thing is (我订的酒店 is
// the hotel I booked).
func (ix *offlineIndex) compounds(c *clause, out []evidence) []evidence {
	for i, t := range c.toks {
		if t.kind != tHan && t.kind != tHanRaw || t.stop || i+1 < len(c.toks) && c.toks[i+1].text == "的" {
			continue
		}
		for _, u := range c.toks[i+1:] {
			if u.kind != tHan && u.kind != tHanRaw || u.stop {
				continue
			}
			w := t.norm + u.norm
			if _, ok := ix.dict.words[w]; !ok {
				continue
			}
			if ps, _ := ix.post.Get(key(w)); len(ps) > 0 {
				out = append(out, evidence{word: w, ps: ps, share: compoundShare, grow: true})
			}
		}
	}
	return out
}
