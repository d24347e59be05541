package orchestrator

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Typed values the offline planner reads from a clause for a tool's input
// schema: dates and times (absolute and relative, English and Chinese),
// currencies (symbols, names, ISO codes) and values whose schema gives a
// pattern (tickers, tracking numbers). A value is offered to a parameter
// only when it fits the parameter's schema.

// value is one typed value of a clause: its text for the schema and the
// index of the clause token it starts at.
type value struct {
	val string
	tok int
}

// clauseValues are the typed values of one clause, in the order written.
type clauseValues struct {
	dates, times, currencies []value
	used                     map[int]bool // tokens read as a date or a time (not numbers, not places)
}

var (
	isoDateRe = regexp.MustCompile(`\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b`)
	zhDateRe  = regexp.MustCompile(`(?:(\d{4})年)?(\d{1,2}|[一二三四五六七八九十]{1,3})月(\d{1,2}|[一二三四五六七八九十]{1,3})[日号]?`)
	monthRe   = `(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?`
	enDateRe  = regexp.MustCompile(`(?i)\b` + monthRe + `\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s*(\d{4}))?`)
	enDate2Re = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthRe + `\b(?:,?\s*(\d{4}))?`)
	relDayRe  = regexp.MustCompile(`(?i)\b(?:the\s+)?day\s+after\s+tomorrow\b|\btomorrow\b|\btmrw\b|\btonight\b|\btoday\b|大后天|后天|明天|明晚|明早|明日|今天|今晚|今日`)
	inWeeksRe = regexp.MustCompile(`(?i)\bin\s+(a|one|two|three|four|\d+)\s+weeks?\b|(\d+|[一二三四两]+)个?(?:周|星期|礼拜)(?:后|以后|之后)`)
	inDaysRe  = regexp.MustCompile(`(?i)\bin\s+(\d+)\s+days?\b|(\d+|[一二三四五六七八九十两]+)天(?:后|以后|之后)`)
	enWdayRe  = regexp.MustCompile(`(?i)\b(?:(this|next|coming|on)\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|thu|thurs?|fri)\b`)
	zhDayRe   = regexp.MustCompile(`(\d{1,2}|[一二三四五六七八九十]{1,3})[日号]`)
	zhWdayRe  = regexp.MustCompile(`(下下|下|这|本)?(?:个)?(?:周|星期|礼拜)([一二三四五六日天])`)
	clockRe   = regexp.MustCompile(`\b([01]?\d|2[0-3]):([0-5]\d)\b`)
	ampmRe    = regexp.MustCompile(`(?i)\b(1[0-2]|0?[1-9])(?:[:.]([0-5]\d))?\s*(am|pm|a\.m\.|p\.m\.)`)
	// dottedDateRe is a day, a month and a dot after each (02.04.), or
	// with a year (2.4.2027).
	dottedDateRe = regexp.MustCompile(`(?:^|[^\d.])(\d{1,2})\.(\d{1,2})\.(\d{4}|\d{2})?(?:$|[^\d])`)
	// slashDateRe is a day and a month written with a slash, either way
	// round (17/03, 4/1, 3/20/2027): not 24/7, nor inside a longer run.
	slashDateRe = regexp.MustCompile(`(?:^|[^\d/])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?:$|[^\d/])`)
	zhClockRe   = regexp.MustCompile(`(早上|上午|中午|下午|晚上|傍晚|今晚|明晚|凌晨)?(\d{1,2}|[一二两三四五六七八九十]{1,3})[点點时](半|(\d{1,2}|[一二三四五六七八九十]{1,3})分?)?`)
	noonRe      = regexp.MustCompile(`(?i)\bnoon\b|\bmidday\b|中午12点`)
)

var months = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

var weekdays = map[string]time.Weekday{"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6,
	"mon": 1, "tue": 2, "tues": 2, "thu": 4, "thur": 4, "thurs": 4, "fri": 5,
	"日": 0, "天": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6}

// readValues reads the dates, times and currencies of clause c of goal;
// now dates "tomorrow" and "下周六".
func readValues(goal string, c *clause, now time.Time) clauseValues {
	cv := clauseValues{used: map[int]bool{}}
	text := goal[c.start:c.end]
	mark := func(from, to int) int {
		first := -1
		for i, t := range c.toks {
			if t.start >= c.start+from && t.end <= c.start+to || t.start < c.start+to && t.end > c.start+from {
				cv.used[i] = true
				if first < 0 {
					first = i
				}
			}
		}
		return first
	}
	for _, d := range findDates(text, now) {
		cv.dates = append(cv.dates, value{d.val, mark(d.from, d.to)})
	}
	for _, d := range findTimes(text) {
		cv.times = append(cv.times, value{d.val, mark(d.from, d.to)})
	}
	cv.currencies = findCurrencies(c.toks)
	return cv
}

