package orchestrator

import "slices"

// Scoring refinements of the one ranking tool search and the offline
// planner share ([offlineIndex.rank]): how the words of an entry add up,
// and the word as typed weighing more than the lexicon concept it
// belongs to.

// fieldShare is how much a word's second and later appearances in an
// entry (in another field, or again) add to its first, best-weighted
// one: a tool that says "weather" in its name and its description is more
// about the weather than one that only says "hot" in its name, but not
// twice as much.
const fieldShare = 0.25

// fieldSum adds a word's weight w in one more field of an entry to the
// weight old it has from the others; again in the same field, the word
// adds nothing but its better weight.
func fieldSum(old, w float64, sameField bool) float64 {
	if sameField {
		return max(old, w)
	}
	return max(old, w) + fieldShare*min(old, w)
}

// placeShare is how much the words of a place the query names weigh
// against its other words: "a taxi to the airport" wants a taxi, and
// "near Times Square" says where, not what.
const placeShare = 0.3

// literalShare is the part of a word's posting that its literal key adds
// to a match besides the posting of its concept: "rain" finds every
// weather tool by the concept, and the forecast that says "rain" first.
const literalShare = 0.3

// literalKey is the key a word of a lexicon concept is also indexed under
// as itself ("rain" besides "#weather"). The prefix keeps it apart from
// every word and concept key.
func literalKey(term string) string { return "=" + term }

// literalHits adds to the matches of r the literal weight of the query's
// words that belong to a concept. It only raises entries the concept
// already matched: the literal key is a tie-breaker, not new evidence
// (strong, named and the matched keys are unchanged).
func (ix *offlineIndex) literalHits(toks []token, places map[int]bool, r *ranking) {
	var seen map[string]bool
	for i, t := range toks {
		if places[i] || t.stop || t.kind != tWord && t.kind != tHan || len(t.norm) < 2 {
			continue
		}
		if key(t.norm) == t.norm || seen[t.norm] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[t.norm] = true
		ps, _ := ix.post.Get(literalKey(t.norm))
		if len(ps) == 0 {
			continue
		}
		idf := ix.idf(len(ps))
		for _, p := range ps {
			if j, ok := r.at[p.entry]; ok {
				r.out[j].score += literalShare * (p.w * idf)
			}
		}
	}
}

// wholePair is how much more a character pair weighs when it is the
// whole of a Chinese word the dictionary does not know (取消, 晚点): the
// pair is then that word, found in a description, and weighs as a word of
// the description does (wDesc against wBigram).
const wholePair = wDesc / wBigram

// pairShare is the weight of the character pairs of token t (its runes
// rs) against a pair's own.
func pairShare(t token, rs []rune) float64 {
	if t.kind == tHanRaw && len(rs) == 2 {
		return wholePair
	}
	return 1
}

// splitParts are the words of an unknown query word as the catalog's texts
// are read (splitWords), when it has more than one: "PM2.5" → "pm2".
func splitParts(text string) []string {
	var out []string
	if ws := splitWords(text); len(ws) > 1 {
		for _, w := range ws {
			if s := stem(w); len(w) > 1 && !plannerStop[s] {
				out = append(out, s)
			}
		}
	}
	return out
}

// softStop are stop words that still say something of the tool a goal
// wants ("plan a trip", "what to see", "tomorrow", 明天, 附近): the
// planner does not choose a tool by them, but they are indexed under
// their literal key and weigh softShare, so they order the entries the
// other words found and, alone, find some (never evidence enough for the
// planner: a soft hit is neither strong nor named).
var softStop = map[string]bool{}

// softShare is the weight of a soft stop word against a word's.
const softShare = 0.3

func init() {
	for _, w := range []string{"plan", "trip", "visit", "travel", "holiday", "vacation", "journey", "check", "see", "look", "show",
		"today", "tomorrow", "tonight", "yesterday", "weekend", "week", "day", "night", "nearby", "near", "around", "run", "know",
		"今天", "明天", "昨天", "今晚", "现在", "附近", "周边", "旅行", "行程", "计划", "推荐", "打车", "旅游", "好玩", "多少钱", "安排", "住", "玩", "飞", "坐"} {
		softStop[stem(w)] = true
	}
}

// softLists are the postings of the soft stop words of the query (not of
// its places), each word once.
func (ix *offlineIndex) softLists(toks []token, places map[int]bool) [][]posting {
	var lists [][]posting
	var seen map[string]bool
	for i, t := range toks {
		if places[i] || !t.stop || t.kind != tWord && t.kind != tHan || !softStop[t.norm] || seen[t.norm] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[t.norm] = true
		if ps, _ := ix.post.Get(literalKey(t.norm)); len(ps) > 0 {
			lists = append(lists, ps)
		}
	}
	return lists
}

// softHits adds the postings of the soft stop words (softLists) to the
// matches of r, making a match for an entry they alone find.
func (ix *offlineIndex) softHits(lists [][]posting, r *ranking) {
	for _, ps := range lists {
		idf := ix.idf(len(ps))
		for _, p := range ps {
			j := r.match(p.entry)
			r.out[j].score += softShare * (p.w * idf)
		}
	}
}

// wordBit is the bit (in names) of the key of t, a dictionary word, or -1:
// the character pairs of t say again what its key said, and do not count
// twice for an entry the key hit.
func wordBit(t token, names []string) int {
	if t.kind != tHan {
		return -1
	}
	return slices.Index(names, key(t.norm))
}

// objectPronouns may stand inside a phrasal verb: "check me in" is the
// phrase "check in".
var objectPronouns = map[string]bool{"me": true, "us": true, "it": true, "him": true, "her": true, "them": true}

// calendarWords are months and days, never typos of a catalog word
// ("march" is not "match").
var calendarWords = map[string]bool{}

func init() {
	for _, w := range []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december",
		"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		calendarWords[stem(w)] = true
	}
}

// dish says whether t is a dish the lexicon does not know, read as food
// by its last character (可乐鸡翅, 羊肉泡馍): it weighs as a place's words do,
// for the dish may be what the user cooks, not where they eat.
func (t token) dish() bool { return t.kind == tHan && t.norm == dishWord && t.text != dishWord }
