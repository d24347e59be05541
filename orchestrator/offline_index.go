package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolhub/toolhub/internal/x/cowmap"
	"github.com/toolhub/toolhub/registry"
)

// The offline planner's index of a catalog: every entry's words (name,
// title, description, parameters, keywords) weighted by where they appear
// and by how rare they are across the catalog, so one clause is ranked
// against a hundred tools with a few map lookups.

// Field weights: a word in a tool's keywords or name says more than one in
// a parameter's description.
const (
	wKeyword   = 3.0
	wName      = 3.0
	wTitle     = 2.0
	wDesc      = 1.5
	wParamName = 0.8
	wParamDesc = 0.5
	wBigram    = 0.6 // per Chinese character pair of a Chinese description
)

var (
	plannerStop = map[string]bool{}
	concepts    = map[string]string{} // stemmed English word or phrase, or Chinese word → "#n"
	// lexPhrases are the lexicon's multi-word English phrases, stemmed.
	lexPhrases = map[string]bool{}
	baseDict   = &hanDict{words: map[string]hanWord{}}
	// conceptVocab are the lexicon's single English words, stemmed, for typos.
	conceptVocab = map[string]string{}
)

func init() {
	for _, w := range stopwordList {
		plannerStop[w] = true
		plannerStop[stem(w)] = true
	}
	for gi, g := range conceptGroups {
		id := "#" + g[0]
		if gi > 0 && concepts[englishKey(g[0])] != "" {
			id = concepts[englishKey(g[0])]
		}
		for _, w := range g {
			if hanRuns(w) != nil {
				concepts[w] = id
				baseDict.add(w, hanWord{})
				continue
			}
			k := englishKey(w)
			concepts[k] = id
			if !strings.Contains(k, " ") && len(k) >= 4 {
				conceptVocab[k] = id
				if raw := strings.ToLower(w); raw != k && len(raw) >= 5 {
					conceptVocab[raw] = id // "resturnt" is nearer "restaurant" than its stem
				}
			}
			if strings.Contains(k, " ") {
				lexPhrases[k] = true
			}
		}
	}
	for _, w := range slices.Concat(hanFunctionWords, hanJudges) {
		baseDict.add(w, hanWord{function: true, conj: hanConjunctions[w]})
	}
	for w := range hanConjunctions {
		baseDict.add(w, hanWord{function: true, conj: true})
	}
}

// englishKey stems each word of an English word or phrase.
func englishKey(s string) string {
	ws := splitWords(s)
	for i, w := range ws {
		ws[i] = stem(w)
	}
	return strings.Join(ws, " ")
}

// key is what a term is indexed and looked up under: its concept, if the
// lexicon has one, else itself.
func key(term string) string {
	if c, ok := concepts[term]; ok {
		return c
	}
	return term
}

// posting is an entry's weight for a key, before rarity: a key's inverse
// document frequency is applied when it is looked up (idf), so that
// indexing one vendor again does not reweigh every other entry.
type posting struct {
	entry  int
	w      float64
	strong bool // from a keyword, the name, the title or the description
	named  bool // from a keyword, the name or the title
}

// offEntry is one catalog entry as the offline planner sees it.
type offEntry struct {
	e         registry.Entry
	params    []param
	required  map[string]bool
	chainedBy []int // capabilities (entry indexes) whose chain has this vendor tool
	retries   int
	validate  func(any) error
	route     bool // has both an origin and a destination parameter
	valued    bool // has a parameter a typed value of a clause may fill (param.vsig)

	// What the entry put in the index, to take it out again.
	keys, bigrams []string // its keys in post and bigrams
	vocab         []string // its stems in the typo vocabulary
	phrases       []string // its keyword phrases
	hanWords      []string // its Chinese keywords, in the dictionary
}

// offlineIndex is immutable once published: a catalog change makes the
// next index from it ([offlineIndex.update]), indexing again only the
// vendors whose tools changed and copying only what they touch (its maps
// are cowmap shards), so readers never lock.
type offlineIndex struct {
	version uint64
	fp      uint64 // the configured keywords' fingerprint: the sum of the vendors'
	// entries are by slot; a nil slot is free (its vendor shrank or left).
	// order has the live slots in catalog order (capabilities first, then
	// tools by catalog name), pos each slot's place in it: ties are broken
	// in catalog order.
	entries  []*offEntry
	order    []int
	pos      []int32
	free     []int
	post     *cowmap.Map[[]posting] // key → postings
	bigrams  *cowmap.Map[[]posting] // Chinese character pairs of Chinese texts
	dict     *hanDict
	hanRefs  *cowmap.Map[int]       // Chinese keywords in dict → entries that have them
	phrases  *cowmap.Map[int]       // stemmed keyword phrases to look up (besides lexPhrases) → entries
	maxWords int                    // longest phrase, in words
	vocab    *cowmap.Map[vocabWord] // English stems of the catalog's keywords, names and descriptions, for typos
	vendors  *cowmap.Map[*vendorPart]
	caps     []*registry.Capability // the capabilities indexed (a change of them rebuilds)
	capIdx   map[string]int         // "vendor/tool" → capability slot, for chains
}

