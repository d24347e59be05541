package orchestrator

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// durations gives a number parameter that counts minutes, hours or
// seconds (by its name or description: duration_minutes) a length of time
// the clause names, in that unit: "for 2 hours" → 120, "half an hour",
// "an hour and a half", 一个半小时 → 90, 两小时, 45分钟. The number's tokens are
// then no other parameter's.
func (f *filler) durations() {
	if !f.oe.countsTime() {
		return
	}
	text := f.goal[f.c.start:f.c.end]
	mins, from, to, ok := readDuration(text)
	if !ok {
		return
	}
	for _, p := range f.oe.params {
		if p.role != roleNumber {
			continue
		}
		var v float64
		switch {
		case p.words["minut"] || p.words["min"]:
			v = mins
		case p.words["hour"]:
			v = mins / 60
		case p.words["second"]:
			v = mins * 60
		default:
			continue
		}
		if p.typ == "integer" && v != math.Trunc(v) {
			continue
		}
		if f.set(p, numberFor(p, v)) {
			for i, t := range f.c.toks {
				if t.start >= f.c.start+from && t.end <= f.c.start+to {
					f.usedTok[i] = true
				}
			}
			return
		}
	}
}

var (
	enDurationRe = regexp.MustCompile(`(?i)\b(half an?|an?|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[\s-]+(?:one|two|three|four|five|six|seven|eight|nine))?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|\d+(?:\.\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|m)\b(\s+and\s+a\s+half)?`)
	zhDurationRe = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?|[一二两三四五六七八九十]+)?个?(半)?个?(小时|钟头|分钟)`)
	enCounts     = map[string]float64{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "half a": 0.5, "half an": 0.5}
)

// readDuration finds a length of time in text: its minutes and its byte
// span.
func readDuration(text string) (mins float64, from, to int, ok bool) {
	if m := enDurationRe.FindStringSubmatchIndex(text); m != nil {
		n := strings.ToLower(text[m[2]:m[3]])
		v, known := enCounts[n]
		if !known {
			v, known = wordsNumber(n) // "forty five", "twenty-five"
		}
		if !known {
			var err error
			if v, err = strconv.ParseFloat(n, 64); err != nil {
				return 0, 0, 0, false
			}
		}
		if m[6] >= 0 {
			v += 0.5
		}
		unit := strings.ToLower(text[m[4]:m[5]])
		if unit == "m" && !known && v >= 1 || strings.HasPrefix(unit, "min") {
			return v, m[0], m[1], true
		}
		if unit == "m" {
			return 0, 0, 0, false
		}
		return v * 60, m[0], m[1], true
	}
	if m := zhDurationRe.FindStringSubmatchIndex(text); m != nil {
		v := 0.0
		if m[2] >= 0 {
			n := text[m[2]:m[3]]
			if f, err := strconv.ParseFloat(n, 64); err == nil {
				v = f
			} else if h, l := hanNumber(n); l > 0 {
				v = float64(h)
			}
		}
		if m[4] >= 0 {
			v += 0.5
		}
		if v == 0 {
			return 0, 0, 0, false
		}
		if text[m[6]:m[7]] == "分钟" {
			return v, m[0], m[1], true
		}
		return v * 60, m[0], m[1], true
	}
	return 0, 0, 0, false
}

// wordsNumber reads a number of one or two English words ("forty five",
// "ninety-nine", "twelve").
func wordsNumber(s string) (float64, bool) {
	v := 0.0
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '-' })
	for _, w := range parts {
		n, ok := numberWords[w]
		if !ok {
			return 0, false
		}
		v += n
	}
	return v, len(parts) > 0
}

// stays gives an integer parameter that counts nights or days (nights,
// days) the weeks a clause names: "for a week" → 7, "a fortnight" → 14,
// 住一周, 两个星期 (not 一周后, nor a weekday: 星期五).
func (f *filler) stays() {
	text := f.goal[f.c.start:f.c.end]
	days, from, to := readWeeks(text)
	if days == 0 {
		return
	}
	for _, p := range f.oe.params {
		if p.role != roleNumber || !p.words["night"] && !p.words["day"] {
			continue
		}
		if f.set(p, numberFor(p, float64(days))) {
			for i, t := range f.c.toks {
				if t.start >= f.c.start+from && t.end <= f.c.start+to {
					f.usedTok[i] = true
				}
			}
			return
		}
	}
}

var (
	enWeeksRe = regexp.MustCompile(`(?i)\bfor\s+(a|one|two|three|four|\d)\s+weeks?\b|\ba\s+fortnight\b`)
	zhWeeksRe = regexp.MustCompile(`(一|两|二|三|四|[1-4])个?(周|星期|礼拜)`)
)

// readWeeks finds a stay of weeks in text: its days and byte span, or 0.
func readWeeks(text string) (days, from, to int) {
	if m := enWeeksRe.FindStringSubmatchIndex(text); m != nil {
		if m[2] < 0 {
			return 14, m[0], m[1] // a fortnight
		}
		n := strings.ToLower(text[m[2]:m[3]])
		w, ok := enCounts[n]
		if !ok {
			w = float64(atoi(n))
		}
		return 7 * int(w), m[0], m[1]
	}
	for _, m := range zhWeeksRe.FindAllStringSubmatchIndex(text, -1) {
		rest := text[m[1]:]
		if r := firstRuneOf(rest); strings.ContainsRune("一二三四五六日天后内前以", r) {
			continue // 一周后 is a date, 星期五 a weekday
		}
		n := text[m[2]:m[3]]
		w := atoi(n)
		if w == 0 {
			w, _ = hanNumber(n)
		}
		return 7 * w, m[0], m[1]
	}
	return 0, 0, 0
}

// party gives an integer parameter that counts people (guests,
// passengers, adults) the people a clause names without a number: "for
// me and my wife" → 2, "just me", "by myself" → 1.
func (f *filler) party() {
	n, at := partySize(f.c.toks)
	if n == 0 {
		return
	}
	for _, p := range f.oe.params {
		if !p.countsPeople() {
			continue
		}
		if f.set(p, numberFor(p, float64(n))) {
			f.usedTok[at] = true
			return
		}
	}
}

// carriedParty gives a parameter that counts people, and that the clause
// leaves unset, the people a clause before counted ("flights for 4 of us,
// and then a hotel there").
func (f *filler) carriedParty(n int) {
	if n == 0 {
		return
	}
	for _, p := range f.oe.params {
		if p.countsPeople() {
			f.set(p, numberFor(p, float64(n)))
		}
	}
}

// peopleCount reads how many people a clause counts: "4 of us", "3
// people", "2 adults", "me and my wife"; 0 when it counts none.
func peopleCount(toks []token) int {
	for i, t := range toks {
		if t.kind != tNum || i+1 >= len(toks) || t.val < 1 || t.val > 50 || t.val != float64(int(t.val)) {
			continue
		}
		switch w := strings.ToLower(toks[i+1].text); {
		case w == "of" && i+2 < len(toks) && strings.EqualFold(toks[i+2].text, "us"), peopleWords[w]:
			return int(t.val)
		}
	}
	n, _ := partySize(toks)
	return n
}

var peopleWords = map[string]bool{"people": true, "persons": true, "person": true, "ppl": true, "pax": true, "guests": true, "adults": true,
	"passengers": true, "travellers": true, "travelers": true}

// partySize reads "me and my wife" (2), "just me", "by myself" (1): the
// count and the token of "me".
func partySize(toks []token) (int, int) {
	for i, t := range toks {
		lw := strings.ToLower(t.text)
		switch {
		case lw == "me" && i+1 < len(toks):
			// "and" may be gone: the clause was split at it and the part
			// after joined again ("for me" + "my wife").
			j := i + 1
			if w := strings.ToLower(toks[j].text); (w == "and" || w == "n" || w == "&" || w == "an'" || w == "with") && j+1 < len(toks) {
				j++
			}
			if w := strings.ToLower(toks[j].text); (w == "my" || w == "the") && j+1 < len(toks) {
				j++
			}
			if companions[strings.ToLower(toks[j].text)] {
				return 2, i
			}
			if toks[j].kind == tNum && toks[j].val >= 1 && toks[j].val <= 20 && j+1 < len(toks) && (companions[strings.ToLower(toks[j+1].text)] || kinWords[strings.TrimSuffix(strings.ToLower(toks[j+1].text), "s")]) {
				return 1 + int(toks[j].val), i // "me and my two sisters": three
			}
		}
	}
	for i, t := range toks {
		lw := strings.ToLower(t.text)
		if (lw == "just" || lw == "only") && i+1 < len(toks) && strings.EqualFold(toks[i+1].text, "me") || lw == "myself" || lw == "solo" {
			return 1, i // (after "just me n the missus": 2)
		}
	}
	return 0, 0
}

// companions are the one person "me and my …" brings.
var companions = map[string]bool{"wife": true, "husband": true, "partner": true, "missus": true, "gf": true, "bf": true, "girlfriend": true,
	"boyfriend": true, "mum": true, "mom": true, "dad": true, "son": true, "daughter": true, "friend": true, "sister": true, "brother": true,
	"sis": true, "bro": true, "colleague": true, "boss": true, "fiancee": true, "fiance": true, "spouse": true, "hubby": true, "wifey": true}
