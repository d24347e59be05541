package poison

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolhub/toolhub/registry"
)

// The rules a [Finding] names.
const (
	RuleInstruction   = "instruction"
	RuleTag           = "tag"
	RuleToolReference = "tool_reference"
	RuleSecret        = "secret"
	RuleInvisible     = "invisible"
	RuleConfusable    = "confusable"
)

// Rules lists every rule, in the order findings of one offset are sorted.
var Rules = []string{RuleInstruction, RuleTag, RuleToolReference, RuleSecret, RuleInvisible, RuleConfusable}

// Finding is one span of a field that a rule flags.
type Finding struct {
	Tool   string `json:"tool,omitempty"` // the tool's own name; empty from ScanText
	Field  string `json:"field"`          // "description", "inputSchema/properties/path/description", …
	Rule   string `json:"rule"`
	Span   string `json:"span"`   // the offending text, at most MaxSpan bytes of it
	Offset int    `json:"offset"` // byte offset of Span in the field's text
}

// MaxSpan bounds a finding's Span in bytes (cut at a character boundary).
const MaxSpan = 160

// MaxFindings bounds the findings of one field: a text that carries more
// is poisoned enough.
const MaxFindings = 32

// maxDepth bounds the schema walk.
const maxDepth = 64

type rule struct {
	name string
	re   *regexp.Regexp
	// anchors are words every match contains (ASCII lowercase; `\b` in
	// front: a whole word): the pattern runs only on windows around them,
	// which keeps the scan fast on a long text that has none.
	anchors []string
	// reject, when set, drops a match (the text and the match's bounds).
	reject func(text string, start, end int) bool
}

func re(s string) *regexp.Regexp { return regexp.MustCompile(`(?i)` + s) }