// vocabWord is a stem of the typo vocabulary: how many entries have it,
// and which letters it has (a word within d edits of it differs in at most
// 2·d letters: most are ruled out without reckoning the distance).
type vocabWord struct {
	refs    int32
	letters uint32
}

// letterSet is the set of ASCII letters of s, one bit each ('z'+1… folded).
func letterSet(s string) uint32 {
	var m uint32
	for i := 0; i < len(s); i++ {
		m |= 1 << (s[i] % 32)
	}
	return m
}

// vendorPart is what the index holds of one vendor: the catalog's tools it
// indexed and their slots, and the fingerprint of their keywords.
type vendorPart struct {
	tools []*registry.Tool
	slots []int
	fp    uint64
}

// live is the number of entries indexed.
func (ix *offlineIndex) live() int { return len(ix.order) }

// idf is the weight of a key found in n of the catalog's entries.
func (ix *offlineIndex) idf(n int) float64 {
	return math.Log(1 + float64(ix.live())/float64(n))
}

// hasPhrase says whether p is a phrase of the lexicon or of a keyword.
func (ix *offlineIndex) hasPhrase(p string) bool { return lexPhrases[p] || ix.phrases.Has(p) }

// buildIndex indexes entries (capabilities first, then tools by catalog
// name, as [registry.Catalog.Entries] lists them); keywords returns the
// configured keywords of a vendor tool (may be nil). Every entry's text is
// read with the dictionary of every entry's Chinese keywords.
func buildIndex(version uint64, entries []registry.Entry, keywords func(registry.Entry) []string) *offlineIndex {
	ix := newIndex(version)
	fields := make([][]fieldText, len(entries))
	for i, e := range entries {
		oe, fs := ix.entryFields(e, keywords)
		ix.entries, fields[i] = append(ix.entries, oe), fs
		ix.order = append(ix.order, i)
		ix.pos = append(ix.pos, int32(i))
		ix.addWords(oe)
		if c := e.Capability; c != nil {
			ix.caps = append(ix.caps, c)
			for _, s := range c.Chain {
				ix.capIdx[s.Tool] = i
			}
			continue
		}
		part, _ := ix.vendors.Get(e.Tool.Vendor)
		if part == nil {
			part = &vendorPart{}
			ix.vendors.Set(e.Tool.Vendor, part)
		}
		part.tools, part.slots = append(part.tools, e.Tool), append(part.slots, i)
	}
	post, bigrams := map[string][]posting{}, map[string][]posting{}
	for i, oe := range ix.entries {
		m, bm := ix.postings(i, oe, fields[i])
		for k, p := range m {
			post[k] = append(post[k], p)
		}
		for k, p := range bm {
			bigrams[k] = append(bigrams[k], p)
		}
		ix.chain(oe)
	}
	for k, ps := range post {
		ix.post.Set(k, ps)
	}
	for k, ps := range bigrams {
		ix.bigrams.Set(k, ps)
	}
	ix.vendors.Range(func(v string, part *vendorPart) bool {
		part.fp = vendorKeywordsFP(part.tools, keywords)
		ix.fp += mixFP(v, part.fp)
		return true
	})
	return ix
}

// newIndex is an empty index with the built-in dictionary.
func newIndex(version uint64) *offlineIndex {
	ix := &offlineIndex{version: version, post: &cowmap.Map[[]posting]{}, bigrams: &cowmap.Map[[]posting]{},
		dict: &hanDict{words: make(map[string]hanWord, len(baseDict.words)), maxLen: baseDict.maxLen}, hanRefs: &cowmap.Map[int]{},
		phrases: &cowmap.Map[int]{}, maxWords: lexMaxWords(), vocab: &cowmap.Map[vocabWord]{}, vendors: &cowmap.Map[*vendorPart]{}, capIdx: map[string]int{}}
	for w, hw := range baseDict.words {
		ix.dict.words[w] = hw
	}
	return ix
}