// after says whether the clause names a day later than day by a word
// relative to today (这周六, 后天, "on friday"; dates are read as
// YYYY-MM-DD, so they compare as strings). A date of the calendar (5号,
// "on the 5th") is not counted: users ask the weather of one that way.
func (cv clauseValues) after(toks []token, day time.Time) bool {
	d := day.Format(time.DateOnly)
	return slices.ContainsFunc(cv.dates, func(v value) bool {
		if v.val <= d || v.tok < 0 {
			return false
		}
		if w := toks[v.tok].text; (strings.EqualFold(w, "the") || strings.EqualFold(w, "on")) && v.tok+1 < len(toks) {
			return relativeDay(toks[v.tok+1].text) // "the day after tomorrow", "on monday", not "the 5th"
		}
		return relativeDay(toks[v.tok].text)
	})
}

// relativeDay says whether a date's first word names it from today.
func relativeDay(w string) bool {
	w = strings.ToLower(w)
	for _, p := range []string{"周", "星期", "礼拜", "后天", "day", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "week", "wknd", "next", "this", "coming"} {
		if strings.Contains(w, p) {
			return true
		}
	}
	return false
}

// found is a value at text[from:to].
type found struct {
	val      string
	from, to int
}

// findDates returns the dates text names, as YYYY-MM-DD, in order; spans
// already read are not read again.
func findDates(text string, now time.Time) []found {
	d := &dateFinder{text: text, today: time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location()),
		digits: strings.ContainsAny(text, "0123456789"), hanNum: strings.ContainsAny(text, "一二三四五六七八九十两")}
	d.numeric()
	d.chinese()
	d.english()
	d.relative()
	d.out = append(d.out, findWeekdays(text, d.today, d.taken)...)
	return d.out
}

// dateFinder gathers the dates of one text, each span read once, the
// formats in findDates' order: the first to read a span keeps it.
type dateFinder struct {
	text           string
	today          time.Time
	digits, hanNum bool
	out            []found
}

func (d *dateFinder) taken(a, b int) bool {
	for _, f := range d.out {
		if a < f.to && b > f.from {
			return true
		}
	}
	return false
}

func (d *dateFinder) add(t time.Time, a, b int) {
	if !d.taken(a, b) {
		d.out = append(d.out, found{t.Format(time.DateOnly), a, b})
	}
}

// numeric reads 2027-03-14, 02.04. and 2.4.2027 (day first), 17/03 and 3/20.
func (d *dateFinder) numeric() {
	text, today := d.text, d.today
	for _, m := range when(d.digits, isoDateRe).FindAllStringSubmatchIndex(text, -1) {
		y, mo, dd := atoi(text[m[2]:m[3]]), atoi(text[m[4]:m[5]]), atoi(text[m[6]:m[7]])
		if t, ok := mkDate(y, mo, dd, today); ok {
			d.add(t, m[0], m[1])
		}
	}
	for _, m := range when(d.digits && strings.Count(text, ".") >= 2, dottedDateRe).FindAllStringSubmatchIndex(text, -1) {
		// "on 02.04.", "2.4.2027": the day first, as much of Europe writes it.
		y := 0
		if m[6] >= 0 {
			if y = atoi(text[m[6]:m[7]]); y < 100 {
				y += 2000
			}
		}
		if t, ok := mkDate(y, atoi(text[m[4]:m[5]]), atoi(text[m[2]:m[3]]), today); ok {
			d.add(t, m[2], max(m[5]+1, m[7]))
		}
	}
	for _, m := range when(d.digits && strings.Contains(text, "/"), slashDateRe).FindAllStringSubmatchIndex(text, -1) {
		if t, ok := slashDate(text[m[2]:m[3]], text[m[4]:m[5]], m[6] >= 0 && atoi(text[m[6]:m[7]]) > 0, text[max(m[6], 0):max(m[7], 0)], today); ok {
			d.add(t, m[2], max(m[5], m[7]))
		}
	}
}

