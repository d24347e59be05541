package orchestrator

import "strings"

// searchSynonyms are words users say for what the catalog says otherwise,
// by class of request, read by tool search only (the planner wants the
// catalog's own words): each word of a group looks up the group's catalog
// words (search evidence, synShare of their weight). A group names what
// the tools say first, then how users say it.
var searchSynonyms = map[string][]string{}

// leadSynonyms are words that say which of the tools the goal's other
// words found it wants, not what they are about: "find" the email is the
// email search, not the email send. They only raise entries near the
// best (evidence.lead).
var leadSynonyms = map[string][]string{}

func init() {
	for _, w := range []string{"find", "search", "look", "lookup", "locate", "找", "搜", "找一下", "搜一下", "查找", "搜索"} {
		leadSynonyms[w] = []string{"search", "find", "搜索", "查找"}
	}
}

// synShare is the weight of a catalog word a synonym found, against the
// word's own.
const synShare = 0.5

func init() {
	for _, g := range [][2][]string{
		// Undoing an order: 退掉 the hotel, scrap the ride.
		{{"cancel", "取消", "退订"}, {"退掉", "退了", "撤销", "不要了", "作废", "scrap", "nix", "call off"}},
		// Changing a booking or delivery to another time or place.
		{{"reschedule", "change", "修改", "改期"}, {"改成", "改到", "推迟", "延期", "改天", "postpone", "push back", "move"}},
		// A recording is audio.
		{{"audio", "speech", "音频", "语音"}, {"recording", "recordings", "voicemail", "voicemails", "memo", "录音", "录的"}},
		// What everyone talks about is what is trending.
		{{"trending", "热搜"}, {"talking", "buzz", "buzzing", "热议", "火了", "最火"}},
		// The cheapest is a price comparison.
		{{"compare", "price", "比价"}, {"cheapest", "cheaper", "deal", "deals", "最便宜", "便宜", "划算"}},
		// Saying something in a language is its phrases.
		{{"phrase", "常用语"}, {"怎么说", "i say", "to say"}},
		// Asking what a thing is is identifying it.
		{{"identify", "recognize", "识别"}, {"what song", "which song", "whats this", "what's this", "这是什么", "叫什么", "认出"}},
		// A price cap is a search of products by price.
		{{"product", "price", "商品", "价格"}, {"under $", "块以内", "元以内", "以内的", "以下的", "budget"}},
		// Replacing part of a picture is editing it.
		{{"edit", "modify", "修改"}, {"replace", "swap", "换掉", "换成"}},
		// A poster or a wallpaper is a picture to draw.
		{{"生成图片", "画图"}, {"海报", "壁纸", "头像", "插画", "插图", "配图", "poster", "wallpaper", "avatar", "illustration"}},
		// Walking is steps.
		{{"step", "步数"}, {"walked", "walk", "walking", "走了", "走路"}},
	} {
		for _, w := range g[1] {
			searchSynonyms[w] = append(searchSynonyms[w], g[0]...)
		}
	}
}

// synonyms is the evidence of the clause's words that are searchSynonyms
// (one- and two-word ones, English as typed: "recording" is not "record"):
// the catalog words of their group, each by its key (a concept's whole
// postings).
func (ix *offlineIndex) synonyms(c *clause, out []evidence) []evidence {
	var seen map[string]bool
	for i, t := range c.toks {
		if t.kind != tWord && t.kind != tHan && t.kind != tHanRaw {
			continue
		}
		words := []string{t.norm}
		if t.kind == tWord {
			words[0] = strings.ToLower(t.text)
			if i+1 < len(c.toks) && c.toks[i+1].kind == tWord {
				words = append(words, words[0]+" "+strings.ToLower(c.toks[i+1].text))
			}
		}
		for _, w := range words {
			lead := false
			syns := searchSynonyms[w]
			if syns == nil {
				syns, lead = leadSynonyms[w], true
			}
			for _, s := range syns {
				k := s
				if isASCII(s) {
					k = englishKey(s)
				}
				out = ix.keyEvidence(out, &seen, key(k), evidence{word: t.text, share: synShare, grow: !lead, lead: lead})
			}
		}
	}
	return out
}