// lexMaxWords is the longest phrase of the lexicon, in words.
func lexMaxWords() int {
	n := 1
	for p := range lexPhrases {
		n = max(n, strings.Count(p, " ")+1)
	}
	return n
}

// addWords counts oe's Chinese keywords (adding them to the dictionary)
// and keyword phrases in.
func (ix *offlineIndex) addWords(oe *offEntry) {
	for _, w := range oe.hanWords {
		n, _ := ix.hanRefs.Get(w)
		if n == 0 {
			ix.dict.add(w, hanWord{})
		}
		ix.hanRefs.Set(w, n+1)
	}
	for _, p := range oe.phrases {
		n, _ := ix.phrases.Get(p)
		ix.phrases.Set(p, n+1)
		ix.maxWords = max(ix.maxWords, strings.Count(p, " ")+1)
	}
}

// chain links a vendor tool to the capability whose chain has it.
func (ix *offlineIndex) chain(oe *offEntry) {
	if t := oe.e.Tool; t != nil {
		if c, ok := ix.capIdx[t.Vendor+"/"+t.Def.Name]; ok {
			oe.chainedBy = append(oe.chainedBy, c)
		}
	}
}

// fieldText is a text of an entry and the weight of its words.
type fieldText struct {
	text string
	w    float64
}

// entryFields reads an entry: its parameters and the texts it is found by
// (name, title, description, parameters, keywords). A keyword phrase or a
// Chinese keyword is marked to be indexed whole, and listed in the entry's
// phrases or hanWords for the index to add.
func (ix *offlineIndex) entryFields(e registry.Entry, keywords func(registry.Entry) []string) (*offEntry, []fieldText) {
	oe := &offEntry{e: e, required: map[string]bool{}}
	var fields []fieldText
	var kws []string
	var schema json.RawMessage
	if c := e.Capability; c != nil {
		schema = c.InputSchema
		kws = c.Keywords
		fields = append(fields, fieldText{strings.NewReplacer(".", " ", "_", " ").Replace(c.Name), wName}, fieldText{c.Description, wDesc})
		oe.validate = c.ValidateInput
	} else {
		t := e.Tool
		schema = t.Def.InputSchema
		fields = append(fields, fieldText{t.Def.Name, wName}, fieldText{t.Vendor, wParamName}, fieldText{t.Def.Title, wTitle}, fieldText{t.Def.Description, wDesc})
		oe.validate = t.ValidateInput
		oe.retries = retriesFor(t.Def.Annotations)
	}
	if keywords != nil && e.Tool != nil {
		kws = append(slices.Clone(kws), keywords(e)...)
	}
	oe.params, oe.required = schemaParams(schema)
	var from, to bool
	for _, p := range oe.params {
		from = from || p.role == roleOrigin
		to = to || p.role == roleDest
		fields = append(fields, fieldText{p.name, wParamName}, fieldText{p.desc, wParamDesc})
	}
	oe.route = from && to
	for _, p := range oe.params {
		oe.valued = oe.valued || p.vsig != ""
	}
	for _, kw := range kws {
		kw = strings.TrimSpace(kw)
		switch {
		case kw == "":
		case hanRuns(kw) != nil && isAllHan(kw):
			if !slices.Contains(oe.hanWords, kw) {
				oe.hanWords = append(oe.hanWords, kw)
			}
			fields = append(fields, fieldText{"\x00" + kw, wKeyword})
		case strings.Contains(englishKey(kw), " "):
			if p := englishKey(kw); !slices.Contains(oe.phrases, p) {
				oe.phrases = append(oe.phrases, p)
			}
			fields = append(fields, fieldText{"\x00" + englishKey(kw), wKeyword})
		default:
			fields = append(fields, fieldText{kw, wKeyword})
		}
	}
	return oe, fields
}