// chinese reads 3月14日 and a day of the month alone (20日, 5号).
func (d *dateFinder) chinese() {
	text, today := d.text, d.today
	for _, m := range when((d.digits || d.hanNum) && strings.Contains(text, "月"), zhDateRe).FindAllStringSubmatchIndex(text, -1) {
		y := 0
		if m[2] >= 0 {
			y = atoi(text[m[2]:m[3]])
		}
		if t, ok := mkDate(y, numeral(text[m[4]:m[5]]), numeral(text[m[6]:m[7]]), today); ok {
			d.add(t, m[0], m[1])
		}
	}
	for _, m := range when((d.digits || d.hanNum) && strings.ContainsAny(text, "日号"), zhDayRe).FindAllStringSubmatchIndex(text, -1) {
		// A day of the month alone (20日, 5号): this month's, or next
		// month's when it has passed; not a number's (3号线, 5号楼).
		if r := lastRune(text[:m[0]]); unicode.IsDigit(r) || r == '月' || r == '第' || strings.ContainsRune(dayNotAfter, firstRuneOf(text[m[1]:])) {
			continue
		}
		if t, ok := dayOfMonth(numeral(text[m[2]:m[3]]), today); ok {
			d.add(t, m[0], m[1])
		}
	}
}

// english reads "20th march", "march 5, 2027" and "on the 28th".
func (d *dateFinder) english() {
	text, today := d.text, d.today
	// The day before its month first: "from 20th march 5 nights" is the
	// 20th, not March 5.
	for _, re := range []*regexp.Regexp{enDate2Re, enDateRe} {
		for _, m := range when(d.digits, re).FindAllStringSubmatchIndex(text, -1) {
			mon, day := text[m[2]:m[3]], text[m[4]:m[5]]
			if re == enDate2Re {
				mon, day = day, mon
			}
			y := 0
			if m[6] >= 0 {
				y = atoi(text[m[6]:m[7]])
			}
			if t, ok := mkDate(y, int(months[strings.ToLower(mon[:3])]), atoi(day), today); ok {
				d.add(t, m[0], m[1])
			}
		}
	}
	for _, m := range when(d.digits, enDayRe).FindAllStringSubmatchIndex(text, -1) {
		// "on the 28th": a day of the month alone, as 28号.
		if t, ok := dayOfMonth(atoi(text[m[2]:m[3]]), today); ok {
			d.add(t, m[0], m[1])
		}
	}
}

// relative reads tomorrow, 后天, "in 3 days", 三天后, "in two weeks", 一周后.
func (d *dateFinder) relative() {
	text, today := d.text, d.today
	for _, m := range relDayRe.FindAllStringIndex(text, -1) {
		d.add(today.AddDate(0, 0, relativeDays(strings.ToLower(text[m[0]:m[1]]))), m[0], m[1])
	}
	for _, m := range when(d.digits || d.hanNum, inDaysRe).FindAllStringSubmatchIndex(text, -1) {
		n := 0
		if m[2] >= 0 {
			n = atoi(text[m[2]:m[3]])
		} else {
			n = numeral(text[m[4]:m[5]])
		}
		d.add(today.AddDate(0, 0, n), m[0], m[1])
	}
	for _, m := range when(strings.ContainsAny(text, "wW周星礼"), inWeeksRe).FindAllStringSubmatchIndex(text, -1) {
		// "in two weeks", 一周后, 两个星期以后: that many weeks from today.
		n := 2
		if m[2] < 0 {
			n = 4
		}
		c := strings.ToLower(text[m[n]:m[n+1]])
		w, ok := enCounts[c]
		if !ok {
			if w = float64(atoi(c)); w == 0 {
				h, _ := hanNumber(c)
				w = float64(h)
			}
		}
		if w >= 1 {
			d.add(today.AddDate(0, 0, 7*int(w)), m[0], m[1])
		}
	}
}

// dayOfMonth is day d of this month, or of the next when it has passed.
func dayOfMonth(d int, today time.Time) (time.Time, bool) {
	t, ok := mkDate(today.Year(), int(today.Month()), d, today)
	if ok && t.Before(today) {
		t, ok = mkDate(today.Year(), int(today.Month())+1, d, today)
		if int(today.Month()) == 12 {
			t, ok = mkDate(today.Year()+1, 1, d, today)
		}
	}
	return t, ok
}

// weekAfterRe follows a weekday that is a week later ("Monday week").
var weekAfterRe = regexp.MustCompile(`(?i)^\s+week\b`)

// enDayRe reads a day of the month said alone: "on the 28th", "the 3rd".
var enDayRe = regexp.MustCompile(`(?i)\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b`)

// dayNotAfter are characters after which 5号 numbers a thing, not a day:
// 3号线, 5号楼, 2号门; and 日元 is a currency (一千五日元).
const dayNotAfter = "线楼门房馆院车站口厅位桌床机元币"