// Phrases are kept in one place per rule; (?i) everywhere. \b in RE2 is
// ASCII-only, which is what the English phrases want; Chinese phrases do
// not use it.
var rules = []rule{
	// Instructions aimed at the model.
	{name: RuleInstruction, re: re(`\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}?\b(?:previous|prior|above|earlier|preceding|all|any|other|safety|system)\b[^.!?\n]{0,20}?\b(?:instructions?|rules?|prompts?|directions?|guidelines?|messages?)\b`), anchors: []string{"ignore", "disregard", "forget", "override", "bypass"}},
	{name: RuleInstruction, re: re(`\b(?:previous|prior|earlier|above)\s+instructions?\b`), anchors: []string{"instruction"}},
	{name: RuleInstruction, re: re(`\bsystem\s+prompt\b|\bdeveloper\s+mode\b|\bnew\s+instructions?\s*:|\bfrom\s+now\s+on\b`), anchors: []string{"system", "developer", "instruction", `\bnow`}},
	{name: RuleInstruction, re: re(`\byou\s+(?:must|should|have\s+to|need\s+to|are\s+required\s+to|will\s+now)\b(?:\s+(?:now|also|first|always|never|not))*(?:\s+\w+)?`), reject: youMustBe, anchors: []string{`\byou`}},
	{name: RuleInstruction, re: re(`\byou\s+are\s+(?:now\s+)?(?:an?\s+)?(?:ai|assistant|llm|unrestricted|in\s+\w+\s+mode)\b`), anchors: []string{`\byou`}},
	{name: RuleInstruction, re: re(`\b(?:the|an?|this)\s+(?:ai\s+)?(?:assistant|model|llm|agent|ai)\s+(?:must|should|shall|needs?\s+to|has\s+to|is\s+required\s+to|will\s+always)\b`), anchors: []string{"assistant", "model", "llm", "agent", `\bai`}},
	{name: RuleInstruction, re: re(`\bnote\s+to\s+(?:the\s+)?(?:ai|assistant|model|llm|agent)\b`), anchors: []string{`\bnote`}},
	{name: RuleInstruction, re: re(`\b(?:always|first|never)\s+(?:call|invoke)\b|\b(?:always|never)\s+use\s+(?:this|any|the\s+\w+)(?:\s+other)?(?:\s+\w+)?\s+tools?\b`), anchors: []string{`\bcall`, "invoke", "tool"}},
	{name: RuleInstruction, re: re(`\b(?:call|use|invoke)\s+(?:this\s+tool|it|me)\s+(?:first|before|instead)\b`), anchors: []string{"first", "before", "instead"}},
	{name: RuleInstruction, re: re(`\bbefore\s+(?:using|calling|invoking|running|you\s+use|you\s+call)\b(?:\s+(?:this|the|that)\s+tool|\s+it)?\s*,?\s*(?:you\s+(?:must|should)\s+|please\s+|first\s+|always\s+)?(?:read|call|fetch|open|send|include|run|invoke|execute|load|cat|get|upload|pass)\b`), anchors: []string{"before"}},
	{name: RuleInstruction, re: re(`\bfirst\s+need\s+to\s+(?:read|call|fetch|open|send)\b`), anchors: []string{`\bneed`}},
	{name: RuleInstruction, re: re(`\b(?:do\s+not|don't|dont|never)\s+(?:tell|inform|mention|reveal|disclose|notify|let|alert|show)\b[^.!?\n]{0,40}?\b(?:user|users|human|them|anyone)\b|\b(?:do\s+not|don't|never)\s+(?:mention|reveal|disclose)\s+(?:this|that|these|it)\b`), anchors: []string{`\bnot`, "don't", `\bdont`, "never"}},
	{name: RuleInstruction, re: re(`\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+(?:the\s+)?(?:user|human)\b|\b(?:the\s+)?user\s+(?:must|should)\s+not\s+(?:be\s+told|know|be\s+informed|see|notice)\b`), anchors: []string{"without", `\buser`}},
	{name: RuleInstruction, re: re(`\bsilently\s+(?:include|send|add|pass|forward|call|append|copy|upload|attach|change|replace)\b|\bmake\s+sure\s+to\s+(?:change|replace|include|send|add)\b`), anchors: []string{"silently", `\bsure`}},
	{name: RuleInstruction, re: regexp.MustCompile(`(?:请)?忽略(?:掉)?(?:之前|以上|先前|上面|前面|此前|所有|全部|其他|任何)[^。！？\n]{0,12}?(?:指令|指示|规则|提示|要求|命令|设定)`), anchors: []string{"忽略"}},
	{name: RuleInstruction, re: regexp.MustCompile(`(?:之前|以上|先前|上面)的(?:所有)?(?:指令|指示|规则)`), anchors: []string{"指令", "指示", "规则"}},
	{name: RuleInstruction, re: regexp.MustCompile(`你(?:必须|应该|需要|一定要|务必)`), reject: niMustBe, anchors: []string{"你"}},
	{name: RuleInstruction, re: regexp.MustCompile(`(?:不要|别|切勿|不得|不可)(?:告诉|告知|通知|提醒|让)(?:用户|使用者|对方)|(?:不要|别)让用户(?:知道|发现|看到)`), anchors: []string{"用户", "使用者", "对方"}},
	{name: RuleInstruction, re: regexp.MustCompile(`在(?:使用|调用|运行)(?:此|这个|本|该)?(?:工具)?(?:之前|以前|前)[，,]?\s*(?:请|务必|必须)?\s*(?:先)?(?:读取|调用|执行|发送|打开|获取|上传|运行)`), anchors: []string{"前"}},
	{name: RuleInstruction, re: regexp.MustCompile(`系统提示|系统指令|(?:你现在是|从现在开始)`), anchors: []string{"系统", "你现在", "从现在"}},
	{name: RuleInstruction, re: regexp.MustCompile(`(?:总是|始终|务必)(?:先)?(?:调用|使用)(?:此|这个|本)工具`), anchors: []string{"工具"}},

	// Markup that frames text as instructions.
	{name: RuleTag, re: re(`<\s*/?\s*(?:important|system|instructions?|admin|secret|hidden|assistant|prompt|sys|override|critical|note-to-ai|ai|llm|im_start|im_end)\b[^<>]{0,40}>|<\|im_(?:start|end)\|>|<!--|\[\s*/?\s*(?:system|inst|important|admin|assistant)\s*\]|\bsystem\s*:|\bimportant\s*:|重要提示[:：]|<\s*/?\s*(?:重要|系统)\s*>`), anchors: []string{"important", "sys", "inst", "admin", "secret", "hidden", "assistant", "prompt", "override", "critical", `\bai`, "llm", "im_", "<!--", "重要", "系统"}},

	// Other tools and vendors.
	{name: RuleToolReference, re: re(`\binstead\s+of\s+(?:the\s+|using\s+(?:the\s+)?)?[\w.-]+(?:\s+[\w.-]+)?\s+tools?\b`), anchors: []string{"tool"}},
	{name: RuleToolReference, re: re(`\b(?:do\s+not|don't|never)\s+use\s+(?:the\s+|any\s+)?(?:other\s+)?[\w.-]+(?:\s+[\w.-]+)?\s+tools?\b`), anchors: []string{"tool"}},
	{name: RuleToolReference, re: re(`\breplaces?\s+the\s+[\w.-]+(?:\s+[\w.-]+)?\s+tools?\b|\btools?\s+from\s+other\s+(?:servers|vendors|providers)\b`), anchors: []string{"tool"}},
	{name: RuleToolReference, re: re(`\bcall\s+(?:the\s+)?tool\s+[\w.-]+\s+(?:first|before|after)\b`), anchors: []string{"tool"}},
	{name: RuleToolReference, re: re(`\bwhen\s+(?:the\s+)?\(?[\w.-]+\)?\s+(?:[\w.-]+\s+)?(?:tool\s+)?is\s+(?:invoked|called|used)\b|\bthe\s+[\w.-]+\s+tool\s+(?:must|should|will\s+now)\b`), anchors: []string{"invoked", "called", "used", "tool"}},
	{name: RuleToolReference, re: re(`\b[a-z][a-z0-9-]*__[a-z0-9][a-z0-9_.-]*`), reject: dunderIsNotTool, anchors: []string{"__"}},
	{name: RuleToolReference, re: regexp.MustCompile(`(?:先|首先)调用\s*[\w.-]+\s*(?:工具)?|不要使用[^。，\n]{0,12}工具|代替[^。，\n]{0,12}工具`), anchors: []string{"调用", "使用", "代替"}},

	// Secrets and credential files.
	{name: RuleSecret, re: re(`~/\.(?:ssh|aws|gnupg|kube|docker|config|cursor|claude)\b[\w./-]*|\.ssh/[\w.-]*|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?:\.pub)?|(?:^|[\s'"` + "`" + `(/])\.env\b(?:\.\w+)?|/etc/(?:passwd|shadow|sudoers|hosts\.allow)\b|\bmcp\.json\b|\bclaude_desktop_config\.json\b|\bcredentials\.json\b|\.aws/credentials\b|\.netrc\b|\.npmrc\b|\.pypirc\b|\.git-credentials\b|\.pgpass\b|\bwallet\.dat\b|\.kube/config\b|\.docker/config\.json\b`), anchors: []string{"~/", ".ssh", "id_", ".env", "/etc/", "mcp.json", "claude_desktop", "credentials", ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass", "wallet.dat", ".kube", ".docker"}},
	{name: RuleSecret, re: re(`\b(?:send|pass|include|put|append|attach|share|forward|output|reveal|print|exfiltrate|upload|leak|copy|post|paste|insert|embed|add|give|read|bcc)\b[^.!?\n]{0,60}?(?:api[\s_-]?keys?|\btokens?\b|passwords?|passphrases?|\bcredentials\b|secret[\s_-]?keys?|private[\s_-]?keys?|access[\s_-]?keys?|session\s+cookies?|seed\s+phrases?|mnemonic|[a-z0-9]_(?:token|secret|password|key)\b)`), anchors: []string{"api", "token", "passw", "passphrase", "credential", "secret", "private", "access", "cookie", "seed", "mnemonic", "_key"}},
	{name: RuleSecret, re: regexp.MustCompile(`(?:把|将|发送|上传|放进|放入|放在|附上|附加|包含|读取|输出)[^。！？\n]{0,20}?(?:私钥|密码|口令|令牌|密钥|凭证|凭据|(?i:api\s*key|token))`), anchors: []string{"私钥", "密码", "口令", "令牌", "密钥", "凭证", "凭据", "api", "token"}},

	// Invisible and confusable characters are found by scanUnicode.
}

func init() {
	for i := range rules {
		if rules[i].name == RuleTag {
			rules[i].reject = importantMidSentence
		}
		if rules[i].name == RuleSecret && rules[i].reject == nil {
			rules[i].reject = envExample
		}
	}
}

// importantMidSentence drops an "important:" that does not open the
// text, a line or a sentence ("the important: field").
func importantMidSentence(text string, start, end int) bool {
	m := strings.ToLower(text[start:end])
	if !strings.HasPrefix(m, "important") && !strings.HasPrefix(m, "system") {
		return false
	}
	before := strings.TrimRight(text[:start], " \t")
	if before == "" {
		return false
	}
	if r, _ := utf8.DecodeLastRuneInString(before); strings.ContainsRune("\n.!?>]:(。！？：", r) {
		return false
	}
	return strings.HasPrefix(m, "important")
}

// envExample drops .env.example, .env.sample and .env.template: files that
// list variable names, not their values.
func envExample(text string, start, end int) bool {
	m := strings.ToLower(text[start:end])
	if strings.HasPrefix(m, ".env") && start > 0 && !strings.ContainsRune(" \t\n\r'\"`(/", rune(text[start-1])) {
		return true // not after a separator: "process.env"
	}
	for _, s := range []string{".env.example", ".env.sample", ".env.template", ".env.dist"} {
		if strings.HasSuffix(m, s) {
			return true
		}
	}
	return false
}

// youMustBe drops "you must be signed in", "you must have write access":
// a condition on the caller, not an instruction to the model.
// "When you need to compare files" is when to use the tool, not an order.
func youMustBe(text string, start, end int) bool {
	before := strings.ToLower(text[max(start-5, 0):start])
	if strings.HasSuffix(before, "when ") || strings.HasSuffix(before, "if ") {
		return true
	}
	m := strings.ToLower(text[start:end])
	for _, w := range []string{" be", " have", " own", " hold"} {
		if strings.HasSuffix(m, w) {
			return true
		}
	}
	return false
}

func niMustBe(text string, start, end int) bool {
	rest := text[end:]
	for _, w := range []string{"拥有", "具有", "是", "有"} {
		if strings.HasPrefix(rest, w) {
			return true
		}
	}
	return false
}

// dunderIsNotTool drops a vendor__tool match that is part of a longer
// identifier (__init__, a_b__c) or a path.
func dunderIsNotTool(text string, start, end int) bool {
	if start > 0 {
		c := text[start-1]
		if c == '_' || c == '/' || c == '.' || c == '$' || isAlnum(c) {
			return true
		}
	}
	m := text[start:end]
	return strings.HasSuffix(m, "__") || strings.HasSuffix(m, "_")
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ScanText scans one field's text. Findings are sorted by offset, then
// rule; their Tool is empty.
//
// A text longer than windowFrom bytes is scanned in windows around each
// rule's anchors (at most maxWindowBytes per rule); the character rules
// read all of it.
func ScanText(field, text string) []Finding {
	var out []Finding
	add := func(rule string, start, end int) bool {
		if len(out) >= MaxFindings {
			return false
		}
		out = append(out, Finding{Field: field, Rule: rule, Span: cut(text[start:end]), Offset: start})
		return true
	}
	var a *anchorIndex
	if len(text) > windowFrom {
		a = newAnchorIndex(text)
	}
	for _, r := range rules {
		wins := []window{{0, len(text)}}
		if a != nil {
			wins = a.windows(r.anchors)
		}
		found := 0
	rule:
		for _, w := range wins {
			for _, m := range r.re.FindAllStringIndex(text[w.start:w.end], MaxFindings-found) {
				start, end := w.start+m[0], w.start+m[1]
				// A match may start at a separator the pattern needs (".env"
				// after a space); the span starts at the first non-space.
				for start < end && (text[start] == ' ' || text[start] == '\t' || text[start] == '\n' || text[start] == '\r') {
					start++
				}
				for end > start && (text[end-1] == '.' || text[end-1] == ',') {
					end-- // "read ~/.ssh/id_rsa." names ~/.ssh/id_rsa
				}
				if start == end || r.reject != nil && r.reject(text, start, end) {
					continue
				}
				if !add(r.name, start, end) {
					break rule
				}
				if found++; found == MaxFindings {
					break rule
				}
			}
		}
	}
	scanUnicode(text, add)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Offset != out[j].Offset {
			return out[i].Offset < out[j].Offset
		}
		return ruleIndex(out[i].Rule) < ruleIndex(out[j].Rule)
	})
	return dedupe(out)
}

const (
	// windowFrom is the text length from which patterns run on windows.
	windowFrom = 4 << 10
	// windowPad is how far a window reaches on each side of an anchor:
	// more than any pattern's match reaches from its anchor.
	windowPad = 256
	// maxWindowBytes bounds the text one rule's pattern reads in a long
	// text: one full of anchors costs no more than 1 MiB of matching.
	maxWindowBytes = 1 << 20
)

type window struct{ start, end int }

// anchorIndex finds anchors in a long text, each anchor's positions
// looked up once for all the rules that share it.
type anchorIndex struct {
	text, lower string // lower: ASCII letters lowered, same byte offsets
	pos         map[string][]int
}

func newAnchorIndex(text string) *anchorIndex {
	b := []byte(text)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return &anchorIndex{text: text, lower: string(b), pos: map[string][]int{}}
}

func isWordByte(c byte) bool { return isAlnum(c) || c == '_' }

func (a *anchorIndex) find(anchor string) []int {
	if p, ok := a.pos[anchor]; ok {
		return p
	}
	word := strings.HasPrefix(anchor, `\b`)
	needle := strings.TrimPrefix(anchor, `\b`)
	var p []int
	for off := 0; ; {
		i := strings.Index(a.lower[off:], needle)
		if i < 0 {
			break
		}
		i += off
		off = i + len(needle)
		if word && (i > 0 && isWordByte(a.lower[i-1]) || off < len(a.lower) && isWordByte(a.lower[off])) {
			continue
		}
		p = append(p, i)
	}
	a.pos[anchor] = p
	return p
}

// windows are the merged windows around anchors, in text order, at most
// maxWindowBytes of them. A window starts and ends where RE2's \b reads
// as it does in the whole text (next to a byte that is not an ASCII
// letter, digit or underscore) and at a character boundary.
func (a *anchorIndex) windows(anchors []string) []window {
	var ws []window
	for _, an := range anchors {
		for _, i := range a.find(an) {
			ws = append(ws, window{a.startAt(i - windowPad), a.endAt(i + len(an) + windowPad)})
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].start < ws[j].start })
	out := ws[:0]
	total := 0
	for _, w := range ws {
		if n := len(out); n > 0 && w.start <= out[n-1].end {
			if w.end > out[n-1].end {
				total += w.end - out[n-1].end
				out[n-1].end = w.end
			}
		} else {
			out = append(out, w)
			total += w.end - w.start
		}
		if total >= maxWindowBytes {
			break
		}
	}
	return out
}