// postings indexes the fields of entry i: its words (and Chinese words)
// under their keys, and the character pairs of its Chinese texts. It
// records them in oe (keys, bigrams) and counts oe's stems into the typo
// vocabulary.
func (ix *offlineIndex) postings(i int, oe *offEntry, fields []fieldText) (map[string]posting, map[string]posting) {
	m := map[string]posting{}
	bm := map[string]posting{}
	inField := map[string]bool{} // keys already put from the current field
	put := func(into map[string]posting, k string, w float64, field float64) {
		old := into[k]
		into[k] = posting{entry: i, w: fieldSum(old.w, w, inField[k]), strong: old.strong || field >= wDesc, named: old.named || field >= wTitle}
		inField[k] = true
	}
	// A word the lexicon maps to a concept is also indexed as itself, so
	// the word as typed counts for more than its concept (literalKey).
	putLiteral := func(term string, w float64) {
		if k := key(term); k != term {
			lk := literalKey(term)
			m[lk] = posting{entry: i, w: fieldSum(m[lk].w, w, inField[lk])}
			inField[lk] = true
		}
	}
	putSoft := func(into map[string]posting, term string, w float64) {
		lk := literalKey(term)
		into[lk] = posting{entry: i, w: fieldSum(into[lk].w, w, inField[lk])}
		inField[lk] = true
	}
	putPairs := func(into map[string]posting, run string, field float64) {
		rs := []rune(run)
		for j := 0; j+1 < len(rs); j++ {
			put(into, string(rs[j:j+2]), wBigram*field/wDesc, field)
		}
	}
	for _, f := range fields {
		clear(inField)
		if rest, ok := strings.CutPrefix(f.text, "\x00"); ok { // a keyword phrase or Chinese keyword, whole
			put(m, key(rest), f.w, f.w)
			putLiteral(rest, f.w)
			if isAllHan(rest) { // and its character pairs: 取消订单 is found by "取消酒店订单"
				putPairs(bm, rest, f.w)
			}
			continue
		}
		for _, w := range splitWords(f.text) {
			if s := stem(w); softStop[s] && f.w >= wDesc {
				putSoft(m, s, f.w)
			}
			if s := stem(w); len(w) > 1 && !plannerStop[w] && !plannerStop[s] {
				put(m, key(s), f.w, f.w)
				putLiteral(s, f.w)
				if f.w >= wDesc && len(s) >= 4 && !slices.Contains(oe.vocab, s) {
					oe.vocab = append(oe.vocab, s)
				}
			}
		}
		for _, run := range hanRuns(f.text) {
			for _, t := range tokenize(run, ix.dict) {
				if t.kind == tHan && !t.stop {
					put(m, key(t.norm), f.w, f.w)
					putLiteral(t.norm, f.w)
				}
				if t.kind == tHan && t.stop && softStop[t.norm] && f.w >= wDesc {
					putSoft(m, t.norm, f.w)
				}
			}
			if f.w >= wDesc || f.w == wTitle {
				putPairs(bm, run, f.w)
			}
		}
	}
	oe.keys, oe.bigrams = oe.keys[:0], oe.bigrams[:0]
	for k := range m {
		oe.keys = append(oe.keys, k)
	}
	for k := range bm {
		oe.bigrams = append(oe.bigrams, k)
	}
	for _, s := range oe.vocab {
		n, _ := ix.vocab.Get(s)
		ix.vocab.Set(s, vocabWord{refs: n.refs + 1, letters: letterSet(s)})
	}
	return m, bm
}

func isAllHan(s string) bool {
	for _, r := range s {
		if !isHan(r) {
			return false
		}
	}
	return true
}

// retriesFor retries a read-only or idempotent tool once.
func retriesFor(annotations json.RawMessage) int {
	var a struct {
		ReadOnly   bool `json:"readOnlyHint"`
		Idempotent bool `json:"idempotentHint"`
	}
	if json.Unmarshal(annotations, &a) == nil && (a.ReadOnly || a.Idempotent) {
		return 1
	}
	return 0
}

// Parameter roles: how the offline planner fills a parameter.
type paramRole uint8

const (
	roleOther  paramRole = iota
	roleOrigin           // where a route starts
	roleDest             // where it ends
	rolePlace            // a city, location, place to look near
	roleText             // free text: a prompt, a message, a topic
	roleNumber
	roleBool
	roleEnum
)

type param struct {
	name, desc, typ string
	enum            []any
	def             any
	hasDef          bool
	role            paramRole
	format          string          // the schema's format ("uri", "email", …)
	words           map[string]bool // stems of the name and description, for number hints
	pattern         *regexp.Regexp  // the schema's pattern, when Go reads it
	group           string          // parameters filled together (groupCurrency, or one enum read from its description)
	syn             map[string]any  // an enum's values by their synonyms (enumSynonyms)
	ticker          bool            // takes a stock's ticker symbol (tickerParam)
	// vsig names what decides whether a clause has a typed value for the
	// parameter (clause.hasValueFor): parameters of one vsig have one
	// answer for a clause. "" when no value can fill it.
	vsig string
}