func relativeDays(w string) int {
	switch {
	case strings.Contains(w, "after") || w == "后天":
		return 2
	case w == "大后天":
		return 3
	case strings.HasPrefix(w, "tom") || w == "tmrw" || strings.HasPrefix(w, "明"):
		return 1
	}
	return 0
}

// findWeekdays dates "friday", "next friday", "周六" and "下周六": a day of
// this week still to come (or today), of next week with "next"/"下", else
// of the week after this one when this week's has passed.
func findWeekdays(text string, today time.Time, taken func(a, b int) bool) []found {
	var out []found
	// Weeks start on Monday.
	monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
	day := func(wd time.Weekday, next bool) time.Time {
		t := monday.AddDate(0, 0, (int(wd)+6)%7)
		if next || t.Before(today) {
			t = t.AddDate(0, 0, 7)
		}
		return t
	}
	for _, m := range enWdayRe.FindAllStringSubmatchIndex(text, -1) {
		if taken(m[0], m[1]) {
			continue
		}
		next := m[2] >= 0 && strings.EqualFold(text[m[2]:m[3]], "next")
		d, end := day(weekdays[strings.ToLower(text[m[4]:m[5]])], next), m[1]
		if w := weekAfterRe.FindStringIndex(text[m[1]:]); w != nil {
			d, end = d.AddDate(0, 0, 7), m[1]+w[1] // "monday week": a week after Monday
		}
		out = append(out, found{d.Format(time.DateOnly), m[0], end})
	}
	for _, m := range when(strings.ContainsAny(text, "周期拜"), zhWdayRe).FindAllStringSubmatchIndex(text, -1) {
		if taken(m[0], m[1]) {
			continue
		}
		next := m[2] >= 0 && strings.HasPrefix(text[m[2]:m[3]], "下")
		d := day(weekdays[text[m[4]:m[5]]], next)
		if m[2] >= 0 && text[m[2]:m[3]] == "下下" && !strings.HasSuffix(text[:m[2]], "一") && !strings.HasSuffix(text[:m[2]], "查") && !strings.HasSuffix(text[:m[2]], "看") {
			d = d.AddDate(0, 0, 7) // 下下周一: the week after next
		}
		out = append(out, found{d.Format(time.DateOnly), m[0], m[1]})
	}
	return out
}

// slashDate reads a/b (and a year, when hasYear) as a date: the day first
// where a cannot be a month (17/03), the month first where b cannot (3/20);
// either way round, the one that comes first from today (4/1 on 10 March
// is 1 April, as 4月1日). 24/7 is no date.
func slashDate(a, b string, hasYear bool, year string, today time.Time) (time.Time, bool) {
	x, y := atoi(a), atoi(b)
	if x == 24 && y == 7 {
		return time.Time{}, false
	}
	yr := 0
	if hasYear {
		if yr = atoi(year); yr < 100 {
			yr += 2000
		}
	}
	dm, okDM := mkDate(yr, y, x, today)
	md, okMD := mkDate(yr, x, y, today)
	switch {
	case okDM && okMD:
		if md.Before(dm) {
			return md, true
		}
		return dm, true
	case okDM:
		return dm, true
	}
	return md, okMD
}

// mkDate makes a date; without a year, the next one on or after today.
func mkDate(y, m, d int, today time.Time) (time.Time, bool) {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return time.Time{}, false
	}
	yy := y
	if yy == 0 {
		yy = today.Year()
	}
	t := time.Date(yy, time.Month(m), d, 0, 0, 0, 0, today.Location())
	if t.Day() != d {
		return time.Time{}, false
	}
	if y == 0 && t.Before(today) {
		t = t.AddDate(1, 0, 0)
	}
	return t, true
}

