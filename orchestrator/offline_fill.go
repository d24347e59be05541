package orchestrator

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

// filler reads the arguments of one entry's input schema from one clause,
// in steps: typed values first (dates, times, patterns, currencies, enums,
// "key: value"), then places, numbers, free text, switches and defaults.
type filler struct {
	ix      *offlineIndex
	goal    string
	c       *clause
	oe      *offEntry
	args    map[string]any
	matched map[int]bool // tokens that picked the entry
	usedTok map[int]bool // tokens given to an argument
}

// fill reads the arguments of oe's input schema from the clause. ctx is
// the place context before the clause, later the first place named after.
func (ix *offlineIndex) fill(goal string, c *clause, oe *offEntry, ctx places, later string) (map[string]any, []string, error) {
	f := &filler{ix: ix, goal: goal, c: c, oe: oe, args: map[string]any{}, matched: map[int]bool{}, usedTok: map[int]bool{}}
	m := c.ranked[c.best]
	for i, t := range c.toks {
		if k := tokKey(t); k != "" && m.keys[k] {
			f.matched[i] = true
		}
		// The words of a phrase that picked the entry ("how do you say").
		words := []string{t.norm}
		for j := i + 1; t.kind == tWord && j < len(c.toks) && j-i < ix.maxWords && c.toks[j].kind == tWord; j++ {
			words = append(words, c.toks[j].norm)
			if p := strings.Join(words, " "); ix.hasPhrase(p) && m.keys[key(p)] {
				for k := i; k <= j; k++ {
					f.matched[k] = true
				}
			}
		}
	}
	for i := range c.values.used {
		f.usedTok[i] = true
	}
	if c.cond {
		// "if it's below 200 convert 5000 sgd": the condition's number is
		// no argument of the step.
		for i := range comparedNumbers(c.toks) {
			f.usedTok[i] = true
		}
	}
	f.keyValues()
	f.dates()
	f.stays()
	f.party()
	f.grouped()
	f.patterns()
	f.enums()
	f.kinds()
	quotes := f.formatted()
	f.places(ctx, later)
	f.durations()
	f.numbers()
	f.carriedParty(ctx.party)
	f.text(quotes)
	f.bools()
	return f.finish()
}

// set gives name v when it fits the parameter's schema.
func (f *filler) set(p param, v any) bool {
	if _, done := f.args[p.name]; done || !p.accepts(v) {
		return false
	}
	f.args[p.name] = v
	return true
}

// keyValues gives "subject: lunch", 主题是周报 to the parameter of that name.
func (f *filler) keyValues() {
	for _, t := range f.c.toks {
		if t.kind != tQuote || t.key == "" {
			continue
		}
		for _, p := range f.oe.params {
			if p.typ == "string" && keyNames(t.key, p.name) && f.set(p, t.text) {
				break
			}
		}
	}
}

// dates gives the clause's dates and times to parameters of format date,
// date-time and time.
func (f *filler) dates() {
	cv := f.c.values
	d, tm := 0, 0
	for _, p := range f.oe.params {
		switch {
		case p.format == "date" && d < len(cv.dates):
			if f.set(p, cv.dates[d].val) {
				d++
			}
		case p.format == "date-time" && d < len(cv.dates):
			at := "09:00"
			if len(cv.times) > 0 {
				at = cv.times[0].val
			}
			if f.set(p, cv.dates[d].val+"T"+at+":00Z") {
				d++
			}
		case (p.format == "time" || p.isTimeParam()) && tm < len(cv.times):
			if f.set(p, cv.times[tm].val) {
				tm++
			}
		}
	}
}

