package orchestrator

import (
	_ "embed"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reading text for the offline planner: a goal becomes tokens (English words,
// numbers, quoted text, Chinese words found by forward maximum matching
// against a dictionary, and runs of Chinese characters the dictionary does
// not know, which are place candidates).

type tokKind uint8

const (
	tWord   tokKind = iota // letters and digits; norm is the stem
	tNum                   // a number; val
	tHan                   // a Chinese dictionary word; norm is the word
	tHanRaw                // Chinese characters not in the dictionary
	tQuote                 // quoted text; text is what is inside the quotes
	tPunct                 // a hard separator between clauses
)

type token struct {
	kind       tokKind
	text       string // as typed
	norm       string // stem (tWord), word (tHan, tHanRaw)
	val        float64
	start, end int    // byte offsets in the goal
	stop       bool   // carries no meaning for choosing a tool
	conj       bool   // splits clauses
	format     string // "uri" or "email" for a link or an address (tQuote)
	key        string // the key of a "key: value" (tQuote): "subject", "主题"
	place      bool   // read as (a word of) a place: never a typo of a catalog word ("kiyomizu temple")
}

var (
	urlRe   = regexp.MustCompile(`^https?://[^\s"'“”<>，。]+`)
	emailRe = regexp.MustCompile(`^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
)

// urlOrEmail returns the length of a link or an e-mail address at the
// start of s, or 0.
func urlOrEmail(s string) int {
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return 0
	}
	if m := urlRe.FindString(s); m != "" {
		return len(strings.TrimRight(m, ".,;:!?)"))
	}
	// An address is at most 254 bytes (RFC 5321): looking further would
	// read a long run of letters and dashes again at each of its words.
	if m := emailRe.FindString(s[:min(len(s), maxEmail+1)]); m != "" && len(m) <= maxEmail {
		return len(m)
	}
	return 0
}

const maxEmail = 254

func valueFormat(s string) string {
	if strings.Contains(s, "://") {
		return "uri"
	}
	return "email"
}

// stem is a light English stemmer: it folds the usual inflections so that
// "restaurants", "compression", "driving" meet "restaurant", "compress",
// "drive". Both the catalog and the goal go through it.
func stem(w string) string {
	if len(w) <= 3 || !isASCII(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ions") && len(w) > 6:
		w = w[:len(w)-4]
	case strings.HasSuffix(w, "ion") && len(w) > 5:
		w = w[:len(w)-3]
	case strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	if len(w) > 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

func undouble(w string) string {
	n := len(w)
	if n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

// hanDict is the dictionary of Chinese words the tokenizer knows.
type hanDict struct {
	words  map[string]hanWord
	maxLen int // in runes
	// sounds are the words by their sound (soundKey), for typos; a
	// dictionary made from another also reads the base one's (baseDict).
	sounds map[string]string
	// spelled are the words by their pinyin as typed without tones
	// ("tianqi" → 天气), for a word typed in Latin letters in a Chinese goal.
	spelled map[string]string
}

type hanWord struct {
	function bool // a function word (never a place, never a tool)
	conj     bool
	place    bool // a place name of the gazetteer
}

func (d *hanDict) add(w string, hw hanWord) {
	if w == "" {
		return
	}
	if old, ok := d.words[w]; ok {
		hw.function = hw.function && old.function
		hw.conj = hw.conj || old.conj
		hw.place = hw.place || old.place
	}
	d.words[w] = hw
	if !hw.function && !hw.place {
		d.addSound(w)
	}
	if n := utf8.RuneCountInString(w); n > d.maxLen {
		d.maxLen = n
	}
}

// markers are single-character function words that are never part of a
// place name; other single-character function words ("上", "家") may start
// one ("上海") and are read as part of an unknown run when followed by one.
var markers = map[string]bool{"在": true, "从": true, "到": true, "去": true, "往": true, "至": true, "把": true, "将": true, "给": true,
	"对": true, "和": true, "跟": true, "与": true, "的": true, "了": true, "吗": true, "呢": true, "吧": true, "啊": true, "呀": true, "么": true, "是": true, "要": true, "请": true, "我": true, "你": true, "飞": true, "住": true, "坐": true, "乘": true, "搭": true, "骑": true, "订": true}

var quotePairs = map[rune]rune{'"': '"', '“': '”', '「': '」', '『': '』', '‘': '’', '《': '》'}

// valueEnd is where the value of key k that starts rest ends: at a
// separator, but a message's text runs past its commas to the next key, a
// new errand (", then …") or the end ("body: Hi Amara, the invoice is
// attached."), and the next key ends any value ("主题是周五聚餐 内容写…").
func valueEnd(rest, k string) int {
	for j, r := range rest {
		if isHardSep(r) && !(textKeys[k] && r != '\n' && !errandAfter(rest[j+utf8.RuneLen(r):])) || j >= 500 {
			return j
		}
		if unicode.IsSpace(r) && keyValueRe.MatchString(strings.TrimLeftFunc(rest[j:min(len(rest), j+64)], unicode.IsSpace)) {
			return j
		}
	}
	return len(rest)
}

// quoted reads the text between the quote r at goal[i:] (size bytes) and
// its closer. unclosed holds the closers not found after some point, so
// that an opener without one does not search the rest of the goal again.
func quoted(goal string, i int, r rune, size int, unclosed map[rune]bool) (token, bool) {
	closer := closerOf(r)
	if unclosed[closer] {
		return token{}, false
	}
	j := strings.IndexRune(goal[i+size:], closer)
	for r == '\'' && j >= 0 {
		// 'where's the bus stop': an apostrophe between letters closes
		// nothing.
		at := i + size + j
		if at+1 >= len(goal) || !isWordRune(firstRuneOf(goal[at+1:])) || at == 0 || !isWordRune(lastRune(goal[:at])) {
			break
		}
		k := strings.IndexRune(goal[at+1:], closer)
		if k < 0 {
			j = -1
			break
		}
		j += 1 + k
	}
	if j < 0 {
		unclosed[closer] = true
		return token{}, false
	}
	if strings.TrimSpace(goal[i+size:i+size+j]) == "" {
		return token{}, false
	}
	inner := goal[i+size : i+size+j]
	return token{kind: tQuote, text: inner, norm: strings.ToLower(inner), start: i, end: i + size + j + utf8.RuneLen(closer)}, true
}

// closerOf is the rune that closes a quote opened by r (0 for none):
// quotePairs', or the apostrophe itself.
func closerOf(r rune) rune {
	if r == '\'' {
		return r
	}
	return quotePairs[r]
}

// signWord reads a sign that stands for a word at goal[i:] (its rune r
// is size bytes), or returns a token that ends at 0: an arrow for "to"
// ("heathrow t5 -> canary wharf", "NYC->BOS"), an emoji (☀️ or 🌧️ in
// Rio, ✈️ Nairobi → Johannesburg, 📦 where's my parcel), a plus.
func signWord(goal string, i int, r rune, size int) token {
	switch {
	case r == '-' && strings.HasPrefix(goal[i:], "->") || r == '=' && strings.HasPrefix(goal[i:], "=>"):
		return token{kind: tWord, text: "to", norm: "to", start: i, end: i + 2, stop: true}
	case emojiWords[r] != "":
		w := emojiWords[r]
		return token{kind: tWord, text: w, norm: stem(w), start: i, end: i + size, stop: w == "to"}
	case r == '+' || r == '＋':
		return token{kind: tWord, text: goal[i : i+size], norm: "plus", start: i, end: i + size}
	}
	return token{}
}

// titles stand before a name with a dot that ends no sentence.
var titles = map[string]bool{"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true, "mt": true, "sr": true, "jr": true, "rev": true}

// emojiWords are the emoji (and arrows) that say a word a tool's words
// include: the weather's, a flight, a parcel, "to".
var emojiWords = map[rune]string{'☀': "sunny", '🌧': "rain", '⛅': "weather", '🌦': "weather", '🌤': "weather", '☔': "rain", '🌡': "temperature",
	'❄': "snow", '⛈': "storm", '🌩': "storm", '🌨': "snow", '✈': "flight", '🛫': "flight", '🛬': "flight", '📦': "parcel",
	'→': "to", '➡': "to", '⟶': "to", '➔': "to",
	// dishes: a dish asks for a place to eat it ("🍕🍕🍕 near Brooklyn Bridge Park")
	'🍕': "pizza", '🍔': "burger", '🍣': "sushi", '🍜': "ramen", '🌮': "tacos", '🌯': "burrito", '🍝': "pasta", '🥟': "dumplings",
	'🍗': "fried chicken", '🥩': "steak", '🍛': "curry", '🍤': "seafood", '🥙': "kebab", '🍦': "ice cream", '🧋': "bubble tea", '☕': "cafe",
	'📈': "stock", '📉': "stock", '💱': "exchange", '🌍': "world", '⏰': "time", '🕐': "time", '📰': "news", '🏨': "hotel", '📧': "email", '✉': "email"}

func isHardSep(r rune) bool {
	switch r {
	case '。', '；', ';', '！', '？', '!', '?', '\n', '，', ',', '、', '：', ':':
		return true
	}
	return false
}

// tokenize reads goal into tokens; dict may be nil.
func tokenize(goal string, dict *hanDict) []token {
	var out []token
	// Closers not found after some point are not found after any later
	// one: an opener without one does not search the rest of the goal again.
	unclosed := map[rune]bool{}
	i := 0
	for i < len(goal) {
		r, size := utf8.DecodeRuneInString(goal[i:])
		if t, n := keyValueAt(goal, i); n > 0 {
			out = append(out, t)
			i += n
			continue
		}
		if r == '把' {
			if end := baText(goal, i+size); end > i+size {
				// 把 Thank you for your hospitality, we had a wonderful stay 翻译成中文:
				// what is to be translated, commas and all, is one text.
				text := strings.TrimSpace(goal[i+size : end])
				out = append(out, token{kind: tHan, text: "把", norm: "把", start: i, end: i + size, stop: true},
					token{kind: tQuote, text: text, norm: strings.ToLower(text), start: i + size, end: end})
				i = end
				continue
			}
		}
		switch {
		case quotePairs[r] != 0 || r == '\'' && (i == 0 || !isWordRune(lastRune(goal[:i]))):
			if t, ok := quoted(goal, i, r, size, unclosed); ok {
				out = append(out, t)
				i = t.end
				continue
			}
			i += size
		case urlOrEmail(goal[i:]) > 0:
			// A link or an address is one value: "https://x.org/a-long/path", "bob@example.com".
			n := urlOrEmail(goal[i:])
			out = append(out, token{kind: tQuote, text: goal[i : i+n], norm: strings.ToLower(goal[i : i+n]), start: i, end: i + n, format: valueFormat(goal[i : i+n])})
			i += n
		case r == '.' && len(out) > 0 && out[len(out)-1].end == i && titles[strings.ToLower(out[len(out)-1].text)]:
			i += size // "Dr. Mensah", "Mrs. Okafor": no sentence ends
		case isHardSep(r) || r == '.' && (i+size == len(goal) || goal[i+size] == ' ' || goal[i+size] == '\n'):
			out = append(out, token{kind: tPunct, text: goal[i : i+size], start: i, end: i + size, conj: true})
			i += size
		case currencySymbol(r):
			// "$75", "€50": the symbol names a currency.
			out = append(out, token{kind: tWord, text: goal[i : i+size], norm: goal[i : i+size], start: i, end: i + size, stop: true})
			i += size
		case (r == '-' || r == '=') && strings.HasPrefix(goal[i+1:], ">") || r == '+' || r == '＋' || emojiWords[r] != "":
			t := signWord(goal, i, r, size)
			out = append(out, t)
			i = t.end
		case isHan(r):
			j := i
			for j < len(goal) {
				r2, s2 := utf8.DecodeRuneInString(goal[j:])
				if !isHan(r2) {
					break
				}
				j += s2
			}
			out = append(out, segmentHan(goal, i, j, dict)...)
			i = j
		case isWordRune(r):
			toks := wordTokens(goal, i, size)
			out = append(out, toks...)
			i = toks[len(toks)-1].end
		default:
			i += size
		}
	}
	return spelledWords(goal, spacedNames(goal, joinHanNames(textAnd(joinNumbers(whetherWeather(nearPhrases(dropFillers(out)))))), dict), dict)
}

// spelledWords reads a word typed in pinyin in a Chinese goal as the
// dictionary word it spells (阳朔今天tianqi咋样: 天气).
func spelledWords(goal string, toks []token, dict *hanDict) []token {
	if !strings.ContainsFunc(goal, isHan) {
		return toks
	}
	for i, t := range toks {
		if t.kind != tWord || t.stop || t.text != strings.ToLower(t.text) {
			continue
		}
		if w := dict.spelledWord(t.text); w != "" {
			toks[i].kind, toks[i].norm = tHan, w
		}
	}
	return toks
}

// spacedNames reads a space between two Chinese names as a 、: Chinese
// users list with spaces (腾讯 英伟达 还有特斯拉, 北京 上海 广州的天气).
func spacedNames(goal string, toks []token, dict *hanDict) []token {
	name := func(t token) bool {
		if t.kind != tHan && t.kind != tHanRaw || t.stop {
			return false
		}
		if _, ok := companyTickers[t.text]; ok {
			return true
		}
		return dict != nil && dict.words[t.text].place
	}
	var out []token // nil until a space lists two names
	for i, t := range toks {
		if out != nil {
			out = append(out, t)
		}
		if i+1 < len(toks) && t.end < toks[i+1].start && strings.TrimSpace(goal[t.end:toks[i+1].start]) == "" && name(t) && name(toks[i+1]) {
			if out == nil {
				out = slices.Clone(toks[:i+1])
			}
			out = append(out, token{kind: tPunct, text: "、", start: t.end, end: toks[i+1].start, conj: true})
		}
	}
	if out == nil {
		return toks
	}
	return out
}

// nearPhraseWords are phrases that mean "near" ("in the vicinity of Marina Bay
// Sands", "within walking distance of the Louvre").
var nearPhraseWords = [][]string{{"in", "the", "vicinity", "of"}, {"in", "the", "neighbourhood", "of"}, {"in", "the", "neighborhood", "of"},
	{"within", "walking", "distance", "of"}, {"walking", "distance", "from"}, {"in", "the", "area", "of"}}

// nearPhrases reads each of nearPhraseWords as the one word "near".
func nearPhrases(toks []token) []token {
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		n := 0
		for _, ph := range nearPhraseWords {
			if i+len(ph) <= len(toks) && slices.EqualFunc(toks[i:i+len(ph)], ph, func(t token, w string) bool { return t.kind == tWord && strings.EqualFold(t.text, w) }) {
				n = len(ph)
				break
			}
		}
		if n == 0 {
			out = append(out, toks[i])
			continue
		}
		t := toks[i]
		t.text, t.norm, t.end = "near", "near", toks[i+n-1].end
		out = append(out, t)
		i += n - 1
	}
	return out
}

// hesitations are the sounds of speech dictated or typed as spoken ("um",
// "uh"): they say nothing.
var hesitations = map[string]bool{"um": true, "umm": true, "ummm": true, "uh": true, "uhh": true, "uhm": true, "erm": true, "er": true,
	"hmm": true, "hmmm": true, "mm": true, "mmm": true, "ehm": true}

// dropFillers drops the hesitations and the commas that set them off:
// "from the Colosseum to, uh, the Trevi Fountain" is a route to the
// Trevi Fountain, "um, tell me …" one clause.
func dropFillers(toks []token) []token {
	comma := func(t token) bool { return t.kind == tPunct && (t.text == "," || t.text == "，") }
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tWord || !hesitations[strings.ToLower(t.text)] {
			out = append(out, t)
			continue
		}
		if i+1 < len(toks) && comma(toks[i+1]) {
			if len(out) > 0 && comma(out[len(out)-1]) {
				out = out[:len(out)-1] // ", uh, ": both commas
			}
			i++
		}
	}
	return out
}

// whetherWeather reads "whether" as the weather where a noun stands ("the
// whether in oslo", "hows the whether"), not after "check" or "see" (it
// is a word: "check whether the train is late").
func whetherWeather(toks []token) []token {
	for i := range toks {
		if !strings.EqualFold(toks[i].text, "whether") {
			continue
		}
		if i > 0 {
			switch strings.ToLower(toks[i-1].text) {
			case "the", "todays", "today's", "tomorrows", "tomorrow's", "whats", "what's", "hows", "how's", "is", "of":
				toks[i].norm = "weather"
				continue
			}
		}
		if i+1 < len(toks) {
			switch strings.ToLower(toks[i+1].text) {
			case "in", "for", "like", "today", "tomorrow", "now", "forecast", "report":
				toks[i].norm = "weather" // "whether in oslo"
			}
		}
	}
	return toks
}

// joinHanNames joins a Chinese place's name and the digits or Latin
// letters typed right after it, before more Chinese: 台北101, 望京soho
// (not 北京2晚: a count, nor a stop word).
func joinHanNames(toks []token) []token {
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tHanRaw && i+2 < len(toks) && (hanPlaceNames[t.text] != "" || baseDict.words[t.text].place) {
			y, z := toks[i+1], toks[i+2]
			name := y.start == t.end && z.start == y.end && (z.kind == tHan || z.kind == tHanRaw) &&
				(y.kind == tNum && len(y.text) >= 3 && isDigits(y.text) || y.kind == tWord && !y.stop && isASCII(y.text) && len(y.text) >= 2 &&
					companyTickers[strings.ToLower(y.text)] == "" && !knownTickers[strings.ToUpper(y.text)] && !strings.Contains(y.text, "."))
			if name && !strings.ContainsRune(hanUnitChars, firstRuneOf(z.text)) && numberHints[z.text] == nil && numberHints[firstRune(z.text)] == nil {
				t.text, t.norm, t.end = t.text+y.text, t.text+y.text, y.end
				out = append(out, t)
				i++
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// wordTokens reads the word at goal[i:] (its first rune is size bytes) as
// one token or two: an amount after a currency's letters ("rm1.5k",
// "R2340"), thousands with k ("1.5k"), a number and its unit typed
// together ("23kg", "5km").
func wordTokens(goal string, i, size int) []token {
	t := readWord(goal, i, size)
	if m := moneyWordRe.FindStringSubmatch(t.text); m != nil && moneyPrefix(m[1]) {
		n := len(m[1])
		v, _ := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
		if m[3] != "" {
			v *= 1000
		}
		cur := readWord(goal[:i+n], i, size)
		cur.stop = true
		return []token{cur, {kind: tNum, text: goal[i+n : t.end], val: v, start: i + n, end: t.end}}
	}
	if m := numberUnitRe.FindStringSubmatch(t.text); m != nil && (m[2] == "k" || m[2] == "K") {
		v, _ := strconv.ParseFloat(m[1], 64)
		return []token{{kind: tNum, text: t.text, val: v * 1000, start: t.start, end: t.end}}
	}
	if m := numberUnitRe.FindStringSubmatch(t.text); m != nil && !clockWordRe.MatchString(strings.ToLower(t.text)) && !ordinalSuffix[strings.ToLower(m[2])] {
		n := len(m[1])
		return []token{readWord(goal[:i+n], i, size), readWord(goal[:t.end], i+n, 1)}
	}
	if n := gluedIn(t.text); n > 0 {
		// "wether inreykjavick", "aqi inlahore": "in" typed onto the place.
		return []token{readWord(goal[:i+n], i, size), readWord(goal[:t.end], i+n, 1)}
	}
	return []token{t}
}

// gluedIn returns 2 when w is "in" typed onto a place name of the
// gazetteer, as it is or one letter off ("inlahore", "inreykjavick"),
// else 0.
func gluedIn(w string) int {
	lw := strings.ToLower(w)
	rest := lw[min(2, len(lw)):]
	if !strings.HasPrefix(lw, "in") || len(rest) < 5 || englishPlaceNames[lw] || !isASCII(lw) {
		return 0
	}
	if englishPlaceNames[rest] && !ambiguousPlaceNames[rest] {
		return 2
	}
	if len(rest) < 7 {
		return 0
	}
	for n := len(rest) - 1; n <= len(rest)+1; n++ {
		for _, name := range placeNamesByLen[n] {
			if editDistance(rest, name, 1) <= 1 {
				return 2
			}
		}
	}
	return 0
}

// baText returns where the text of 把 … 翻译成 ends (from, the byte after
// 把), or 0: the verb must follow in the same sentence, the text must not
// be quoted already (把“…”翻译成 is read as a quote) nor point at a thing
// (把这个PDF合同翻译成中文, 把这句话翻译成英文：…).
func baText(goal string, from int) int {
	rest := goal[from:min(len(goal), from+baWindow)]
	if end := strings.IndexAny(rest, "。！？!?\n"); end >= 0 {
		rest = rest[:end]
	}
	at := -1
	for _, v := range []string{"翻译成", "翻译为", "翻成", "译成", "翻译到"} {
		if k := strings.Index(rest, v); k > 0 && (at < 0 || k < at) {
			at = k
		}
	}
	if at <= 0 {
		return 0
	}
	inner := strings.TrimSpace(rest[:at])
	if r, _ := utf8.DecodeRuneInString(inner); inner == "" || strings.ContainsRune("\"'“‘「『这那", r) || baPointers[inner] {
		return 0
	}
	return from + at
}

// baWindow bounds how far after 把 its verb is looked for (a longer text
// is quoted): a goal of many 把 is not read again and again to its end.
const baWindow = 512

// baPointers point at a text said elsewhere in the goal.
var baPointers = map[string]bool{"下面这句": true, "下面这句话": true, "以下": true, "以下内容": true, "下面的话": true, "它": true}

// textAnd reads "n", "&", "+" and "plus" between words as "and"
// ("karachi n islamabad", "weather auckland + a route from …"); between
// two numbers "+" and "plus" stay a sum (3 + 5).
func textAnd(toks []token) []token {
	for i := range toks {
		t := &toks[i]
		if t.kind != tWord {
			continue
		}
		lw := strings.ToLower(t.text)
		if lw != "n" && lw != "&" && lw != "plus" && lw != "+" && lw != "＋" {
			continue
		}
		if i == 0 || i+1 == len(toks) || (lw == "plus" || lw == "+" || lw == "＋") && (toks[i-1].kind == tNum || toks[i+1].kind == tNum) {
			continue
		}
		t.conj, t.stop = true, true
	}
	return toks
}

// numberUnitRe is a number with letters after it ("23kg", "5km"); ordinal
// suffixes ("28th") and times ("3pm") stay one word. moneyWordRe is an
// amount after a currency's letters (moneyPrefix), in thousands with k.
var (
	dotThousandsRe = regexp.MustCompile(`^[1-9]\d{0,2}(?:\.\d{3})+$`)
	moneyWordRe    = regexp.MustCompile(`^([A-Za-z]{1,3})(\d+(?:[.,]\d+)*)([kK])?$`)
	numberUnitRe   = regexp.MustCompile(`^(\d+(?:\.\d+)?)([A-Za-z]+)$`)
	ordinalSuffix  = map[string]bool{"st": true, "nd": true, "rd": true, "th": true}
)

// readWord reads the word or number at goal[i:] (its first rune is size
// bytes): letters and digits, with inner apostrophes, dots and ampersands
// ("what's", "README.md", "3.5", "v&a"), a time of day ("10:00") and thousands ("1,250").
func readWord(goal string, i, size int) token {
	j := i + size
	for j < len(goal) {
		r2, s2 := utf8.DecodeRuneInString(goal[j:])
		if isWordRune(r2) {
			j += s2
			continue
		}
		if (r2 == '\'' || r2 == '’' || r2 == '.' || r2 == '&') && j+s2 < len(goal) {
			if r3, _ := utf8.DecodeRuneInString(goal[j+s2:]); isWordRune(r3) {
				j += s2
				continue
			}
		}
		if (r2 == ':' || r2 == ',') && allDigits(strings.TrimLeft(strings.ReplaceAll(goal[i:j], ",", ""), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")) && digitGroup(goal[j+1:], r2) {
			j++
			continue
		}
		break
	}
	text := goal[i:j]
	digits := strings.ReplaceAll(text, ",", "")
	if dotThousandsRe.MatchString(text) {
		digits = strings.ReplaceAll(text, ".", "") // 10.000 yen: thousands as much of Europe writes them
	}
	if v, err := strconv.ParseFloat(digits, 64); err == nil {
		return token{kind: tNum, text: text, val: v, start: i, end: j}
	}
	lower := strings.ToLower(strings.ReplaceAll(text, "’", "'"))
	t := token{kind: tWord, text: text, norm: stem(lower), start: i, end: j}
	t.stop = plannerStop[lower] || plannerStop[t.norm] || strings.Contains(text, ":") || clockWordRe.MatchString(lower)
	t.conj = englishConjunctions[lower]
	return t
}

// keyValueRe reads "subject: lunch", "body = …", 主题是周报, 内容：….
var keyValueRe = regexp.MustCompile(`^(?i:(subject|title|body|message|content|text|note)\s*[:=：]\s*)|^(主题|标题|内容|正文|题目|备注)(?:就说|就写|是|为|写|说|：|:|\s+)\s*`)

// bareSubjectRe reads a subject said without a colon ("with subject
// vacation request", "subject line hello"); bareBodyRe ends its value
// where the body's key begins ("… and body see you").
var (
	bareSubjectRe = regexp.MustCompile(`^(?i:(subject)(?:\s+line)?\s+(?:is\s+|of\s+|as\s+)?)\S`)
	bareBodyRe    = regexp.MustCompile(`(?i)\s+(?:(?:and|with)\s+)?(?:the\s+)?(?:body|message|text|content)\b|\s+and\s+(?:tell|say|let)\b|\s+saying\b`)
	// A body said without a colon is one only after "and" or "with".
	bareBodyLeadRe = regexp.MustCompile(`(?i)(?:\b(?:and|with)|,)\s+(?:the\s+)?$`)
	bareBodyKeyRe  = regexp.MustCompile(`^(?i:(body|message)\s+(?:is\s+|saying\s+)?)\S`)
	bareTellRe     = regexp.MustCompile(`^(?i:(tell|let|telling|letting|inform|informing)\s+(?:them|him|her|everyone)(?:\s+know)?\s+(?:that\s+)?)\S`)
)

// errandAfter says whether s, after a separator, begins a new errand.
func errandAfter(s string) bool {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	for _, w := range []string{"then ", "and then ", "also ", "然后", "再", "顺便", "另外", "还有"} {
		if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) {
			return true
		}
	}
	return false
}

// textKeys are the keys of a message's text, whose value runs past commas.
var textKeys = map[string]bool{"body": true, "message": true, "content": true, "text": true, "内容": true, "正文": true}

// keyValueAt reads a "key: value" at goal[i:] into one tQuote token with
// its key: the value is quoted text, or runs to the next separator.
func keyValueAt(goal string, i int) (token, int) {
	if !strings.ContainsRune("stbmcnliSTBMCNLI主标内正题备", firstRuneOf(goal[i:])) {
		return token{}, 0
	}
	if i > 0 {
		if r := lastRune(goal[:i]); isWordRune(r) || isHan(r) && !isHan(firstRuneOf(goal[i:])) {
			return token{}, 0
		}
		if r := lastRune(goal[:i]); isHan(r) && !markers[string(r)] && r != '给' {
			return token{}, 0
		}
	}
	// The keys are short prefixes: the patterns read a window, not the
	// rest of the goal (a regexp of anchored alternatives scans all of
	// it, at each word that may start a key).
	head := goal[i:min(len(goal), i+64)]
	m := keyValueRe.FindStringSubmatchIndex(head)
	bare := false
	if m == nil {
		// "with subject running late, body: …": a subject said without
		// a colon runs to the next separator or to the body's key.
		if m = bareSubjectRe.FindStringSubmatchIndex(head); m == nil && bareBodyLeadRe.MatchString(goal[max(0, i-16):i]) {
			m = bareBodyKeyRe.FindStringSubmatchIndex(head) // "… and body see you at noon"
			if m == nil {
				m = bareTellRe.FindStringSubmatchIndex(head) // "… and tell them the report is late"
			}
		}
		if m == nil {
			return token{}, 0
		}
		bare = true
	}
	k := ""
	if m[2] >= 0 {
		k = strings.ToLower(goal[i+m[2] : i+m[3]])
	} else {
		k = goal[i+m[4] : i+m[5]]
	}
	switch k {
	case "tell", "let", "telling", "letting", "inform", "informing":
		k = "body" // "… and tell them X", ", informing him that X": X is the message
	}
	from := i + m[1]
	if bare {
		from -= utf8.RuneLen(lastRune(goal[:from])) // the value's first character, matched to see there is one
	}
	rest := goal[from:]
	if r, size := utf8.DecodeRuneInString(rest); closerOf(r) != 0 { // "with the subject 'Dinner'"
		if j := strings.IndexRune(rest[size:], closerOf(r)); j > 0 {
			end := from + size + j + utf8.RuneLen(closerOf(r))
			return token{kind: tQuote, text: rest[size : size+j], start: i, end: end, key: k}, end - i
		}
	}
	end := valueEnd(rest, k)
	if bare {
		if b := bareBodyRe.FindStringIndex(rest[:end]); b != nil {
			end = b[0]
		}
	}
	v := strings.TrimRight(strings.TrimSpace(rest[:end]), ",，;；、 ") // "telling her that I will be late, subject: …"
	if v == "" {
		return token{}, 0
	}
	return token{kind: tQuote, text: v, start: i, end: from + end, key: k}, from + end - i
}

func firstRuneOf(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

var clockWordRe = regexp.MustCompile(`^\d{1,2}(am|pm)$`)

func currencySymbol(r rune) bool { return strings.ContainsRune("$€£¥₩₹", r) }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// digitGroup says whether s starts with the digits that make a time
// (":00") or a thousands group (",250") after sep.
func digitGroup(s string, sep rune) bool {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if sep == ':' {
		return n == 2
	}
	return n == 3
}

// numberWords are English numbers in words; scales multiply what comes
// before them ("three hundred", "1.5 million").
var (
	numberWords = map[string]float64{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
		"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
		"nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
		"dozen": 12, "couple": 2}
	scaleWords = map[string]float64{"hundred": 100, "thousand": 1000, "grand": 1000, "lakh": 1e5, "lakhs": 1e5, "lac": 1e5, "crore": 1e7, "crores": 1e7, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9}
)

// joinNumbers reads numbers in words ("twenty", "fifteen hundred"), scaled
// numbers ("3 million", "3万") and a couple ("a couple of") as one number
// token each.
func joinNumbers(toks []token) []token {
	out := toks[:0:0]
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		lw := strings.ToLower(t.text)
		if v, ok := numberWords[lw]; ok && t.kind == tWord || t.kind == tNum {
			if t.kind == tNum {
				v = t.val
			}
			end, j := t.end, i+1
			for ; j < len(toks) && toks[j].kind == tWord; j++ {
				w := strings.ToLower(toks[j].text)
				if s, ok := scaleWords[w]; ok {
					v *= s
				} else if n, ok := numberWords[w]; ok && n < 10 && v >= 20 && t.kind == tWord {
					v += n
				} else if w == "of" && lw == "couple" {
				} else {
					break
				}
				end = toks[j].end
			}
			if j < len(toks) && toks[j].kind == tNum && toks[j].start == end && hanScale(toks[j].text) {
				v *= toks[j].val
				end = toks[j].end
				j++
			}
			out = append(out, token{kind: tNum, text: t.text, val: v, start: t.start, end: end})
			i = j - 1
			continue
		}
		out = append(out, t)
	}
	return out
}

// hanScale says whether a Chinese numeral is only a scale: 万, 千, 百.
func hanScale(s string) bool { return s == "万" || s == "千" || s == "百" || s == "亿" }

func isWordRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') && !isHan(r)
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// placeLastChars end the names of places in a city: a park, a street, a
// road, a bridge, a temple, a palace, a gate, a station.
const placeLastChars = "园街路桥寺宫殿门站湖村镇岛湾塔庙"

// segmentHan splits the Chinese run goal[from:to] by forward maximum
// matching against dict; numerals become numbers, and characters the
// dictionary does not know gather into tHanRaw tokens.
func segmentHan(goal string, from, to int, dict *hanDict) []token {
	var out []token
	raw := -1      // start of the pending unknown run
	placeEnd := -1 // end of the last place name in it
	flush := func(end int) {
		if raw < 0 {
			return
		}
		switch d := dishAt(goal, raw, placeEnd, end); {
		case d < 0:
			out = append(out, token{kind: tHanRaw, text: goal[raw:end], norm: goal[raw:end], start: raw, end: end})
		case d > raw:
			// 北京烤鸭: the place, then the dish.
			out = append(out, token{kind: tHanRaw, text: goal[raw:d], norm: goal[raw:d], start: raw, end: d})
			fallthrough
		default:
			// 羊肉泡馍, 担担面: a dish, not a place.
			out = append(out, token{kind: tHan, text: goal[d:end], norm: dishWord, start: d, end: end})
		}
		raw, placeEnd = -1, -1
	}
	i := from
	for i < to {
		afterNumber := i > 0 && (unicode.IsDigit(lastRune(goal[:i])) || len(out) > 0 && out[len(out)-1].kind == tNum && out[len(out)-1].end == i)
		if n := numberSuffix(goal[i:to], dict); afterNumber && n > 0 {
			// A measure word or a date or time after a number is no part
			// of the name after it: 5号上海, 8点北京, 三家长沙, 两晚.
			flush(i)
			out = append(out, token{kind: tHan, text: goal[i : i+n], norm: goal[i : i+n], start: i, end: i + n, stop: true})
			i += n
			continue
		}
		if n := placeSuffixAt(goal[i:to]); n > 0 && raw >= 0 {
			// A name, then what it names: 虹桥火车站, 人民广场, 中山大学.
			i += n
			placeEnd = i
			continue
		}
		if w, n := dict.longest(goal[i:to]); n > 0 {
			hw := dict.words[w]
			if hw.place {
				// A place name gathers with the names and unknown
				// characters next to it: 加拿大温哥华, 北京西站.
				if raw < 0 {
					raw = i
				}
				i += n
				placeEnd = i
				continue
			}
			// Between an unknown character and a place's last character a
			// single-character function word is inside a name (颐和园,
			// 永和街), not a conjunction.
			if hw.function && utf8.RuneCountInString(w) == 1 && raw >= 0 && placeEnd != i && i+n < to {
				if r, size := utf8.DecodeRuneInString(goal[i+n : to]); strings.ContainsRune(placeLastChars, r) {
					if _, m := dict.longest(goal[i+n : to]); m <= size {
						i += n + size
						continue
					}
				}
			}
			// A single-character function word followed by an unknown
			// character starts a name ("上海"), unless it is a marker.
			// After a number it is a measure word ("5家").
			if hw.function && utf8.RuneCountInString(w) == 1 && !markers[w] && !afterNumber && i+n < to {
				if _, m := dict.longest(goal[i+n : to]); m == 0 && !isNumeral(goal[i+n:to]) {
					if raw < 0 {
						raw = i
					}
					i += n
					continue
				}
			}
			flush(i)
			out = append(out, token{kind: tHan, text: w, norm: w, start: i, end: i + n, stop: hw.function, conj: hw.conj})
			i += n
			continue
		}
		if w, n := dict.homophone(goal[i:to]); n > 0 {
			// A word typed with a character that sounds the same (天汽 → 天气).
			flush(i)
			out = append(out, token{kind: tHan, text: goal[i : i+n], norm: w, start: i, end: i + n})
			i += n
			continue
		}
		v, n := hanNumber(goal[i:to])
		if n > 0 && v > 0 && placeSuffixAt(goal[i+n:to]) > 0 && !numberSuffixes[firstRuneOf(goal[i+n:to])] {
			// 五一广场, 二七广场: a number that names a place.
			if raw < 0 {
				raw = i
			}
			i += n
			continue
		}
		if numeralStartsName(goal[i:to], dict) {
			// 三里屯, 五道口, 九寨沟: a numeral that counts nothing starts a name.
			if raw < 0 {
				raw = i
			}
			i += utf8.RuneLen(firstRuneOf(goal[i:to]))
			continue
		}
		if n > 0 {
			flush(i)
			out = append(out, token{kind: tNum, text: goal[i : i+n], val: float64(v), start: i, end: i + n})
			i += n
			continue
		}
		if raw < 0 {
			raw = i
		}
		_, size := utf8.DecodeRuneInString(goal[i:])
		i += size
	}
	flush(to)
	return out
}

// placeSuffixes are the words that follow a name and make it a place's:
// 虹桥火车站, 人民广场, 中山大学 (the dictionary knows 火车, 广场 and 大学
// as words of their own).
var placeSuffixes = []string{"火车站", "高铁站", "地铁站", "汽车站", "客运站", "火车东站", "火车西站", "火车南站", "火车北站",
	"国际机场", "机场", "广场", "公园", "大学", "博物馆", "体育馆", "体育场", "购物中心", "商场", "景区", "古镇", "老街",
	"步行街", "夜市", "码头", "大桥", "大厦", "医院", "车站", "校区", "新区", "开发区",
	"歌剧院", "海滩", "大教堂", "教堂", "动物园", "植物园", "美术馆", "图书馆", "乐园", "寺庙"}

// placeSuffixAt returns the length in bytes of the place suffix at the
// start of s (the longest), or 0.
func placeSuffixAt(s string) int {
	n := 0
	for _, w := range placeSuffixes {
		if len(w) > n && strings.HasPrefix(s, w) {
			n = len(w)
		}
	}
	return n
}

// numeralStartsName says whether the numeral at the start of s counts
// nothing and begins a name instead (三里屯, 五道口, 二环): a single
// numeral from 二 to 九 followed by an unknown character, or by a
// single-character function word and an unknown one; never before a
// measure word, a unit or another number (三家, 三晚, 三块, 三百).
func numeralStartsName(s string, dict *hanDict) bool {
	r, n := utf8.DecodeRuneInString(s)
	if !strings.ContainsRune("二三四五六七八九", r) || n == len(s) {
		return false
	}
	rest := s[n:]
	r2, _ := utf8.DecodeRuneInString(rest)
	if numberSuffixes[r2] || strings.ContainsRune(hanUnitChars, r2) || isNumeral(rest) {
		return false
	}
	w, m := dict.longest(rest)
	if m == 0 {
		return true
	}
	if !dict.words[w].function || utf8.RuneCountInString(w) != 1 || m == len(rest) {
		return false
	}
	_, m2 := dict.longest(rest[m:])
	return m2 == 0 && !isNumeral(rest[m:])
}

// hanUnitChars are units and measure words a number stands before that
// are no place: 三块, 五斤, 两杯.
const hanUnitChars = "块元角毛米斤克磅度杯瓶盒碗串套辆台双对件支名百千万亿十"

// numberSuffixes are the measure words and the date and time words that
// follow a number (5号, 8点, 三家, 两晚, 十条): after a number they are read
// on their own, never as the start of a name.
var numberSuffixes = map[rune]bool{'号': true, '日': true, '点': true, '時': true, '时': true, '月': true, '年': true, '晚': true, '夜': true,
	'家': true, '条': true, '张': true, '个': true, '位': true, '份': true, '间': true, '人': true, '天': true, '周': true, '本': true, '首': true,
	'只': true, '幅': true, '次': true, '遍': true, '分': true, '岁': true, '层': true, '口': true}

// numberSuffix returns the length in bytes of a number's suffix at the
// start of s ("号", "点半", "分钟"), or 0 when s starts with a place name
// (5天津) or a longer dictionary word (3公里, 5块钱 are read as they are).
func numberSuffix(s string, dict *hanDict) int {
	r, n := utf8.DecodeRuneInString(s)
	if !numberSuffixes[r] {
		return 0
	}
	if w, m := dict.longest(s); m > n {
		if dict.words[w].place || !dict.words[w].function {
			return 0
		}
		return m
	}
	if r == '点' || r == '时' {
		if r2, n2 := utf8.DecodeRuneInString(s[n:]); r2 == '半' || r2 == '钟' {
			n += n2
		}
	}
	return n
}

// dishWord is the lexicon's word a dish is read as (its concept: food).
const dishWord = "美食"

// dishHeads are the characters a dish's name ends with: 烤鸭, 担担面,
// 羊肉泡馍, 湘菜.
const dishHeads = "面粉饭菜鸭鸡鱼肉虾蟹馍饺粥锅串饼"

// dishAt says where a dish starts in the unknown run goal[raw:end] whose
// last place name ends at placeEnd (-1: none): the end of that place name,
// raw for a run that is all dish, or -1 when the run is no dish.
func dishAt(goal string, raw, placeEnd, end int) int {
	last := lastRune(goal[raw:end])
	if strings.ContainsRune("店馆铺", last) && end-raw > utf8.RuneLen(last) {
		last = lastRune(goal[raw : end-utf8.RuneLen(last)]) // 泡馍店: a dish's shop
	}
	if !strings.ContainsRune(dishHeads, last) {
		return -1
	}
	start := raw
	if placeEnd > raw {
		start = placeEnd
	}
	if runeLen(goal[start:end]) < 2 {
		return -1
	}
	return start
}

// longest returns the longest dictionary word at the start of s and its
// length in bytes.
func (d *hanDict) longest(s string) (string, int) {
	if d == nil {
		return "", 0
	}
	// Byte offsets of the first maxLen runes.
	ends := make([]int, 0, 8)
	n := 0
	for i := range s {
		if i > 0 {
			ends = append(ends, i)
		}
		if n++; n > d.maxLen {
			break
		}
	}
	if n <= d.maxLen {
		ends = append(ends, len(s))
	}
	for k := len(ends) - 1; k >= 0; k-- {
		if _, ok := d.words[s[:ends[k]]]; ok {
			return s[:ends[k]], ends[k]
		}
	}
	return "", 0
}

// pinyinText is the sound (pinyin without tones) of the common Chinese
// characters (pinyin.txt).
//
//go:embed pinyin.txt
var pinyinText string

// sounds maps a character to its syllable's number in pinyinText. It is
// read before any init function runs: those add the lexicon's words to
// the dictionary, under their sounds.
var sounds, syllables = readSounds(pinyinText)

// readSounds reads pinyin.txt: each character's syllable number, and the
// syllables by number (1 the first).
func readSounds(text string) (map[rune]uint16, []string) {
	out := map[rune]uint16{}
	names := []string{""}
	n := uint16(0)
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		syl, chars, _ := strings.Cut(line, "\t")
		n++
		names = append(names, syl)
		for _, r := range chars {
			out[r] = n
		}
	}
	return out, names
}

// spelling is a word's pinyin without tones, as typed ("天气" → "tianqi"),
// or "" when a character's sound is not known.
func spelling(rs []rune) string {
	var b strings.Builder
	if !eachSound(rs, func(s uint16) { b.WriteString(syllables[s]) }) {
		return ""
	}
	return b.String()
}

// eachSound calls f with the syllable number of each of rs, in order, and
// says whether every one's sound is known (it stops at the first that is
// not).
func eachSound(rs []rune, f func(uint16)) bool {
	for _, r := range rs {
		s, ok := sounds[r]
		if !ok {
			return false
		}
		f(s)
	}
	return true
}

// spelledWord returns the dictionary word that w, a word in Latin
// letters, spells in pinyin ("tianqi" → 天气), or "".
func (d *hanDict) spelledWord(w string) string {
	if d == nil || len(w) < 5 || !isASCII(w) {
		return ""
	}
	for _, dd := range []*hanDict{d, baseDict} {
		if v, ok := dd.spelled[strings.ToLower(w)]; ok {
			return v
		}
	}
	return ""
}

// soundKey is how a word of two or three characters sounds ("" when a
// character's sound is not known).
func soundKey(rs []rune) string {
	var b strings.Builder
	if !eachSound(rs, func(s uint16) { b.WriteByte(byte(s >> 8)); b.WriteByte(byte(s)) }) {
		return ""
	}
	return b.String()
}

// addSound records a word of the dictionary under its sound; a sound two
// words share names neither.
func (d *hanDict) addSound(w string) {
	rs := []rune(w)
	if len(rs) < 2 || len(rs) > 3 {
		return
	}
	k := soundKey(rs)
	if k == "" {
		return
	}
	if d.sounds == nil {
		d.sounds = map[string]string{}
	}
	if sp := spelling(rs); sp != "" {
		if d.spelled == nil {
			d.spelled = map[string]string{}
		}
		if old, ok := d.spelled[sp]; ok && old != w {
			d.spelled[sp] = "" // two words spelled alike name neither
		} else {
			d.spelled[sp] = w
		}
	}
	if old, ok := d.sounds[k]; ok && old != w {
		d.sounds[k] = ""
		return
	}
	d.sounds[k] = w
}

// homophone returns the dictionary word (of two or three characters, not
// a place or a function word) that sounds like the start of s and shares a
// character with it: a word typed with a character of the same sound, as
// pinyin input methods produce (天起 → 天气, 参厅 → 餐厅, 汇律 → 汇率); and its
// length in bytes in s.
func (d *hanDict) homophone(s string) (string, int) {
	if d == nil {
		return "", 0
	}
	var rs []rune
	for _, r := range s {
		if !isHan(r) {
			break
		}
		if rs = append(rs, r); len(rs) == 3 {
			break
		}
	}
	for n := len(rs); n >= 2; n-- {
		k := soundKey(rs[:n])
		if k == "" {
			continue
		}
		for _, dd := range []*hanDict{d, baseDict} {
			w, ok := dd.sounds[k]
			if !ok || w == "" {
				continue
			}
			same := 0
			for i, r := range []rune(w) {
				if r == rs[i] {
					same++
				}
			}
			if hw, ok := d.words[w]; ok && !hw.place && !hw.function && same > 0 && same < n {
				return w, len(string(rs[:n]))
			}
			break
		}
	}
	return "", 0
}

func isNumeral(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	_, a := hanNumerals[r]
	_, b := hanUnits[r]
	return a || b
}

// hanNumber reads a Chinese numeral at the start of s ("三", "十二", "两百五十")
// and returns its value and length in bytes (0 when there is none).
func hanNumber(s string) (int, int) {
	total, section, digit, n := 0, 0, -1, 0
	unit := 0 // the unit right before the last numeral, 0 when none is
	runes, bank := 0, false
	for i, r := range s {
		d, ok := hanNumerals[r]
		if !ok {
			d, ok = bankNumerals[r]
			bank = bank || ok
		}
		u, isUnit := hanUnits[r]
		if !isUnit {
			u, isUnit = bankUnits[r]
			bank = bank || isUnit
		}
		if ok || isUnit {
			runes++
		}
		if ok {
			if d == 0 {
				unit = 0 // 一百零五: the numeral after 零 counts ones
			}
			digit = d
			n = i + utf8.RuneLen(r)
			continue
		}
		if isUnit {
			if digit < 0 {
				digit = 1
			}
			if u == 10000 {
				total = (total + section + digit) * u
				section = 0
			} else {
				section += digit * u
			}
			digit, unit = 0, u
			n = i + utf8.RuneLen(r)
			continue
		}
		break
	}
	if n == 0 || bank && runes < 2 {
		return 0, 0
	}
	if digit > 0 {
		if unit >= 100 {
			// 一千五, 两百五, 三万五: a numeral right after a unit of
			// hundreds or more counts the next unit down.
			digit *= unit / 10
		}
		section += digit
	}
	return total + section, n
}

// splitWords splits a name or a description into lower-case words: on
// anything but letters and digits, and between camelCase humps
// ("getTinyImage" → get, tiny, image).
func splitWords(s string) []string {
	var out []string
	var cur []rune
	var prev rune
	emit := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range s {
		switch {
		case isHan(r):
			emit()
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				emit()
			}
			cur = append(cur, r)
		default:
			emit()
		}
		prev = r
	}
	emit()
	return out
}

// hanRuns returns the runs of Chinese characters in s.
func hanRuns(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		if isHan(r) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}