func (a *anchorIndex) startAt(i int) int {
	t := a.text
	if i <= 0 {
		return 0
	}
	for lim := max(i-64, 0); i > lim; i-- {
		if utf8.RuneStart(t[i]) && !isWordByte(t[i-1]) {
			return i
		}
	}
	for i > 0 && !utf8.RuneStart(t[i]) {
		i--
	}
	return i
}

func (a *anchorIndex) endAt(i int) int {
	t := a.text
	if i >= len(t) {
		return len(t)
	}
	for lim := min(i+64, len(t)); i < lim; i++ {
		if utf8.RuneStart(t[i]) && !isWordByte(t[i]) {
			return i
		}
	}
	for i < len(t) && !utf8.RuneStart(t[i]) {
		i++
	}
	return i
}

func ruleIndex(r string) int {
	for i, x := range Rules {
		if x == r {
			return i
		}
	}
	return len(Rules)
}

// dedupe drops a finding inside an earlier one of the same rule ("prior
// instructions" inside "ignore prior instructions").
func dedupe(fs []Finding) []Finding {
	out := fs[:0]
next:
	for _, f := range fs {
		for _, k := range out {
			if k.Rule == f.Rule && k.Offset <= f.Offset && f.Offset+len(f.Span) <= k.Offset+len(k.Span) {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

// cut bounds a span to MaxSpan bytes at a character boundary.
func cut(s string) string {
	if len(s) <= MaxSpan {
		return s
	}
	n := MaxSpan
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF:
		return true // zero-width
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true // bidi controls
	case r >= 0xE0000 && r <= 0xE007F:
		return true // tag characters
	}
	return false
}

// greekLookalike are the Greek letters that pass for Latin ones.
const greekLookalike = "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαιικνορτυχ"

// scanUnicode reports runs of invisible characters and words that mix
// Latin letters with Cyrillic or Greek look-alikes.
func scanUnicode(text string, add func(rule string, start, end int) bool) {
	inv := -1 // start of a run of invisible characters
	word := -1
	var latin, other bool
	endWord := func(i int) bool {
		if word >= 0 && latin && other {
			if !add(RuleConfusable, word, i) {
				return false
			}
		}
		word, latin, other = -1, false, false
		return true
	}
	for i, r := range text {
		if invisible(r) {
			if inv < 0 {
				inv = i
			}
			continue // an invisible character inside a word does not end it
		}
		if inv >= 0 {
			if !add(RuleInvisible, inv, i) {
				return
			}
			inv = -1
		}
		if unicode.IsLetter(r) {
			if word < 0 {
				word = i
			}
			switch {
			case unicode.Is(unicode.Latin, r):
				latin = true
			case unicode.Is(unicode.Cyrillic, r), strings.ContainsRune(greekLookalike, r):
				other = true
			}
			continue
		}
		if !endWord(i) {
			return
		}
	}
	if inv >= 0 && !add(RuleInvisible, inv, len(text)) {
		return
	}
	endWord(len(text))
}

// ScanTool scans a tool's name, title, description and annotations' title,
// and every description and title in its input and output schemas. A
// vendor__tool name that ends in the tool's own name is not a finding.
func ScanTool(t registry.ToolDef) []Finding {
	var out []Finding
	// charsOnly: an identifier (the tool's name, a property name), to
	// which only the character rules apply.
	scan := func(field, text string, charsOnly bool) {
		for _, f := range ScanText(field, text) {
			if charsOnly && f.Rule != RuleInvisible && f.Rule != RuleConfusable ||
				f.Rule == RuleToolReference && ownName(f.Span, t.Name) {
				continue
			}
			f.Tool = t.Name
			out = append(out, f)
		}
	}
	scan("name", t.Name, true)
	scan("title", t.Title, false)
	scan("description", t.Description, false)
	if len(t.Annotations) > 0 {
		var a struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(t.Annotations, &a) == nil {
			scan("annotations/title", a.Title, false)
		}
	}
	walkSchema("inputSchema", t.InputSchema, scan)
	walkSchema("outputSchema", t.OutputSchema, scan)
	return out
}

func ownName(span, name string) bool {
	i := strings.Index(span, "__")
	return name != "" && i >= 0 && strings.EqualFold(strings.TrimRight(span[i+2:], ".-"), name)
}

func walkSchema(field string, raw json.RawMessage, scan func(field, text string, charsOnly bool)) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return // a schema that does not parse is refused when it is compiled
	}
	walk(field, v, 0, scan)
}

func walk(path string, v any, depth int, scan func(field, text string, charsOnly bool)) {
	if depth > maxDepth {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + escape(k)
			if s, ok := v[k].(string); ok && (k == "description" || k == "title") {
				scan(p, s, false)
				continue
			}
			if path != "" && strings.HasSuffix(path, "/properties") {
				scan(p, k, true) // a property name is an identifier
			}
			walk(p, v[k], depth+1, scan)
		}
	case []any:
		for i, e := range v {
			walk(path+"/"+strconv.Itoa(i), e, depth+1, scan)
		}
	}
}

// escape writes a key as a JSON pointer reference token (RFC 6901).
func escape(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// Allow is one finding an operator reviewed and allowed: every finding of
// Rule on Tool, or only the one whose Span is Span when it is set. An
// empty Tool allows the rule on every tool (for results, whose findings
// name no tool).
type Allow struct {
	Tool string `json:"tool" yaml:"tool"`
	Rule string `json:"rule" yaml:"rule"`
	Span string `json:"span,omitempty" yaml:"span,omitempty"`
}

// Allows reports whether a allows f.
func (a Allow) Allows(f Finding) bool {
	return (a.Tool == "" || a.Tool == f.Tool) && a.Rule == f.Rule && (a.Span == "" || a.Span == f.Span)
}

// Filter returns the findings no entry of allow allows (a new slice;
// findings is not changed).
func Filter(findings []Finding, allow []Allow) []Finding {
	out := make([]Finding, 0, len(findings))
next:
	for _, f := range findings {
		for _, a := range allow {
			if a.Allows(f) {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}