// patterns gives a parameter with a pattern the first word of the clause
// that matches it as typed ("AAPL", "1Z999AA10123456784"), besides words of
// the catalog.
func (f *filler) patterns() {
	for _, p := range f.oe.params {
		if p.pattern == nil || p.group != "" {
			continue
		}
		if _, done := f.args[p.name]; done {
			continue
		}
		for i, t := range f.c.toks {
			if f.usedTok[i] || !patternCandidate(t, f.ix) {
				continue
			}
			if p.pattern.MatchString(t.text) && f.set(p, t.text) {
				f.usedTok[i] = true
				break
			}
		}
		if _, done := f.args[p.name]; done || p.pattern.MatchString("a") {
			continue
		}
		if p.ticker {
			f.tickerByName(p)
			if _, done := f.args[p.name]; done {
				f.onMarket(p)
				continue
			}
		}
		// An identifier the pattern wants in capitals, typed in lower case
		// ("msft stock price").
		for i, t := range f.c.toks {
			if !f.usedTok[i] && !f.c.placeToks[i] && lowerIdentifier(t, f.ix) && p.pattern.MatchString(strings.ToUpper(t.text)) && f.set(p, strings.ToUpper(t.text)) {
				f.usedTok[i] = true
				break
			}
		}
	}
}

// exchangeSuffix are the stock markets a goal names ("Infosys on NSE"),
// each with the suffix its tickers take; a market's name is no symbol.
var exchangeSuffix = map[string]string{"nse": ".NS", "bse": ".BO", "tsx": ".TO", "lse": ".L", "asx": ".AX", "hkex": ".HK", "sgx": ".SI",
	"jse": ".JO", "nyse": "", "nasdaq": "", "港股": ".HK", "a股": ".SS"}

// onMarket gives a company's ticker the suffix of the market the clause
// names, when it has none and the pattern takes it.
func (f *filler) onMarket(p param) {
	sym, _ := f.args[p.name].(string)
	if sym == "" || strings.Contains(sym, ".") {
		return
	}
	for _, t := range f.c.toks {
		if suf := exchangeSuffix[strings.ToLower(t.text)]; suf != "" && p.pattern.MatchString(sym+suf) {
			f.args[p.name] = sym + suf
			return
		}
	}
}

// tickerParam says whether a parameter so named and described takes a
// stock's ticker symbol.
func tickerParam(name, desc string) bool {
	s := strings.ToLower(name + " " + desc)
	return strings.Contains(s, "ticker") || strings.Contains(s, "stock") || strings.Contains(name, "symbol") && strings.Contains(s, "share")
}

// tickerByName gives p the ticker of a company the clause names ("microsoft
// share price", 腾讯股价), when the pattern takes it.
func (f *filler) tickerByName(p param) {
	for i := range f.c.toks {
		if f.usedTok[i] {
			continue
		}
		if sym, n := companyAt(f.c.toks, i); n > 0 && p.pattern.MatchString(sym) && f.set(p, sym) {
			for j := i; j < i+n; j++ {
				f.usedTok[j] = true
			}
			return
		}
	}
}

// companyAt returns the ticker of the company named at toks[i] (by two
// words, one word, or inside a Chinese run: 查一下英伟达) and how many
// tokens name it, or 0.
func companyAt(toks []token, i int) (string, int) {
	t := toks[i]
	lw := strings.ToLower(t.text)
	if i+1 < len(toks) && toks[i+1].kind == tWord {
		if sym, ok := companyTickers[lw+" "+strings.ToLower(toks[i+1].text)]; ok {
			return sym, 2
		}
	}
	if sym, ok := companyTickers[lw]; ok {
		return sym, 1
	}
	if t.kind == tHan || t.kind == tHanRaw {
		for _, n := range hanCompanies {
			if strings.Contains(t.text, n) {
				return companyTickers[n], 1
			}
		}
	}
	return "", 0
}

// hanCompanies are the Chinese names of companyTickers, longest first (贵州茅台
// before 茅台), so a run is read the same way every time.
var hanCompanies = hanKeys(companyTickers)