// findTimes returns the times of day text names, as HH:MM.
func findTimes(text string) []found {
	var out []found
	taken := func(a, b int) bool {
		for _, f := range out {
			if a < f.to && b > f.from {
				return true
			}
		}
		return false
	}
	add := func(h, m, a, b int) {
		if h >= 0 && h < 24 && m >= 0 && m < 60 && !taken(a, b) {
			out = append(out, found{twoDigits(h) + ":" + twoDigits(m), a, b})
		}
	}
	digits := strings.ContainsAny(text, "0123456789")
	for _, m := range when(digits, ampmRe).FindAllStringSubmatchIndex(text, -1) {
		h, mi := atoi(text[m[2]:m[3]]), 0
		if m[4] >= 0 {
			mi = atoi(text[m[4]:m[5]])
		}
		pm := strings.HasPrefix(strings.ToLower(text[m[6]:m[7]]), "p")
		if pm && h < 12 {
			h += 12
		} else if !pm && h == 12 {
			h = 0
		}
		add(h, mi, m[0], m[1])
	}
	for _, m := range when(digits && strings.Contains(text, ":"), clockRe).FindAllStringSubmatchIndex(text, -1) {
		add(atoi(text[m[2]:m[3]]), atoi(text[m[4]:m[5]]), m[0], m[1])
	}
	for _, m := range when(strings.ContainsAny(text, "点點时"), zhClockRe).FindAllStringSubmatchIndex(text, -1) {
		h, mi := numeral(text[m[4]:m[5]]), 0
		if m[6] >= 0 {
			if text[m[6]:m[7]] == "半" {
				mi = 30
			} else if m[8] >= 0 {
				mi = numeral(text[m[8]:m[9]])
			}
		}
		if m[2] >= 0 && h < 12 {
			switch text[m[2]:m[3]] {
			case "下午", "晚上", "傍晚", "今晚", "明晚":
				h += 12
			case "中午":
				if h < 3 {
					h += 12
				}
			}
		}
		add(h, mi, m[0], m[1])
	}
	for _, m := range noonRe.FindAllStringIndex(text, -1) {
		add(12, 0, m[0], m[1])
	}
	clockWords(text, add)
	for _, m := range when(digits, atHourRe).FindAllStringSubmatchIndex(text, -1) {
		// "on Thursday at 10", "at 3 tmrw": an hour of the working day,
		// the afternoon's from 1 to 7.
		h := atoi(text[m[2]:m[3]])
		if h >= 1 && h <= 7 {
			h += 12
		}
		add(h, 0, m[0], m[3])
	}
	return out
}

// atHourRe is a bare hour after "at", followed by nothing that makes it a
// count or an address ("at 10, …", "at 3 tomorrow"; not "at 10 Downing
// Street", "at 5 stars").
var atHourRe = regexp.MustCompile(`(?i)\bat\s+(1[0-2]|[1-9])(?:\s*$|\s*[,.;!?]|\s+(?:on|tomorrow|tmrw|today|tonight|and|for|with|this|next|sharp|please|pls|(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*)\b)`)

// clockWords reads the times told by the clock's words (pastRe) and adds
// each as findTimes does.
func clockWords(text string, add func(h, m, a, b int)) {
	for _, m := range pastRe.FindAllStringSubmatchIndex(text, -1) {
		// "half past ten in the morning", "quarter to 5", "3 o'clock"
		lw := strings.ToLower(text[m[0]:m[1]])
		if m[2] < 0 && !strings.Contains(lw, "clock") && (m[8] < 0 || !atBefore(text[:m[0]])) {
			continue // a plain number, or "for 4 in the evening"
		}
		h := hourWord(text[m[6]:m[7]])
		mi := 0
		if m[2] >= 0 {
			switch w := strings.ToLower(text[m[2]:m[3]]); w {
			case "half":
				mi = 30
			case "quarter":
				mi = 15
			default:
				mi = hourWord(w)
			}
			if strings.EqualFold(text[m[4]:m[5]], "to") {
				h, mi = h-1, 60-mi
				if h == 0 {
					h = 12
				}
			}
		}
		if h < 1 || h > 12 || mi < 0 || mi >= 60 {
			continue
		}
		day := ""
		if m[8] >= 0 {
			day = lw[m[8]-m[0]:]
		}
		add(dayHour(h, day), mi, m[0], m[1])
	}
	for _, m := range halfRe.FindAllStringSubmatchIndex(text, -1) {
		// "at half two in the afternoon": half past, as the British say it.
		before := strings.TrimSuffix(strings.TrimRight(text[:m[0]], " "), "like")
		if !atBefore(before) {
			continue
		}
		h := hourWord(text[m[2]:m[3]])
		if h < 1 || h > 12 {
			continue
		}
		day := ""
		if m[4] >= 0 {
			day = strings.ToLower(text[m[4]:m[5]])
		}
		add(dayHour(h, day), 30, m[0], m[1])
	}
}

// dayHour is the hour of the day of h, told on a 12-hour clock, and the
// part of the day said after it (lower-case, "" for none).
func dayHour(h int, day string) int {
	switch {
	case day != "" && (strings.HasPrefix(day, "p") || !strings.Contains(day, "morning") && !strings.HasPrefix(day, "a")):
		if h < 12 {
			h += 12 // pm, in the afternoon, evening, at night
		}
	case day != "":
		if h == 12 {
			h = 0
		}
	case h < 7:
		h += 12 // "half past three": an afternoon, as people meet
	}
	return h
}

