package orchestrator

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

// literalHits adds to the matches of byEntry the literal weight of the
// query's words that belong to a concept. It only raises entries the
// concept already matched: the literal key is a tie-breaker, not new
// evidence (strong, named and the matched keys are unchanged).
func (ix *offlineIndex) literalHits(toks []token, places map[int]bool, byEntry map[int]*match) {
	seen := map[string]bool{}
	for i, t := range toks {
		if places[i] || t.stop || t.kind != tWord && t.kind != tHan || len(t.norm) < 2 {
			continue
		}
		if key(t.norm) == t.norm || seen[t.norm] {
			continue
		}
		seen[t.norm] = true
		for _, p := range ix.post[literalKey(t.norm)] {
			if m := byEntry[p.entry]; m != nil {
				m.score += literalShare * p.w
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