// groupCurrency groups parameters that take currency codes.
const groupCurrency = "currency"

var (
	originNames = map[string]bool{"from": true, "origin": true, "start": true, "source": true, "departure": true, "src": true}
	destNames   = map[string]bool{"to": true, "destination": true, "dest": true, "end": true, "target": true, "dst": true}
	placeWords  = []string{"city", "location", "place", "near", "address", "region", "area", "where", "town", "locality", "poi", "country", "地点", "城市", "位置"}
	textNames   = map[string]bool{"prompt": true, "message": true, "text": true, "query": true, "topic": true, "content": true, "question": true,
		"input": true, "q": true, "instruction": true, "instructions": true, "body": true, "sentence": true, "msg": true, "keyword": true,
		"keywords": true, "term": true, "subject": true, "description": true, "utterance": true, "title": true, "summary": true}
)

// schemaParams reads the top-level properties of an input schema, in the
// order they are written, and its required list.
func schemaParams(raw json.RawMessage) ([]param, map[string]bool) {
	req := map[string]bool{}
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(raw, &s)
	for _, r := range s.Required {
		req[r] = true
	}
	var out []param
	for _, kv := range orderedProperties(raw) {
		var p struct {
			Type        any             `json:"type"`
			Description string          `json:"description"`
			Title       string          `json:"title"`
			Enum        []any           `json:"enum"`
			Default     json.RawMessage `json:"default"`
			Format      string          `json:"format"`
			Pattern     string          `json:"pattern"`
		}
		if json.Unmarshal(kv.v, &p) != nil {
			continue
		}
		pr := param{name: kv.k, desc: strings.TrimSpace(p.Title + " " + p.Description), enum: p.Enum, words: map[string]bool{}}
		pr.ticker = tickerParam(pr.name, pr.desc)
		switch t := p.Type.(type) {
		case string:
			pr.typ = t
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok && s != "null" {
					pr.typ = s
					break
				}
			}
		}
		if len(p.Default) > 0 {
			pr.hasDef = json.Unmarshal(p.Default, &pr.def) == nil
		}
		for _, w := range splitWords(kv.k + " " + pr.desc) {
			if !plannerStop[w] {
				pr.words[stem(w)] = true
			}
		}
		pr.format = p.Format
		if p.Pattern != "" && len(p.Pattern) <= 1000 {
			pr.pattern, _ = regexp.Compile(p.Pattern)
		}
		pr.group, pr.syn = paramGroup(pr)
		pr.role = roleOf(pr, p.Format)
		out = append(out, pr)
	}
	shareSynonyms(out)
	for i := range out {
		out[i].vsig = valueSig(out[i])
	}
	return out, req
}

