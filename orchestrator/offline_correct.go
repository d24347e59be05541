package orchestrator

import (
	"regexp"
	"strings"
)

// Corrections said in the middle of a goal ("on Tuesday at 10, no wait,
// make that Thursday", "sushi near Union Square, no wait, make that
// ramen", 周二 不对 是周四): the value after the correction replaces the
// one of its kind before it. unsay blanks the value taken back and the
// words of the correction with spaces, so that every byte keeps its place
// (the plan's values are read back from the goal as typed, as hanFold's
// are).

var (
	// correctionRe is a correction: what follows it replaces what came before.
	correctionRe = regexp.MustCompile(`(?i)[,，\s]*(?:\bno[,\s]+(?:wait|sorry)\b|\bsorry[,\s]+no\b|\bscratch\s+that\b|\bor\s+rather\b|\bi\s+mean\b|不对|说错了)[,，\s]*(?:\bmake\s+(?:that|it)\b|\bit'?s\b|是|改成)?\s*`)
	// dateAheadRe is a day said after a correction; dateBackRe the last day said before one.
	dateAheadRe = regexp.MustCompile(`(?i)^(?:on\s+)?(?:(?:this|next)\s+)?(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\b|^(?:the\s+)?\d{1,2}(?:st|nd|rd|th)\b|^(?:tomorrow|today|tonight|tmrw)\b|^(?:下下|下|这|本)?(?:周|星期)[一二三四五六日天]|^\d{1,2}[号日]|^(?:明天|后天|大后天|今天)`)
	dateBackRe  = regexp.MustCompile(`(?i)(?:\b(?:(?:this|next)\s+)?(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\b|\b(?:the\s+)?\d{1,2}(?:st|nd|rd|th)(?:\s+of\s+[a-z]+)?\b|\b(?:tomorrow|today|tonight|tmrw)\b|(?:下下|下|这|本)?(?:周|星期)[一二三四五六日天]|\d{1,2}[号日]|明天|后天|大后天|今天)`)
	// clockAheadRe is a time of day said after a correction; clockBackRe the last one before.
	clockAheadRe = regexp.MustCompile(`(?i)^(?:at\s+)?\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)?(?:\s|$|[,.])`)
	clockBackRe  = regexp.MustCompile(`(?i)\b(?:at\s+)?\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)?\b`)
	// leadAheadRe is a preposition that leads what follows a correction ("no wait from the ymca").
	leadAheadRe = regexp.MustCompile(`(?i)^(from|to|near|in|at|around)\s`)
	wordAheadRe = regexp.MustCompile(`(?i)^[a-z]+(?:\s+[a-z]+)?`)
)

// listMarkRe is the mark of an item of a list at the start of a line
// ("1. 250 km to miles", "2) …", "- …", "• …").
var listMarkRe = regexp.MustCompile(`(?m)^[ \t]*(?:\d{1,2}[.)、]|[-•*·])[ \t]+`)

// inlineMarkRe is the mark of an item of a list written on one line
// ("1. 腾讯股价 2. 阿里港股 3. 英伟达").
var inlineMarkRe = regexp.MustCompile(`(?:^|\s)([1-9])[.、)]\s*`)

// unlist blanks the marks of a list's items: their numbers count nothing.
// The marks of a list on one line (1 then 2, …) become a separator (";"),
// as a line's end is one.
func unlist(goal string) string {
	if !strings.ContainsAny(goal, "\n.)、") {
		return goal // no mark of a list
	}
	b := []byte(goal)
	if strings.Contains(goal, "\n") {
		for _, m := range listMarkRe.FindAllStringIndex(goal, -1) {
			for i := m[0]; i < m[1]; i++ {
				b[i] = ' '
			}
		}
	}
	lined := string(b)
	marks := inlineMarkRe.FindAllStringSubmatchIndex(lined, -1)
	next := byte('1')
	var items [][]int
	for _, m := range marks {
		if lined[m[2]] == next {
			items = append(items, m)
			next++
		}
	}
	if len(items) >= 2 {
		for _, m := range items {
			b[m[2]] = ';'
			for i := m[2] + 1; i < m[1]; i++ {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// unsay returns goal with every correction applied: the value taken back
// and the correction's words blanked. A correction whose value before it
// is not found is left as typed.
func unsay(goal string) string {
	if !strings.ContainsAny(goal, "不说") && !correctionHint(goal) {
		return goal
	}
	b := []byte(goal)
	for _, m := range correctionRe.FindAllStringIndex(goal, -1) {
		before, after := goal[:m[0]], goal[m[1]:]
		from, to := takenBack(before, after)
		if from < 0 {
			continue
		}
		for i := from; i < to; i++ {
			b[i] = ' '
		}
		for i := m[0]; i < m[1]; i++ {
			b[i] = ' '
		}
	}
	return string(b) // (the spans are a regexp's matches: on character boundaries)
}

// correctionHint says cheaply whether goal may hold an English correction.
func correctionHint(goal string) bool {
	lw := strings.ToLower(goal)
	for _, w := range []string{"no wait", "no sorry", "sorry no", "scratch that", "or rather", "i mean", "no, wait", "no, sorry"} {
		if strings.Contains(lw, w) {
			return true
		}
	}
	return false
}

// takenBack finds, in before, the span of the value the correction takes
// back: the last one of the kind of what follows it (after). It returns
// -1 when there is none.
func takenBack(before, after string) (int, int) {
	switch {
	case dateAheadRe.MatchString(after):
		return lastMatch(dateBackRe, before)
	case clockAheadRe.MatchString(after):
		return lastMatch(clockBackRe, before)
	}
	if m := leadAheadRe.FindStringSubmatch(after); m != nil {
		// "walking route from home to school no wait from the ymca …":
		// from the last "from" on.
		if from, _ := lastMatch(leadBackRe[strings.ToLower(m[1])], before); from >= 0 {
			return from, len(before)
		}
		return -1, -1
	}
	if w := strings.ToLower(wordAheadRe.FindString(after)); w != "" && (kindLists[0].words[w] || kindLists[0].words[strings.Fields(w)[0]]) {
		// "sushi places …, no wait, make that ramen": the last word of the
		// same kind.
		from, to := -1, -1
		for _, at := range latinWordRe.FindAllStringIndex(before, -1) {
			if kindLists[0].words[strings.ToLower(before[at[0]:at[1]])] {
				from, to = at[0], at[1]
			}
		}
		return from, to
	}
	return -1, -1
}

var (
	latinWordRe = regexp.MustCompile(`[A-Za-z]+`)
	leadBackRe  = map[string]*regexp.Regexp{}
)

func init() {
	for _, w := range []string{"from", "to", "near", "in", "at", "around"} {
		leadBackRe[w] = regexp.MustCompile(`(?i)\b` + w + `\b`)
	}
}

// lastMatch returns the span of re's last match in s, or -1, -1.
func lastMatch(re *regexp.Regexp, s string) (int, int) {
	all := re.FindAllStringIndex(s, -1)
	if len(all) == 0 {
		return -1, -1
	}
	return all[len(all)-1][0], all[len(all)-1][1]
}
