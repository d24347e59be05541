package orchestrator

import "strings"

// kinds gives an optional string parameter that asks for a kind of thing
// (cuisine: kindWords) the word of the clause that names one: "thai" of
// "good thai food", 火锅 of 火锅店, "georgian" of "georgian restaurants".
// A word of a kind list is taken anywhere in the clause; a plain word is
// taken when it stands right before a head noun of the kind ("pho spots",
// 东北菜).
func (f *filler) kinds() {
	for _, p := range f.oe.params {
		if _, done := f.args[p.name]; done || p.role != roleOther || p.typ != "string" && p.typ != "" || len(p.enum) > 0 || p.pattern != nil {
			continue
		}
		k := kindOf(p)
		if k == nil {
			continue
		}
		if v, idx := k.find(f.c, f.ix); v != "" && f.set(p, v) {
			for _, i := range idx {
				f.usedTok[i] = true
			}
		}
	}
}

// kindOf returns the kind list a parameter's name or description names.
func kindOf(p param) *kindList {
	name := strings.ToLower(p.name)
	for i := range kindLists {
		k := &kindLists[i]
		for _, n := range k.names {
			if name == n || strings.Contains(name, n) || containsWord(strings.ToLower(p.desc), n) {
				return k
			}
		}
	}
	return nil
}

func containsWord(s, w string) bool {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
		if f == w {
			return true
		}
	}
	return false
}

// find returns the clause's word of the kind and its tokens.
func (k *kindList) find(c *clause, ix *offlineIndex) (string, []int) {
	toks := c.toks
	for i := range toks {
		for n := 3; n >= 1; n-- {
			if i+n > len(toks) {
				continue
			}
			var words []string
			for _, t := range toks[i : i+n] {
				words = append(words, strings.ToLower(t.text))
			}
			w := strings.Join(words, " ")
			if toks[i].kind != tWord {
				w = strings.Join(words, "")
			}
			if k.words[w] {
				idx := make([]int, n)
				for j := range idx {
					idx[j] = i + j
				}
				return w, idx
			}
		}
	}
	// A plain word right before a head noun: "pho spots", "georgian
	// restaurants"; or two ("bunny chow place", "jollof rice spots").
	plain := func(i int) bool {
		t := toks[i]
		lw := strings.ToLower(t.text)
		return t.kind == tWord && !t.stop && !t.conj && !c.placeToks[i] && !kindAdjectives[lw] && !timeWords[lw] && !k.heads[lw] &&
			!(ix.strongKey(key(t.norm)) && concepts[t.norm] == "")
	}
	for i := 0; i+1 < len(toks); i++ {
		if next := toks[i+1]; next.kind != tWord || !k.heads[strings.ToLower(next.text)] || !plain(i) {
			continue
		}
		if i > 0 && plain(i-1) {
			return strings.ToLower(toks[i-1].text + " " + toks[i].text), []int{i - 1, i}
		}
		return strings.ToLower(toks[i].text), []int{i}
	}
	// A plain word after a verb of eating: "I want eat feijoada near …",
	// "craving some pozole".
	for i := 1; i < len(toks); i++ {
		j := i - 1
		if j > 0 && toks[j].stop && toks[j].kind == tWord && !eatVerbs[strings.ToLower(toks[j].text)] {
			j-- // "eat some", "craving a"
		}
		if k.hanSuffixes != nil && eatVerbs[strings.ToLower(toks[j].text)] && plain(i) && !k.heads[strings.ToLower(toks[i].text)] {
			return strings.ToLower(toks[i].text), []int{i}
		}
	}
	// A Chinese word of the kind's suffix: 东北菜, 泰国菜 (泰国 + 菜).
	for i, t := range toks {
		if i+1 < len(toks) && t.kind == tHanRaw && cuisineSuffix[toks[i+1].text] && toks[i+1].start == t.end && k.hanSuffixes != nil {
			return t.text + toks[i+1].text, []int{i, i + 1}
		}
		if i > 0 && i+1 < len(toks) && t.kind == tHanRaw && !c.placeToks[i] && toks[i-1].text == "的" && restaurantHeads[toks[i+1].text] && k.hanSuffixes != nil {
			return t.text, []int{i}
		}
		if t.kind != tHanRaw && t.kind != tHan || c.placeToks[i] && !strings.HasSuffix(t.text, "菜") {
			continue
		}
		if t.kind == tHan && t.norm == dishWord && k.hanSuffixes != nil && !c.placeToks[i] {
			// A dish the segmenter found by its last character (羊肉泡馍), or
			// its shop's (泡馍店: the dish is 泡馍).
			return strings.TrimRight(t.text, "店馆铺"), []int{i}
		}
		for _, s := range k.hanSuffixes {
			if strings.HasSuffix(t.text, s) && runeLen(t.text) > runeLen(s) && runeLen(t.text) <= 4 {
				return t.text, []int{i}
			}
		}
	}
	return "", nil
}

// eatVerbs say what the user wants to eat next: the plain word after one
// is a dish.
var eatVerbs = map[string]bool{"eat": true, "eating": true, "craving": true, "crave": true, "fancy": true, "fancying": true, "wanna eat": true}

// kindList is the words that name kinds of one thing, and the parameter
// names that ask for one.
type kindList struct {
	names       []string
	words       map[string]bool
	heads       map[string]bool // nouns a kind word stands before (food, spots)
	hanSuffixes []string        // a Chinese word so ending is of the kind (东北菜)
}

var kindLists = []kindList{
	{names: []string{"cuisine", "food_type", "dish"}, words: set(cuisineWords...), heads: set(cuisineHeads...), hanSuffixes: []string{"菜", "料理"}},
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