// valueSig is a parameter's vsig, read as clause.hasValueFor reads it.
func valueSig(p param) string {
	switch {
	case p.group == groupCurrency:
		return "c"
	case p.syn != nil:
		ks := make([]string, 0, len(p.syn))
		for k := range p.syn {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		var b strings.Builder
		b.WriteString("s")
		for _, k := range ks {
			fmt.Fprintf(&b, "\x00%s\x01%#v", k, p.syn[k])
		}
		return b.String()
	case p.pattern != nil && p.ticker:
		return "t" + p.pattern.String() // a company's name is a value too ("microsoft share price")
	case p.pattern != nil:
		return "p" + p.pattern.String()
	}
	return ""
}

// shareSynonyms gives parameters with the same enum the synonyms one of
// them has ("to_unit: same codes" reads from_unit's description).
func shareSynonyms(ps []param) {
	for i := range ps {
		if ps[i].group == "" {
			continue
		}
		for j := range ps {
			if j != i && len(ps[j].enum) > 0 && fmt.Sprint(ps[j].enum) == fmt.Sprint(ps[i].enum) {
				if ps[j].syn == nil {
					ps[j].syn = map[string]any{}
				}
				for k, v := range ps[i].syn {
					ps[j].syn[k] = v
				}
				ps[j].group = ps[i].group
			}
		}
	}
}

func roleOf(p param, format string) paramRole {
	name := strings.ToLower(p.name)
	words := splitWords(p.name)
	last := ""
	if len(words) > 0 {
		last = words[len(words)-1]
	}
	first := ""
	if len(words) > 0 {
		first = words[0]
	}
	desc := strings.ToLower(p.desc)
	switch {
	case p.typ == "number" || p.typ == "integer":
		return roleNumber
	case p.typ == "boolean":
		return roleBool
	case format != "" || p.pattern != nil || p.group == groupCurrency:
		return roleOther // a link, an address, a date, a code: filled from a value of that format
	case originNames[name] || originNames[first] && len(words) > 1 && words[1] != "date":
		return roleOrigin
	case destNames[name] || destNames[first] && len(words) > 1 && words[1] != "date":
		return roleDest
	}
	for _, w := range placeWords {
		if strings.Contains(name, w) || strings.Contains(desc, w+" name") || strings.HasPrefix(desc, w) || strings.Contains(desc, " "+w) && strings.Contains(desc, "name") {
			return rolePlace
		}
	}
	if len(p.enum) > 0 {
		return roleEnum
	}
	if (p.typ == "string" || p.typ == "") && format == "" && (textNames[name] || textNames[last]) {
		return roleText
	}
	return roleOther
}

// paramGroup puts a parameter that takes currency codes in groupCurrency,
// and one whose enum values its description names ("en English") in the
// group of that enum.
func paramGroup(p param) (string, map[string]any) {
	if p.typ == "string" || p.typ == "" {
		codes := p.pattern != nil && p.pattern.MatchString("USD") && p.pattern.MatchString("EUR") && !p.pattern.MatchString("PARIS") && !p.pattern.MatchString("usd")
		named := strings.Contains(strings.ToLower(p.name+" "+p.desc), "currenc")
		if codes || named && len(p.enum) == 0 && p.pattern == nil {
			return groupCurrency, nil
		}
	}
	if len(p.enum) == 0 {
		return "", nil
	}
	syn := enumSynonyms(p.enum, p.desc)
	if len(syn) <= len(p.enum) {
		return "", syn // the values alone: read by name (and in Chinese), not as a group
	}
	return "enum:" + fmt.Sprint(p.enum), syn
}

type kv struct {
	k string
	v json.RawMessage
}

// orderedProperties returns a schema's "properties" in document order.
func orderedProperties(raw json.RawMessage) []kv {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		if t != "properties" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil
		}
		var out []kv
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return out
			}
			name, _ := t.(string)
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return out
			}
			out = append(out, kv{name, v})
		}
		return out
	}
	return nil
}

