package orchestrator

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Parameters that take one kind of value between them (two currencies, two
// units of one enum, a target and a source language) are filled together:
// a value after "to", "in", 成 goes to the parameter named like a target
// (to, target, dest), one after "from" or next to the amount to the one
// named like a source, the rest in order.

// enumSynonyms reads an enum's values out of its description: "en
// English, zh Chinese", "km kilometres", "pm25 (PM2.5)". It returns each
// synonym, normalized, with its value.
func enumSynonyms(enum []any, desc string) map[string]any {
	out := map[string]any{}
	if len(desc) > maxSynonymDesc || len(enum) > maxSynonymEnum {
		desc = "" // too long to read value by value: the values alone
	}
	for _, e := range enum {
		s, ok := e.(string)
		if !ok || s == "" {
			continue
		}
		out[normPhrase(s)] = e
		if !strings.Contains(strings.ToLower(desc), strings.ToLower(s)) {
			continue
		}
		re, err := regexp.Compile(`(?i)(?:^|[\s,;:(])` + regexp.QuoteMeta(s) + `\s*(?:\(([^)]{1,40})\)|[-=:]?\s*([A-Za-z][A-Za-z .'-]{0,39}?))\s*(?:[,;)]|$)`)
		if err != nil {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(desc, -1) {
			for _, g := range m[1:] {
				if g = strings.TrimSpace(g); g != "" && !strings.EqualFold(g, s) {
					out[normPhrase(g)] = e
				}
			}
		}
	}
	return out
}

// Bounds on what enumSynonyms reads from a vendor's schema.
const (
	maxSynonymDesc = 2000 // bytes of a description
	maxSynonymEnum = 100  // enum values
)

// normPhrase lower-cases and stems a phrase, with British spellings
// folded ("kilometres" meets "kilometers").
func normPhrase(s string) string {
	s = strings.ToLower(s)
	s = britishSpelling.Replace(s)
	ws := strings.Fields(wordJoiners.Replace(s))
	for i, w := range ws {
		if a, ok := englishAliases[w]; ok {
			ws[i] = normPhrase(a) // every word of "united kingdom" stemmed, as the description's are
			continue
		}
		ws[i] = stem(w)
	}
	return strings.Join(ws, " ")
}

var (
	britishSpelling = strings.NewReplacer("metre", "meter", "litre", "liter", "centre", "center")
	wordJoiners     = strings.NewReplacer("-", " ", "_", " ")
)

// englishAliases and hanAliases name enum values the ways users type them.
var englishAliases = map[string]string{"lbs": "pounds", "foot": "feet", "kilos": "kilograms", "kilo": "kilograms", "metres": "meters",
	"celcius": "celsius", "farenheit": "fahrenheit", "british": "united kingdom", "uk": "united kingdom", "usa": "united states", "america": "united states",
	// a country by its people's word (not one that names a language too: french, german, chinese)
	"biz": "business", "aussie": "australia", "australian": "australia", "canadian": "canada", "brazilian": "brazil", "american": "united states", "indian": "india"}

var hanAliases = map[string]string{
	"国内": "china",
	"英文": "english", "英语": "english", "中文": "chinese", "汉语": "chinese", "日语": "japanese", "日文": "japanese", "韩语": "korean", "韩文": "korean",
	"法语": "french", "法文": "french", "德语": "german", "德文": "german", "西班牙语": "spanish", "西语": "spanish", "意大利语": "italian",
	"葡萄牙语": "portuguese", "俄语": "russian", "俄文": "russian", "阿拉伯语": "arabic",
	"公里": "kilometers", "千米": "kilometers", "英里": "miles", "米": "meters", "英尺": "feet", "英寸": "inches", "厘米": "centimeters", "公分": "centimeters",
	"公斤": "kilograms", "千克": "kilograms", "磅": "pounds", "盎司": "ounces", "克": "grams", "摄氏": "celsius", "华氏": "fahrenheit",
	"升": "liters", "加仑": "gallons", "臭氧": "ozone", "二氧化氮": "nitrogen dioxide",
	"头等舱": "first", "商务舱": "business", "公务舱": "business", "经济舱": "economy", "超级经济舱": "premium economy",
	"顺丰": "sf express", "顺丰快递": "sf express", "中国邮政": "china post", "邮政": "china post", "联邦快递": "fedex", "敦豪": "dhl", "美国邮政": "usps",
	"步行": "walking", "走路": "walking", "开车": "driving", "驾车": "driving", "自驾": "driving", "公交": "transit", "地铁": "transit", "火车": "transit",
}

// hanPlaceNames maps a Chinese place name to its English name.
var hanPlaceNames = map[string]string{}

func init() {
	for w := range hanAliases {
		baseDict.add(w, hanWord{})
	}
}

// tokenNames are a clause's tokens as enumMentions compares them: English
// words normalized (normPhrase), Chinese ones as the English names of the
// aliases and places in them.
type tokenNames struct {
	norm []string
	han  [][]string
}

func namesOf(toks []token) tokenNames {
	tn := tokenNames{norm: make([]string, len(toks)), han: make([][]string, len(toks))}
	for i, t := range toks {
		switch t.kind {
		case tWord, tNum:
			tn.norm[i] = normPhrase(t.text)
		case tHan, tHanRaw:
			tn.han[i] = hanNamesIn(t.text)
		}
	}
	return tn
}

// enumMentions finds the values of syn the tokens name, in order.
func enumMentions(syn map[string]any, toks []token, tn tokenNames, used map[int]bool) []groupValue {
	var out []groupValue
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if used[i] {
			continue
		}
		switch t.kind {
		case tWord, tNum:
			n, v := 0, any(nil)
			phrase := ""
			for j := i; j < len(toks) && j-i < 3 && (toks[j].kind == tWord || toks[j].kind == tNum); j++ {
				if j > i {
					phrase += " "
				}
				phrase += tn.norm[j]
				if e, ok := syn[phrase]; ok {
					n, v = j-i+1, e
				}
			}
			// A one-letter value only after its number or "degrees" (30 c,
			// "30 degrees c"), or after "to" a number was said before
			// ("25 degrees c to f").
			unit := i > 0 && (toks[i-1].kind == tNum || degreeWords[strings.ToLower(toks[i-1].text)] ||
				intoWords[strings.ToLower(toks[i-1].text)] && slices.ContainsFunc(toks[:i-1], func(t token) bool { return t.kind == tNum }))
			single := n == 1 && len(t.text) < 2 && !unit
			// "in" before another value is the preposition ("R1500 in
			// pounds", "40 degrees in fahrenheit"), not inches.
			prep := n == 1 && t.stop && i+1 < len(toks) && syn[tn.norm[i+1]] != nil && !toks[i+1].stop
			if n > 0 && !single && !(n == 1 && t.stop && !unit) && !prep {
				out = append(out, groupValue{v, i})
				i += n - 1
			}
		case tHan, tHanRaw:
			if e, ok := syn[t.text]; ok { // a Chinese enum value
				out = append(out, groupValue{e, i})
				continue
			}
			for _, en := range tn.han[i] {
				if e, ok := syn[en]; ok {
					out = append(out, groupValue{e, i})
				}
			}
		}
	}
	return out
}

var (
	degreeWords = map[string]bool{"degrees": true, "degree": true, "deg": true, "°": true}
	intoWords   = map[string]bool{"to": true, "into": true, "in": true}
)

// hanNamesIn returns the English names of the aliases and places in s.
func hanNamesIn(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		best, name := 0, ""
		for j := min(len(s), i+3*8); j > i; j-- { // names of up to eight characters
			w := s[i:j]
			if en, ok := hanAliases[w]; ok && len(w) > best {
				best, name = len(w), en
			} else if en, ok := hanPlaceNames[w]; ok && len(w) > best {
				best, name = len(w), en
			}
			if best > 0 {
				break
			}
		}
		if best == 0 {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		out = append(out, normPhrase(name))
		i += best
	}
	return out
}

// groupValue is a value found for a group, at token tok.
type groupValue struct {
	v   any
	tok int
}

var (
	toWords   = map[string]bool{"to": true, "into": true, "in": true, "as": true, "成": true, "为": true, "换成": true, "合": true, "等于": true, "是": true, "是多少": true, "多少": true, "兑换": true, "换": true, "对": true, "兑": true}
	fromWords = map[string]bool{"from": true, "从": true, "由": true}
)

// direction says whether the value at toks[i] is a target (+1: "to EUR",
// 成英寸), a source (-1: "from USD", next to the amount: "50 euros", "€50")
// or neither (0).
func direction(toks []token, i int) int {
	if i > 0 {
		p := toks[i-1]
		w := strings.ToLower(p.text)
		if toWords[w] || (p.kind == tHanRaw || p.kind == tHan) && (strings.HasSuffix(w, "成") || strings.HasSuffix(w, "换")) {
			return 1
		}
		if fromWords[w] {
			return -1
		}
		if p.kind == tNum {
			return -1
		}
	}
	if i+1 < len(toks) && toks[i+1].kind == tNum {
		return -1
	}
	return 0
}

// paramDirection: +1 for a target (to, target, dest), -1 for a source.
func paramDirection(name string) int {
	for _, w := range splitWords(name) {
		switch w {
		case "to", "target", "dest", "destination", "into", "quote":
			return 1
		case "from", "source", "src", "base", "origin":
			return -1
		}
	}
	return 0
}

// grouped fills each group of parameters from the values the clause names
// for it.
func (f *filler) grouped() {
	seen := map[string]bool{}
	for _, p := range f.oe.params {
		if p.group == "" || seen[p.group] {
			continue
		}
		seen[p.group] = true
		var ps []param
		for _, q := range f.oe.params {
			if q.group == p.group {
				ps = append(ps, q)
			}
		}
		var vals []groupValue
		if p.group == groupCurrency {
			for _, v := range f.c.values.currencies {
				vals = append(vals, groupValue{v.val, v.tok})
			}
		} else {
			vals = impliedDegrees(p.syn, f.c.toks, enumMentions(p.syn, f.c.toks, f.c.names, f.usedTok))
		}
		f.assign(ps, vals)
	}
}

// impliedDegrees adds the scale a temperature is said in when only the one
// it goes to is named ("40 degrees in fahrenheit": from celsius; "100
// degrees to c": from fahrenheit).
func impliedDegrees(syn map[string]any, toks []token, vals []groupValue) []groupValue {
	c, f := syn["c"], syn["f"]
	if len(vals) != 1 || c == nil || f == nil || vals[0].v != c && vals[0].v != f {
		return vals
	}
	other := c
	if vals[0].v == c {
		other = f
	}
	to := vals[0].tok
	for j := 1; j < to; j++ {
		if degreeWords[strings.ToLower(toks[j].text)] && toks[j-1].kind == tNum {
			return []groupValue{{other, j}, vals[0]} // "40 degrees in fahrenheit": the degrees' scale
		}
	}
	if direction(toks, to) > 0 && slices.ContainsFunc(toks[:to], func(t token) bool { return t.kind == tNum }) {
		// "38.5 whats that in F": a number and the one scale it goes to;
		// the number's own scale is said by no token.
		return []groupValue{{other, -1}, vals[0]}
	}
	return vals
}

// assign gives vals to ps: targets and sources first, the rest in order.
// A value named again ("美元兑日元，换500美元") fills one parameter only.
func (f *filler) assign(ps []param, vals []groupValue) {
	done := make([]bool, len(vals))
	given := func(v any) bool {
		for _, p := range ps {
			if a, ok := f.args[p.name]; ok && a == v {
				return true
			}
		}
		return false
	}
	for pass := 0; pass < 2; pass++ {
		for vi, v := range vals {
			if done[vi] || pass == 1 && given(v.v) {
				continue
			}
			d := direction(f.c.toks, v.tok)
			for _, p := range ps {
				if _, set := f.args[p.name]; set || pass == 0 && (d == 0 || paramDirection(p.name) != d) {
					continue
				}
				if f.set(p, v.v) {
					done[vi] = true
					f.usedTok[v.tok] = true
					break
				}
			}
		}
	}
}