// halfRe reads "half two", "half seven in the evening": half past the hour.
var halfRe = regexp.MustCompile(`(?i)\bhalf\s+(1[0-2]|[1-9]|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b` +
	`(?:\s*(am|pm|a\.m\.|p\.m\.|in the morning|in the afternoon|in the evening|at night|tonight))?`)

// pastRe reads a time told by the clock's words: "half past ten", "quarter
// to 5", "ten past nine in the morning", "3 o'clock".
var pastRe = regexp.MustCompile(`(?i)\b(?:(half|quarter|\d{1,2}|five|ten|twenty|twenty-five)\s+(past|to|after)\s+)?` +
	`(1[0-2]|0?[1-9]|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)` +
	`(?:\s+o'?\s?clock|\s+o’clock)?(?:\s*(am|pm|a\.m\.|p\.m\.|in the morning|in the afternoon|in the evening|at night|tonight))?\b`)

// atBefore says whether text ends in "at", "by", "around", "from" or
// "until" (a time told "at 10 in the morning").
func atBefore(text string) bool {
	f := strings.Fields(strings.ToLower(text))
	if len(f) == 0 {
		return false
	}
	switch f[len(f)-1] {
	case "at", "by", "around", "from", "until", "till", "before", "after":
		return true
	}
	return false
}

// hourWord reads "10" or "ten" (-1 for neither).
func hourWord(w string) int {
	if n, err := strconv.Atoi(w); err == nil {
		return n
	}
	if n, ok := numberWords[strings.ToLower(w)]; ok {
		return int(n)
	}
	if strings.EqualFold(w, "twenty-five") {
		return 25
	}
	return -1
}

// noMatch matches nothing: when a cheap look at the text rules a pattern
// out, it is not run.
var noMatch = regexp.MustCompile(`a\A\z`)

func when(maybe bool, re *regexp.Regexp) *regexp.Regexp {
	if maybe {
		return re
	}
	return noMatch
}

func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// numeral reads "12" or "十二".
func numeral(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	if v, n := hanNumber(s); n == len(s) {
		return v
	}
	return -1
}