// vendorKeywordsFP hashes the configured keywords of a vendor's tools, so
// a config change that only touches keywords indexes the vendor again.
func vendorKeywordsFP(tools []*registry.Tool, keywords func(registry.Entry) []string) uint64 {
	if keywords == nil {
		return 0
	}
	h := fnv.New64a()
	for _, t := range tools {
		for _, k := range keywords(registry.Entry{Name: t.Catalog, Tool: t}) {
			h.Write([]byte(k))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return h.Sum64()
}

// mixFP is a vendor's share of the index's keywords fingerprint (which
// sums the vendors' shares, so one vendor's is taken out and put in).
func mixFP(vendor string, fp uint64) uint64 {
	if fp == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(vendor))
	return h.Sum64() ^ fp
}

// match is one entry's score for a clause.
type match struct {
	entry  int
	score  float64
	strong bool
	named  bool            // a keyword, the name or the title was hit
	desc   int             // description (or parameter) hits
	keys   map[string]bool // the clause keys that hit it
}

// fits says whether a match is evidence enough to use the entry: a word of
// its keywords, name or title, or two of its description ("what time is
// it" does not pick "tide times" on one shared word).
func (m match) fits() bool {
	return m.score >= minScore && m.strong && (m.named || m.desc >= 2)
}

// queryKeys returns the lookup keys of a clause's tokens, each with the
// index of the first token that produced it.
func (ix *offlineIndex) queryKeys(toks []token) map[string]int {
	keys := map[string]int{}
	add := func(k string, i int) {
		if _, ok := keys[k]; !ok {
			keys[k] = i
		}
	}
	for i, t := range toks {
		switch t.kind {
		case tWord:
			if !t.stop && len(t.norm) > 1 {
				k := key(t.norm)
				if known := ix.post.Has(k); !known && (i == 0 || !isCapitalised(t.text)) && !calendarWords[t.norm] && !t.place {
					if fk := ix.typo(t.norm); fk != "" {
						k = fk
					}
				}
				add(k, i)
				if !ix.post.Has(k) {
					for _, part := range splitParts(t.text) { // "PM2.5" as the catalog reads it: "pm2"
						add(key(part), i)
					}
				}
			}
			// Phrases start at any word, stop words included ("how do i get").
			words := []string{t.norm}
			for j := i + 1; j < len(toks) && len(words) < ix.maxWords && toks[j].kind == tWord; j++ {
				if len(words) == 1 && objectPronouns[toks[j].norm] && j+1 < len(toks) {
					continue // "check me in", "look it up": the phrase is "check in"
				}
				words = append(words, toks[j].norm)
				if p := strings.Join(words, " "); ix.hasPhrase(p) {
					add(key(p), i)
				}
			}
		case tHan:
			if !t.stop {
				add(key(t.norm), i)
			}
		}
	}
	return keys
}

// typo returns the key of the catalog word w is a typo of ("weahter",
// "resturant"): one edit away for words of five letters, two for longer
// ones (a swap of two letters is one edit; two in a word of six or seven
// letters keep its first and last; every typo keeps the first letter or
// swaps the first two); "" when none is, or when two are equally near.
func (ix *offlineIndex) typo(w string) string {
	if len(w) < 5 || len(w) >= maxTypoLen || !isASCII(w) || realWords[w] || placeHeadStems[w] {
		return "" // (a place's head noun is a word: a "temple" is no "temp")
	}
	limit := 1
	if len(w) >= 6 {
		limit = 2
	}
	best, bestD, tie := "", limit+1, false
	try := func(v, k string) {
		if d := len(v) - len(w); d > limit || -d > limit || k == best {
			return
		}
		if v[0] != w[0] && (len(v) != len(w) || v[1] != w[0] || v[0] != w[1]) {
			return // a typo keeps its first letter, or swaps the first two: "lights" is no "flights"
		}
		if rest, ok := strings.CutPrefix(w, v); ok && (rest == "r" && strings.HasSuffix(v, "e") || rest == "er" && !strings.HasSuffix(v, "r")) {
			return // a word made of another is no typo of it: a "timer" is no "time"
		}
		lim := limit
		if len(w) < 8 && (v[0] != w[0] || v[len(v)-1] != w[len(w)-1]) {
			lim = 1 // two edits in a short word keep its first and last letters ("wheater")
		}
		if d := editDistance(w, v, lim); d <= lim && d < bestD {
			best, bestD, tie = k, d, false
		} else if d <= lim && d == bestD && k != best {
			tie = true
		}
	}
	letters := letterSet(w)
	ix.vocab.Range(func(v string, vw vocabWord) bool {
		if d := len(v) - len(w); d <= limit && -d <= limit && bits.OnesCount32(letters^vw.letters) <= 2*limit {
			try(v, key(v))
		}
		return true
	})
	for v, k := range conceptVocab {
		try(v, k)
	}
	if tie || bestD > limit {
		return ""
	}
	return best
}

// realWords are words an assistant hears often that are one edit from a
// word of the catalog or the lexicon and mean something else: a "timer"
// is no "times", "lamps" no "maps".
var realWords = map[string]bool{"timer": true, "timers": true, "alarm": true, "alarms": true, "lamps": true, "music": true, "movie": true, "movies": true,
	"carry": true, "hurry": true, "worry": true, "sorry": true, "marry": true, "furry": true, "whether": true}

// placeHeadStems are placeHeads as words are read (stem and as typed).
var placeHeadStems = func() map[string]bool {
	m := map[string]bool{}
	for w := range placeHeads {
		m[w], m[stem(w)] = true, true
	}
	return m
}()

// maxTypoLen bounds the words typo reads (longer ones are not words).
const maxTypoLen = 32

// editDistance is the optimal string alignment distance of a and b
// (insertions, deletions, substitutions and swaps of neighbours), or
// limit+1 when it is more than limit.
func editDistance(a, b string, limit int) int {
	if len(b) >= maxTypoLen {
		return limit + 1
	}
	var rows [3][maxTypoLen + 1]int
	prev2, prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1], rows[2][:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			low = min(low, cur[j])
		}
		if low > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// rank scores every entry against a clause's tokens, best first, the
// words of the tokens in places (the places the clause names) weighing
// placeShare of the others. Only the entries that share a key (or a soft
// stop word) with the clause are visited, and matches that were hit by the
// same keys share one (read-only) keys map.
func (ix *offlineIndex) rank(toks []token, places map[int]bool) []match {
	keys := ix.queryKeys(toks)
	hits := 0 // postings to visit, to size the tables once
	for k := range keys {
		ps, _ := ix.post.Get(k)
		hits += len(ps)
	}
	soft := ix.softLists(toks, places)
	for _, ps := range soft {
		hits += len(ps)
	}
	hits = min(hits, ix.live())
	r := &ranking{names: make([]string, 0, len(keys)+1), out: make([]match, 0, hits), masks: make([]uint64, 0, hits), at: make(map[int]int32, hits)}
	for k, ti := range keys {
		ps, _ := ix.post.Get(k)
		if len(ps) == 0 {
			continue
		}
		r.names = append(r.names, k)
		share := 1.0
		if places[ti] || toks[ti].dish() {
			share = placeShare
		}
		idf := ix.idf(len(ps))
		for _, p := range ps {
			r.hit(len(r.names)-1, p, share, idf)
		}
	}
	ix.literalHits(toks, places, r)
	ix.softHits(soft, r)
	if ix.bigrams.Len() > 0 {
		seen := map[string]bool{}
		bit := -1
		for _, t := range toks {
			if t.kind != tHan && t.kind != tHanRaw || t.stop {
				continue
			}
			rs := []rune(t.text)
			word := wordBit(t, r.names)
			for j := 0; j+1 < len(rs); j++ {
				bg := string(rs[j : j+2])
				if seen[bg] {
					continue
				}
				seen[bg] = true
				ps, _ := ix.bigrams.Get(bg)
				if len(ps) == 0 {
					continue
				}
				if bit < 0 {
					r.names = append(r.names, "") // character pairs of Chinese text
					bit = len(r.names) - 1
				}
				share, idf := pairShare(t, rs), ix.idf(len(ps))
				for _, p := range ps {
					if !r.has(p.entry, word) {
						r.hit(bit, p, share, idf)
					}
				}
			}
		}
	}
	out := r.matches()
	ix.sortMatches(out)
	return out
}

// ranking is the matches of one rank, as they are found.
type ranking struct {
	names []string      // bit i of a match's mask: names[i] hit it
	out   []match       // the matches, in the order they were found
	masks []uint64      // the keys (bits) that hit each match of out
	at    map[int]int32 // entry → its match in out
}

// match returns the index in out of entry's match, making it.
func (r *ranking) match(entry int) int32 {
	j, ok := r.at[entry]
	if !ok {
		j = int32(len(r.out))
		r.at[entry] = j
		r.out = append(r.out, match{entry: entry})
		r.masks = append(r.masks, 0)
	}
	return j
}

// hit adds posting p of the key names[bit] (whose idf is idf), weighing
// share, to its entry's match.
func (r *ranking) hit(bit int, p posting, share, idf float64) {
	j := r.match(p.entry)
	m := &r.out[j]
	m.score += share * (p.w * idf)
	m.strong = m.strong || p.strong
	m.named = m.named || p.named
	if p.strong && !p.named {
		m.desc++
	}
	if bit < 64 {
		r.masks[j] |= 1 << bit
	} else {
		if m.keys == nil {
			m.keys = map[string]bool{}
		}
		m.keys[r.names[bit]] = true
	}
}

// has says whether entry's match was hit by the key names[bit] (never for
// a bit < 0).
func (r *ranking) has(entry, bit int) bool {
	j, ok := r.at[entry]
	switch {
	case !ok || bit < 0:
		return false
	case bit < 64:
		return r.masks[j]&(1<<bit) != 0
	}
	return r.out[j].keys[r.names[bit]]
}

// matches gives each match its keys, those with the same keys sharing one
// read-only map.
func (r *ranking) matches() []match {
	out, names := r.out, r.names
	shared := map[uint64]map[string]bool{}
	for j := range out {
		mask := r.masks[j]
		if out[j].keys != nil { // more keys than a mask holds
			for b := 0; b < 64; b++ {
				if mask&(1<<b) != 0 {
					out[j].keys[names[b]] = true
				}
			}
			continue
		}
		km, ok := shared[mask]
		if !ok {
			km = make(map[string]bool, bits.OnesCount64(mask))
			for b := 0; b < 64; b++ {
				if mask&(1<<b) != 0 {
					km[names[b]] = true
				}
			}
			shared[mask] = km
		}
		out[j].keys = km
	}
	return out
}

// sortMatches orders matches best first, ties in catalog order.
func (ix *offlineIndex) sortMatches(out []match) {
	slices.SortFunc(out, func(a, b match) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return ix.cmpEntries(a.entry, b.entry)
	})
}

// cmpEntries orders two slots in catalog order.
func (ix *offlineIndex) cmpEntries(a, b int) int { return int(ix.pos[a]) - int(ix.pos[b]) }

func runeLen(s string) int { return utf8.RuneCountInString(s) }
