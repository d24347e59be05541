package orchestrator

import (
	_ "embed"
	"strings"
	"unicode/utf8"
)

// hantText pairs traditional Chinese characters with their simplified
// forms (hant.txt), each pair of the same UTF-8 length.
//
//go:embed hant.txt
var hantText string

// hanFolder folds a goal written in traditional characters, or in
// Cantonese, into the simplified Mandarin the planner's dictionary reads
// (台北現在會下雨嗎 → 台北现在会下雨吗, 點去 → 咋去), keeping every byte
// offset: each replacement is as long as what it replaces, so a value read
// from the folded goal stands at the same bytes of the goal as typed
// (restoreTyped).
var hanFolder *strings.Replacer

// dialectWords are Cantonese and Taiwanese words (in simplified
// characters, after the character fold) and the Mandarin words of the same
// length the planner knows. A word listed as itself guards a Mandarin word
// from a shorter entry (理由 keeps its 由); a longer word comes before a
// shorter one it starts with (唔好 before 唔): the first listed wins.
var dialectWords = [][2]string{
	{"自由", "自由"}, {"理由", "理由"}, {"由于", "由于"}, {"缘由", "缘由"}, {"经由", "经由"}, {"由此", "由此"}, {"来由", "来由"},
	{"由", "从"}, // 由尖沙咀去中环
	{"有没得", "有没有"}, {"没得", "没有"}, {"啥子", "什么"}, {"而家", "现在"}, {"落紧雨", "在下雨"}, {"俾我", "给我"}, {"畀我", "给我"}, {"系咪", "是不"}, {"嘅", "的"}, {"搵", "找"}, {"揾", "找"}, {"落雨", "下雨"}, {"好食", "好吃"}, {"食饭", "吃饭"}, {"几间", "几家"}, {"睇", "看"}, {"啲", "些"}, {"咗", "了"}, {"喺", "在"}, {"冇", "没"}, {"唔好", "不要"}, {"唔该晒", "谢谢了"}, {"唔該晒", "谢谢了"}, {"多谢晒", "谢谢了"}, {"多謝晒", "谢谢了"}, {"唔该", "谢谢"}, {"唔", "不"}, {"乜", "啥"},
	{"点样", "咋样"}, {"点去", "咋去"}, {"点走", "咋走"}, {"点行", "咋走"}, {"几远", "多远"}, {"几耐", "多久"}, {"几多", "多少"},
	{"今儿", "今天"}, {"明儿", "明天"}, {"昨儿", "昨天"}, {"今日", "今天"}, {"听日", "明天"}, {"琴日", "昨天"}, {"寻日", "昨天"}, {"后日", "后天"}, {"今朝", "今早"}, {"明朝", "明早"}, {"今晚黑", "今晚上"},
	{"礼拜", "星期"}, {"边度", "哪里"}, {"边个", "哪个"},
	{"搭港铁", "坐地铁"}, {"搭地铁", "坐地铁"}, {"搭巴士", "坐公交"}, {"搭的士", "打出租"}, {"搭车", "坐车"}, {"搭船", "坐船"},
	{"港铁", "地铁"}, {"捷运", "地铁"}, {"巴士", "公交"}, {"计程车", "出租车"}, {"的士", "出租"},
	{"脚踏车", "自行车"},
	// Shaanxi, Shandong and Tianjin words, and typos of one sound (以经到了, 在见)
	{"给额", "给我"}, {"额想", "我想"}, {"额们", "我们"}, {"额在", "我在"}, {"额娃", "我娃"}, {"俺们", "我们"}, {"介个", "这个"},
	{"一打", "十二"}, {"寻几家", "找几家"}, {"寻个", "找个"}, {"寻下", "找下"}, {"以经", "已经"}, {"在见", "再见"}, {"空汽", "空气"},
}

func init() {
	var pairs []string
	for _, w := range dialectWords {
		if len(w[0]) != len(w[1]) {
			panic("orchestrator: dialect word " + w[0] + " → " + w[1] + " changes the goal's length")
		}
		pairs = append(pairs, w[0], w[1])
	}
	for _, line := range strings.Split(hantText, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, size := utf8.DecodeRuneInString(line)
		s := line[size:]
		if len(s) != size {
			panic("orchestrator: hant.txt pair " + line + " is not of one length")
		}
		pairs = append(pairs, string(t), s)
	}
	hanFolder = strings.NewReplacer(pairs...)
}

// hanFold folds goal's traditional characters and dialect words (see
// hanFolder) in two passes: characters first, so that the dialect words
// match however they were written (a second pass only when the first
// changed something). A goal with no Han character is returned as it is.
func hanFold(goal string) string {
	if hanRuns(goal) == nil {
		return goal
	}
	once := hanFolder.Replace(goal)
	if once == goal {
		return goal
	}
	return hanFolder.Replace(once)
}

// restoreTyped gives the values and clauses read from folded (hanFold of
// typed) back the characters typed: a string found in folded is replaced
// by the bytes at the same offsets of typed.
func restoreTyped(typed, folded string, plan *Plan, unplanned []Unplanned) {
	back := func(s string) string {
		if i := strings.Index(folded, s); i >= 0 && s != "" {
			return typed[i : i+len(s)]
		}
		return s
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return back(v)
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	for i := range plan.Steps {
		for k, v := range plan.Steps[i].Arguments {
			plan.Steps[i].Arguments[k] = walk(v)
		}
	}
	for i := range unplanned {
		unplanned[i].Clause = back(unplanned[i].Clause)
	}
}