// currencyNames are names, symbols and codes of currencies, lower-case,
// with their ISO 4217 codes. Longer names are matched first ("hong kong
// dollars" before "dollars").
var currencyNames = map[string]string{
	"$": "USD", "us$": "USD", "dollar": "USD", "dollars": "USD", "buck": "USD", "bucks": "USD", "us dollars": "USD", "美元": "USD", "美金": "USD", "刀": "USD",
	"€": "EUR", "euro": "EUR", "euros": "EUR", "欧元": "EUR",
	"£": "GBP", "pound": "GBP", "pounds": "GBP", "pound sterling": "GBP", "pounds sterling": "GBP", "british pounds": "GBP", "quid": "GBP", "英镑": "GBP",
	"¥": "JPY", "yen": "JPY", "japanese yen": "JPY", "日元": "JPY", "日币": "JPY",
	"yuan": "CNY", "rmb": "CNY", "renminbi": "CNY", "人民币": "CNY", "元": "CNY", "块": "CNY", "块钱": "CNY",
	"hong kong dollars": "HKD", "hong kong dollar": "HKD", "港币": "HKD", "港元": "HKD", "港纸": "HKD", "蚊": "HKD", "欧罗": "EUR",
	"won": "KRW", "korean won": "KRW", "₩": "KRW", "韩元": "KRW", "韩币": "KRW",
	"rupee": "INR", "rupees": "INR", "indian rupees": "INR", "₹": "INR", "卢比": "INR",
	"canadian dollar": "CAD", "canadian dollars": "CAD", "加元": "CAD", "加币": "CAD",
	"australian dollar": "AUD", "australian dollars": "AUD", "aussie dollars": "AUD", "澳元": "AUD", "澳币": "AUD",
	"singapore dollars": "SGD", "singapore dollar": "SGD", "新加坡元": "SGD", "新币": "SGD",
	"new zealand dollars": "NZD", "纽币": "NZD",
	"swiss francs": "CHF", "swiss franc": "CHF", "franc": "CHF", "francs": "CHF", "瑞郎": "CHF", "瑞士法郎": "CHF",
	"peso": "MXN", "pesos": "MXN", "mexican pesos": "MXN", "mexican peso": "MXN", "墨西哥比索": "MXN",
	"baht": "THB", "thai baht": "THB", "泰铢": "THB", "ruble": "RUB", "rubles": "RUB", "roubles": "RUB", "卢布": "RUB",
	"real": "BRL", "reais": "BRL", "brazilian real": "BRL", "雷亚尔": "BRL", "lira": "TRY", "turkish lira": "TRY", "里拉": "TRY",
	"krone": "NOK", "norwegian krone": "NOK", "kroner": "NOK", "swedish krona": "SEK", "krona": "SEK", "kronor": "SEK", "danish krone": "DKK",
	"dirham": "AED", "dirhams": "AED", "迪拉姆": "AED", "ringgit": "MYR", "林吉特": "MYR", "rand": "ZAR", "兰特": "ZAR",
	"马币": "MYR", "令吉": "MYR", "马来西亚令吉": "MYR", "马来西亚林吉特": "MYR", "菲币": "PHP", "泰币": "THB", "美刀": "USD", "日圆": "JPY", "新元": "SGD", "坡币": "SGD", "新加坡币": "SGD",
	"加拿大元": "CAD", "澳大利亚元": "AUD", "印度卢比": "INR", "韩圆": "KRW", "澳门币": "MOP", "欧币": "EUR", "越南币": "VND", "印尼币": "IDR",
	"jamaican dollars": "JMD", "jamaican dollar": "JMD", "cedi": "GHS", "cedis": "GHS", "dong": "VND", "越南盾": "VND", "台币": "TWD", "新台币": "TWD", "澳门元": "MOP", "bitcoin": "BTC", "比特币": "BTC",
	// a currency named by its country, where the word alone is another's
	"moroccan dirham": "MAD", "moroccan dirhams": "MAD", "摩洛哥迪拉姆": "MAD", "uae dirham": "AED", "emirati dirham": "AED", "阿联酋迪拉姆": "AED",
	"saudi riyal": "SAR", "saudi riyals": "SAR", "riyal": "SAR", "riyals": "SAR", "沙特里亚尔": "SAR", "里亚尔": "SAR", "qatari riyal": "QAR", "卡塔尔里亚尔": "QAR",
	"kuwaiti dinar": "KWD", "jordanian dinar": "JOD", "egyptian pound": "EGP", "egyptian pounds": "EGP", "埃及镑": "EGP",
	"shekel": "ILS", "shekels": "ILS", "israeli shekel": "ILS", "新谢克尔": "ILS", "zloty": "PLN", "zlotys": "PLN", "polish zloty": "PLN", "兹罗提": "PLN",
	"czech koruna": "CZK", "koruna": "CZK", "forint": "HUF", "hungarian forint": "HUF", "福林": "HUF",
	"rupiah": "IDR", "indonesian rupiah": "IDR", "印尼盾": "IDR", "philippine peso": "PHP", "philippine pesos": "PHP", "菲律宾比索": "PHP",
	"argentine peso": "ARS", "argentine pesos": "ARS", "阿根廷比索": "ARS", "chilean peso": "CLP", "chilean pesos": "CLP", "colombian peso": "COP", "colombian pesos": "COP",
	"peruvian sol": "PEN", "soles": "PEN", "naira": "NGN", "nigerian naira": "NGN", "kenyan shilling": "KES", "kenyan shillings": "KES", "kenya shilling": "KES", "kenya shillings": "KES", "shilling": "KES", "shillings": "KES",
	"tanzanian shilling": "TZS", "tanzanian shillings": "TZS", "tanzania shillings": "TZS", "ugandan shilling": "UGX", "ugandan shillings": "UGX",
	"uganda shillings": "UGX", "loonie": "CAD", "loonies": "CAD", "toonie": "CAD", "toonies": "CAD", "us bucks": "USD", "肯尼亚先令": "KES",
	"pakistani rupee": "PKR", "pakistani rupees": "PKR", "sri lankan rupee": "LKR", "sri lankan rupees": "LKR", "taka": "BDT",
	"new taiwan dollars": "TWD", "taiwan dollars": "TWD", "taiwan dollar": "TWD", "macau pataca": "MOP", "pataca": "MOP",
	"swedish kronor": "SEK", "danish kroner": "DKK", "norwegian kroner": "NOK", "icelandic krona": "ISK", "ukrainian hryvnia": "UAH", "hryvnia": "UAH",
	"new zealand dollar": "NZD", "kiwi dollars": "NZD", "新西兰元": "NZD", "south african rand": "ZAR", "malaysian ringgit": "MYR", "russian rubles": "RUB",
	"tt dollars": "TTD", "tt dollar": "TTD", "trinidad dollars": "TTD", "bajan dollars": "BBD", "barbados dollars": "BBD", "ec dollars": "XCD",
	"ghana cedis": "GHS", "rwandan francs": "RWF", "birr": "ETB", "kwacha": "ZMW", "in us": "USD",
}

