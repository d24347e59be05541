package orchestrator

import (
	"slices"
	"testing"
	"time"
)

// wed is a Wednesday.
var wed = time.Date(2027, 3, 10, 9, 0, 0, 0, time.UTC)

func TestFindDates(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"on 2027-04-02", []string{"2027-04-02"}},
		{"March 14 at 10:00", []string{"2027-03-14"}},
		{"the 20th of March", []string{"2027-03-20"}},
		{"Feb 3", []string{"2028-02-03"}}, // passed this year: next year's
		{"tomorrow", []string{"2027-03-11"}},
		{"the day after tomorrow", []string{"2027-03-12"}},
		{"in 3 days", []string{"2027-03-13"}},
		{"this saturday", []string{"2027-03-13"}},
		{"next friday", []string{"2027-03-19"}},
		{"monday", []string{"2027-03-15"}}, // this week's has passed
		{"明天下午三点", []string{"2027-03-11"}},
		{"下周六", []string{"2027-03-20"}},
		{"周五", []string{"2027-03-12"}},
		{"3月20号", []string{"2027-03-20"}},
		{"十二月二十五日", []string{"2027-12-25"}},
		{"后天", []string{"2027-03-12"}},
		{"大后天", []string{"2027-03-13"}},
		{"2027-02-30", nil}, // no such day
		{"3 guests for 2 nights", nil},
		{"20日广州的酒店", []string{"2027-03-20"}}, // a day alone: this month's
		{"5号上海下雨吗", []string{"2027-04-05"}},  // passed: next month's
		{"坐3号线", nil},                        // a line's number, not a day
	} {
		var got []string
		for _, f := range findDates(tt.text, wed) {
			got = append(got, f.val)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("findDates(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestFindTimes(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"at 10:00", []string{"10:00"}},
		{"3pm", []string{"15:00"}},
		{"12 am", []string{"00:00"}},
		{"at noon", []string{"12:00"}},
		{"下午三点", []string{"15:00"}},
		{"早上9点半", []string{"09:30"}},
		{"晚上8点", []string{"20:00"}},
		{"25:00", nil},
		{"5 miles", nil},
		{"a call on Thursday at 10", []string{"10:00"}},
		{"dinner at 7 tomorrow", []string{"19:00"}},
		{"meet at 10 Downing Street", nil},
		{"a hotel at 5 stars", nil},
	} {
		var got []string
		for _, f := range findTimes(tt.text) {
			got = append(got, f.val)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("findTimes(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestFindCurrencies(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"100 dollars to euros", []string{"USD", "EUR"}},
		{"€50 to CHF", []string{"EUR", "CHF"}},
		{"1,250 canadian dollars to mexican pesos", []string{"CAD", "MXN"}},
		{"100 usd to nok", []string{"USD", "NOK"}},
		{"一百美元换成人民币", []string{"USD", "CNY"}},
		{"两百港币兑换美元", []string{"HKD", "USD"}},
		{"flight from Rome to Paris", nil}, // a city is never a currency
		{"the cat", nil},
	} {
		var got []string
		for _, v := range findCurrencies(tokenize(tt.text, baseDict)) {
			got = append(got, v.val)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("findCurrencies(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// Numbers are read in words, with scales and thousands separators.
func TestNumbers(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []float64
	}{
		{"twenty bucks", []float64{20}},
		{"fifteen hundred baht", []float64{1500}},
		{"3 million won", []float64{3e6}},
		{"1,250 dollars", []float64{1250}},
		{"twenty five", []float64{25}},
		{"两晚", []float64{2}},
		{"三千日元", []float64{3000}},
		{"3万", []float64{30000}},
		{"at 10:00 with 2 guests", []float64{2}},
	} {
		var got []float64
		for _, tok := range tokenize(tt.text, baseDict) {
			if tok.kind == tNum {
				got = append(got, tok.val)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("numbers in %q = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// The segmenter reads world places as whole words, and what follows a
// place as no part of it.
func TestSegmentPlaces(t *testing.T) {
	for _, tt := range []struct {
		text string
		want string // the first run read as a place candidate
	}{
		{"加拿大温哥华今天天气", "加拿大温哥华"},
		{"纽约出差", "纽约"},
		{"拉斯维加斯现在多少度", "拉斯维加斯"},
		{"芝加哥开会", "芝加哥"},
		{"从日本大阪坐地铁", "日本大阪"},
		{"青岛天汽咋样", "青岛"},
		{"5号上海下雨吗", "上海"}, // a date after a number is no part of the place
		{"明天8点北京天气", "北京"},
		{"推荐三家长沙的湘菜馆", "长沙"}, // nor a measure word
		{"北京烤鸭哪家好", "北京"},    // a dish after the place is no place
		{"厦门今天的天起怎么样", "厦门"}, // 天起 sounds like 天气
	} {
		got := ""
		for _, tok := range tokenize(tt.text, baseDict) {
			if tok.kind == tHanRaw {
				got = tok.text
				break
			}
		}
		if got != tt.want {
			t.Errorf("%q: place %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"weahter", "weather", 1}, // a swap
		{"resturant", "restaurant", 1},
		{"weather", "weather", 0},
		{"paris", "pairs", 1},
		{"sushi", "weather", 3}, // more than the limit: limit+1
	} {
		if got := editDistance(tt.a, tt.b, 2); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestEnumSynonyms(t *testing.T) {
	enum := []any{"km", "mi", "c", "pm25"}
	syn := enumSynonyms(enum, "Unit: km kilometres, mi miles, c Celsius, pm25 (PM2.5)")
	for phrase, want := range map[string]any{"kilometer": "km", "mile": "mi", "celsius": "c", "pm2.5": "pm25", "km": "km"} {
		if got := syn[normPhrase(phrase)]; got != want {
			t.Errorf("synonym %q = %v, want %v", phrase, got, want)
		}
	}
}

func TestHomophones(t *testing.T) {
	for _, tt := range []struct{ typed, want string }{
		{"天起", "天气"}, {"参厅", "餐厅"}, {"路先", "路线"}, {"天汽", "天气"},
		{"天气", ""}, // the word itself is no typo
		{"熊猫", ""}, // no word sounds like it
	} {
		got, _ := baseDict.homophone(tt.typed)
		if got != tt.want {
			t.Errorf("homophone(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
}