// hanKeys are the keys of m that are not ASCII, longest first, then in
// order: the Chinese names of a table, to search a run for in one order.
func hanKeys[V any](m map[string]V) []string {
	var out []string
	for n := range m {
		if !isASCII(n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return out
}

// companyTickers are the tickers of companies users ask about by name, in
// English and Chinese, on their main listing.
var companyTickers = map[string]string{
	"apple": "AAPL", "microsoft": "MSFT", "tesla": "TSLA", "google": "GOOGL", "alphabet": "GOOGL", "amazon": "AMZN", "meta": "META",
	"facebook": "META", "nvidia": "NVDA", "netflix": "NFLX", "intel": "INTC", "amd": "AMD", "ibm": "IBM", "oracle": "ORCL",
	"salesforce": "CRM", "adobe": "ADBE", "paypal": "PYPL", "uber": "UBER", "airbnb": "ABNB", "disney": "DIS", "nike": "NKE",
	"coca-cola": "KO", "coca cola": "KO", "coke": "KO", "pepsi": "PEP", "pepsico": "PEP", "mcdonald's": "MCD", "mcdonalds": "MCD", "starbucks": "SBUX",
	"walmart": "WMT", "boeing": "BA", "visa": "V", "mastercard": "MA", "jpmorgan": "JPM", "goldman sachs": "GS", "toyota": "TM",
	"sony": "SONY", "samsung": "005930.KS", "tencent": "0700.HK", "alibaba": "BABA", "baidu": "BIDU", "jd": "JD", "pinduoduo": "PDD",
	"nio": "NIO", "byd": "1211.HK", "xiaomi": "1810.HK", "meituan": "3690.HK", "tsmc": "TSM", "asml": "ASML", "spotify": "SPOT",
	"shopify": "SHOP", "zoom": "ZM", "netease": "NTES", "berkshire hathaway": "BRK.B",
	"infosys": "INFY", "wipro": "WIT", "hdfc bank": "HDB", "icici bank": "IBN", "tata motors": "TTM", "qualcomm": "QCOM", "broadcom": "AVGO",
	"costco": "COST", "exxon": "XOM", "exxonmobil": "XOM", "chevron": "CVX", "pfizer": "PFE", "moderna": "MRNA", "johnson & johnson": "JNJ",
	"procter & gamble": "PG", "general motors": "GM", "ferrari": "RACE", "volkswagen": "VOW3.DE", "bmw": "BMW.DE", "siemens": "SIE.DE",
	"nestle": "NESN.SW", "lvmh": "MC.PA", "hsbc": "HSBC", "barclays": "BARC.L", "unilever": "UL", "astrazeneca": "AZN",
	"nintendo": "7974.T", "honda": "HMC", "softbank": "9984.T", "hyundai": "005380.KS", "lg": "066570.KS", "sea limited": "SE",
	"dbs": "D05.SI", "petrobras": "PBR", "mercadolibre": "MELI", "naspers": "NPN.JO", "palantir": "PLTR", "snowflake": "SNOW",
	"coinbase": "COIN", "robinhood": "HOOD", "rivian": "RIVN", "dell": "DELL", "cisco": "CSCO",
	"at&t": "T", "verizon": "VZ", "t-mobile": "TMUS", "comcast": "CMCSA", "warner bros": "WBD", "paramount": "PARA", "roblox": "RBLX",
	"xpeng": "XPEV", "li auto": "LI", "jd.com": "JD", "trip.com": "TCOM", "bilibili": "BILI", "lenovo": "0992.HK", "ping an": "2318.HK",
	"联想": "0992.HK", "中国平安": "2318.HK", "工商银行": "601398.SS", "招商银行": "600036.SS", "中国移动": "0941.HK",
	"宁德时代": "300750.SZ", "五粮液": "000858.SZ", "携程": "TCOM", "哔哩哔哩": "BILI", "B站": "BILI", "理想汽车": "LI", "小鹏": "XPEV", "小鹏汽车": "XPEV",
	"中芯国际": "0981.HK", "快手": "1024.HK", "港交所": "0388.HK", "汇丰": "0005.HK", "汇丰银行": "0005.HK", "任天堂": "7974.T",
	"本田": "HMC", "软银": "9984.T", "现代汽车": "005380.KS", "英飞凌": "IFX.DE", "高通": "QCOM", "博通": "AVGO", "甲骨文": "ORCL", "思科": "CSCO",
	"迪士尼": "DIS", "耐克": "NKE", "可口可乐": "KO", "星巴克": "SBUX", "麦当劳": "MCD", "波音": "BA", "脸书": "META", "奔驰": "MBG.DE", "宝马": "BMW.DE",
	// the best-known tickers, typed in lower case ("how's tsla doing")
	"tsla": "TSLA", "aapl": "AAPL", "msft": "MSFT", "nvda": "NVDA", "amzn": "AMZN", "goog": "GOOG", "googl": "GOOGL", "nflx": "NFLX", "baba": "BABA",
	"苹果": "AAPL", "微软": "MSFT", "特斯拉": "TSLA", "谷歌": "GOOGL", "亚马逊": "AMZN", "英伟达": "NVDA", "腾讯": "0700.HK", "阿里巴巴": "BABA",
	"阿里": "BABA", "百度": "BIDU", "京东": "JD", "小米": "1810.HK", "美团": "3690.HK", "比亚迪": "1211.HK", "蔚来": "NIO", "拼多多": "PDD",
	"台积电": "TSM", "贵州茅台": "600519.SS", "茅台": "600519.SS", "网易": "NTES", "奈飞": "NFLX", "英特尔": "INTC", "索尼": "SONY", "丰田": "TM", "三星": "005930.KS",
}

// knownTickers are the symbols of companyTickers.
var knownTickers = map[string]bool{}

func init() {
	for _, sym := range companyTickers {
		knownTickers[sym] = true
	}
}

// lowerIdentifier says whether a lower-case word may be an identifier
// typed in lower case (a ticker: "msft", "tsla", "aapl"): two to five
// letters, no function word, no word of the catalog or the lexicon nor a
// typo of one, and at most one vowel letter, repeated or not (which few
// words of English have: "tsla", "goog", but not "apple").
func lowerIdentifier(t token, ix *offlineIndex) bool {
	if t.kind != tWord || t.stop || len(t.text) < 2 || len(t.text) > 5 || t.text != strings.ToLower(t.text) {
		return false
	}
	vowels := map[rune]bool{}
	for _, r := range t.text {
		if r < 'a' || r > 'z' {
			return false
		}
		if strings.ContainsRune("aeiouy", r) {
			vowels[r] = true
		}
	}
	k := key(t.norm)
	return len(vowels) <= 1 && !ix.strongKey(k) && concepts[t.norm] == "" && (ix.post.Has(k) || ix.typo(t.norm) == "")
}

// patternCandidate says whether a token may be an identifier: typed as a
// value (quoted, with a digit, or upper-case) and not a word of the catalog.
func patternCandidate(t token, ix *offlineIndex) bool {
	switch t.kind {
	case tQuote:
		return t.key == "" && t.format == ""
	case tNum:
		return true
	case tWord:
		if strings.ContainsAny(t.text, "0123456789") {
			return true
		}
		_, market := exchangeSuffix[strings.ToLower(t.text)]
		return len(t.text) >= 2 && t.text == strings.ToUpper(t.text) && !ix.strongKey(key(t.norm)) && !market
	}
	return false
}

// moneyPrefix says whether letters written before an amount name its
// currency, as South Africans, Malaysians, Indians or Kenyans write money
// (R2340, RM50, Rs500, Ksh1,000, rm1.5k; USD100): the tokenizer reads
// them apart from it.
func moneyPrefix(letters string) bool {
	return prefixCurrencies[strings.ToLower(letters)] != "" || isoCurrencies[strings.ToUpper(letters)]
}

// prefixCurrencies are the currencies of the letters of moneyPrefix that
// are no ISO code.
var prefixCurrencies = map[string]string{"r": "ZAR", "rm": "MYR", "rs": "INR", "rp": "IDR", "ksh": "KES", "tk": "BDT", "nt": "TWD", "hk": "HKD", "us": "USD", "rmb": "CNY"}

// enums gives enum parameters a value named in the clause by its words
// ("walking route", 步行) when grouped() did not.
func (f *filler) enums() {
	for _, p := range f.oe.params {
		if len(p.enum) == 0 {
			continue
		}
		if v, ok := f.ix.enumIn(p.enum, f.c.toks, f.c.placeToks, f.goal); ok && f.set(p, v) {
			continue
		}
		for _, m := range enumMentions(p.syn, f.c.toks, f.c.names, f.usedTok) {
			if f.set(p, m.v) {
				f.usedTok[m.tok] = true
				break
			}
		}
	}
}

// formatted gives links and addresses to parameters of their format (or
// named like one: url, link, email) and returns the other quoted texts.
func (f *filler) formatted() []string {
	var quotes []string
	for _, t := range f.c.toks {
		if t.kind != tQuote || t.key != "" {
			continue
		}
		if t.format == "" {
			quotes = append(quotes, t.text)
			continue
		}
		for _, p := range f.oe.params {
			if p.format == t.format || p.format == "" && p.typ == "string" && formatNamed(p.name, t.format) {
				if f.set(p, t.text) {
					break
				}
			}
		}
	}
	return quotes
}

// places gives the clause's places (or those before or after it) to the
// place, origin and destination parameters.
func (f *filler) places(ctx places, later string) {
	own := f.c.places
	if own.any() == "" && f.takesPlace() && len(strings.Fields(f.goal[:f.c.start])) <= 2 {
		// A terse goal may name its place bare; a part after others that
		// names none ("…? bbq cookoff") is their context.
		if i := loneWordBesideKey(f.c.toks, f.ix); i >= 0 {
			own.place = f.c.toks[i].text // "weahter sarajevo", "sarajevo forecast"
			f.usedTok[i] = true
		}
	}
	here, origin, dest := placeArgs(own, ctx, later)
	for _, p := range f.oe.params {
		var v string
		switch p.role {
		case roleOrigin:
			v = origin
		case roleDest:
			v = dest
		case rolePlace:
			v = here
		}
		if v == "" {
			continue
		}
		if len(p.enum) > 0 {
			if e, ok := enumValue(p.enum, v); ok {
				f.set(p, e)
			}
			continue
		}
		f.set(p, v)
	}
}

// dated says whether the entry takes a date: a search of trips or stays on
// a day (flights, hotels), which "book" asks for too, not a route of now.
func (oe *offEntry) dated() bool {
	return slices.ContainsFunc(oe.params, func(p param) bool { return p.format == "date" })
}

// ofPlace says whether the parameter takes a place: where, from where or
// to where.
func (p param) ofPlace() bool {
	return p.role == rolePlace || p.role == roleOrigin || p.role == roleDest
}

// countsPeople says whether the parameter counts people (guests,
// passengers, adults).
func (p param) countsPeople() bool {
	return p.role == roleNumber && (p.words["guest"] || p.words["passeng"] || p.words["person"] || p.words["adult"] || p.words["people"])
}

// takesPlace says whether the entry has a parameter of where.
func (f *filler) takesPlace() bool {
	for _, p := range f.oe.params {
		if p.role == rolePlace {
			return true
		}
	}
	return false
}

// placeArgs works out where (here), from where and to where a clause
// means, from its own places, the context before it and the first place
// named after it.
func placeArgs(own, ctx places, later string) (here, origin, dest string) {
	here = firstNonEmpty(own.place, own.dest, ctx.place, later)
	origin, dest = own.origin, own.dest
	switch {
	case origin == "" && dest == "":
		switch {
		case own.place != "":
			dest = own.place
		case ctx.origin != "" && ctx.dest != "":
			origin, dest = ctx.origin, ctx.dest
		default:
			dest = here
		}
	case origin == "":
		if p := firstNonEmpty(own.place, ctx.place, later); p != "" && !strings.EqualFold(p, dest) {
			origin = p
		}
	case dest == "":
		if p := firstNonEmpty(own.place, ctx.place); p != "" && !strings.EqualFold(p, origin) {
			dest = p
		}
	}
	if origin == "" && ctx.at != "" && !strings.EqualFold(ctx.at, dest) {
		origin = ctx.at // "我在深圳北站，想去华强北，地铁咋坐"
	}
	return here, origin, dest
}

// bools sets switches the clause names ("with an image" → includeImage).
func (f *filler) bools() {
	for _, p := range f.oe.params {
		if p.role == roleBool && boolNamed(p.name, f.c.toks) {
			f.set(p, true)
		}
	}
}

// finish adds defaults, reports missing required arguments, and checks
// the arguments against the schema (leaving out what the goal did not
// require when they do not fit).
func (f *filler) finish() (map[string]any, []string, error) {
	args, oe := f.args, f.oe
	for _, p := range oe.params {
		if _, done := args[p.name]; !done && p.hasDef {
			args[p.name] = p.def
		}
	}
	var missing []string
	for _, p := range oe.params {
		if _, ok := args[p.name]; !ok && oe.required[p.name] {
			missing = append(missing, p.name)
		}
	}
	for r := range oe.required {
		found := false
		for _, p := range oe.params {
			found = found || p.name == r
		}
		if !found {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return args, missing, nil // what it has, to compare with the plan's steps (planBuilder.build)
	}
	if err := oe.validate(args); err != nil {
		// An optional value that does not fit is left out, and only it:
		// the required ones and every optional one that fits beside them
		// stay (in the order of the schema's parameters).
		kept := map[string]any{}
		for k, v := range args {
			if oe.required[k] {
				kept[k] = v
			}
		}
		if err2 := oe.validate(kept); err2 != nil {
			return nil, nil, err
		}
		for _, p := range oe.params {
			v, ok := args[p.name]
			if !ok || oe.required[p.name] {
				continue
			}
			kept[p.name] = v
			if oe.validate(kept) != nil {
				delete(kept, p.name)
			}
		}
		args = kept
	}
	return args, nil, nil
}

var (
	subjectKeys = map[string]bool{"subject": true, "title": true, "topic": true, "主题": true, "标题": true, "题目": true}
	bodyKeys    = map[string]bool{"body": true, "content": true, "message": true, "text": true, "note": true, "内容": true, "正文": true, "备注": true}
)

// keyNames says whether a "key: value" key names parameter name.
func keyNames(k, name string) bool {
	k, name = strings.ToLower(k), strings.ToLower(name)
	if k == name {
		return true
	}
	return subjectKeys[k] && subjectKeys[name] || bodyKeys[k] && bodyKeys[name]
}

var timeNameRe = regexp.MustCompile(`(?i)(^|_|[a-z])(time|at)$`)

// isTimeParam says whether a string parameter holds a time of day: named
// like one (start_time) with a pattern that "10:00" fits.
func (p param) isTimeParam() bool {
	return p.typ == "string" && timeNameRe.MatchString(p.name) && p.pattern != nil && p.pattern.MatchString("10:00")
}

// comparedNumbers are the tokens of the numbers a condition compares
// with: the number after "below", "above", "under", "over", "less than",
// "more than", 低于, 超过, 跌破 (a currency sign between them is allowed).
func comparedNumbers(toks []token) map[int]bool {
	var out map[int]bool
	for i, t := range toks {
		lw := strings.ToLower(t.text)
		if !compareWords[lw] && !(lw == "than" && i > 0 && (strings.EqualFold(toks[i-1].text, "less") || strings.EqualFold(toks[i-1].text, "more"))) {
			continue
		}
		for j := i + 1; j < len(toks) && j <= i+2; j++ {
			if toks[j].kind == tNum {
				if out == nil {
					out = map[int]bool{}
				}
				out[j] = true
				break
			}
		}
	}
	return out
}

var compareWords = map[string]bool{"below": true, "above": true, "under": true, "over": true, "beneath": true, "exceeds": true,
	"低于": true, "高于": true, "超过": true, "跌破": true, "突破": true, "不到": true, "大于": true, "小于": true}