// isoCurrencies are the ISO 4217 codes read when typed (in either case).
var isoCurrencies = map[string]bool{}

func init() {
	for _, c := range strings.Fields("USD EUR GBP JPY CNY HKD KRW INR CAD AUD SGD NZD CHF MXN THB RUB BRL TRY NOK SEK DKK AED MYR ZAR VND TWD MOP PLN CZK HUF IDR PHP SAR ILS EGP NGN KES ARS CLP COP PEN BTC MAD QAR KWD JOD PKR LKR BDT ISK UAH RON BGN KZT " +
		"JMD TTD BBD XCD GHS UGX TZS RWF ETB ZMW MZN TND DZD XOF XAF OMR BHD LBP IQD NPR MMK KHR LAK MNT UZS GEL AMD AZN RSD GTQ CRC DOP BOB PYG UYU FJD MUR NAD BWP") {
		isoCurrencies[c] = true
	}
	for w := range currencyNames {
		if hanRuns(w) != nil && isAllHan(w) && utf8.RuneCountInString(w) > 1 {
			baseDict.add(w, hanWord{})
		}
	}
}

// findCurrencies returns the currencies toks name, in order.
func findCurrencies(toks []token) []value {
	var out []value
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tWord {
			lw := strings.ToLower(t.text)
			if code, ok := prefixCurrencies[lw]; ok && i+1 < len(toks) && toks[i+1].kind == tNum && (toks[i+1].start == t.end || spacedPrefix[lw]) {
				out = append(out, value{code, i}) // R2340, rm1.5k, Rs 2.5 lakh
				continue
			}
			if up := strings.ToUpper(t.text); isoCurrencies[up] && (t.text == up || len(t.text) == 3 && !t.stop || i+1 < len(toks) && toks[i+1].kind == tNum && toks[i+1].start == t.end) {
				out = append(out, value{up, i})
				continue
			}
			if n, code := currencyPhrase(toks, i); n > 0 {
				out = append(out, value{code, i})
				i += n - 1
			}
			continue
		}
		if t.kind == tHan || t.kind == tHanRaw {
			words := hanCurrencyWords(t.text)
			if r, size := utf8.DecodeRuneInString(t.text); len(words) == 0 && i > 0 && toks[i-1].kind == tNum && toks[i-1].end == t.start && size < len(t.text) {
				// 100刀换人民币: a one-character name right after its amount.
				if code, ok := hanCurrencies[string(r)]; ok {
					words = append([]string{code}, hanCurrencyWords(t.text[size:])...)
				}
			}
			for _, w := range words {
				out = append(out, value{w, i})
			}
		}
	}
	return out
}

// spacedPrefix are the currencies' letters that are no word, so that they
// may stand apart from their amount ("Rs 500", "KSh 2,000"): not R, US, HK.
var spacedPrefix = map[string]bool{"rs": true, "rm": true, "rp": true, "ksh": true, "tk": true, "rmb": true}

// currencyPhrase reads the longest currency name of up to three words at
// toks[i].
func currencyPhrase(toks []token, i int) (int, string) {
	var words []string
	n, code := 0, ""
	for j := i; j < len(toks) && j-i < 3 && toks[j].kind == tWord; j++ {
		words = append(words, strings.ToLower(toks[j].text))
		if c, ok := currencyNames[strings.Join(words, " ")]; ok {
			n, code = j-i+1, c
		}
	}
	return n, code
}

// hanCurrencyWords finds Chinese currency names in s, the longest at each
// position; a one-character name (元, 块) only as the whole of s.
func hanCurrencyWords(s string) []string {
	if code, ok := hanCurrencies[s]; ok {
		return []string{code}
	}
	var out []string
	for i := 0; i < len(s); {
		best, code := 0, ""
		n := 0
		for j := i; j < len(s) && n < maxHanCurrency; {
			_, size := utf8.DecodeRuneInString(s[j:])
			j += size
			n++
			if c, ok := hanCurrencies[s[i:j]]; ok && n > 1 {
				best, code = j-i, c
			}
		}
		if best == 0 {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		out = append(out, code)
		i += best
	}
	return out
}

// hanCurrencies are the Chinese names of currencyNames.
var hanCurrencies = map[string]string{}

const maxHanCurrency = 5 // runes

func init() {
	for w, c := range currencyNames {
		if isAllHan(w) {
			hanCurrencies[w] = c
		}
	}
}
