package orchestrator

import (
	"testing"

	"github.com/toolhub/toolhub/registry"
)

// Tool search reads what the planner's ranking sets aside (search
// evidence): each case is a class of goal where a near-duplicate tool of
// the same words came first, or nothing was found.
func TestSearchReadsEvidence(t *testing.T) {
	none := `{}`
	tools := []schemaTool{
		// Time scope: the same weather words, now, ahead or past.
		{"a-weather", def("current_weather", "Current weather conditions for a city: temperature, wind.", none)},
		{"a-weather", def("weather_forecast", "Weather forecast for the coming days.", none)},
		{"a-weather", def("weather_archive", "Past weather observations for a date.", none)},
		// Chinese pairs across words: 走了多少步 (today's rates say 今天 too).
		{"a-fx", def("fx_rates", "今天的外汇牌价", none)},
		{"c-fit", def("step_count", "今天走了多少步", none)},
		{"c-fit", def("sleep_report", "昨晚的睡眠质量", none)},
		// A measure word inside a word (叫辆车 is 叫车), or standing for its
		// noun (放首 is 放歌); a destination after 去 says where.
		{"d-ride", def("call_taxi", "网约车服务", none)},
		{"d-air", def("airport_info", "机场信息和航站楼", none)},
		{"e-music", def("play_song", "音乐播放", none)},
		{"e-music", def("song_lyrics", "查歌词", none)},
		// Two clauses, one request: the entry both find.
		{"g-music", def("identify_song", "听歌识曲，识别正在播放的歌", none)},
		{"g-ocr", def("ocr", "识别图片上的文字", none)},
		// Users' words for the catalog's (search synonyms).
		{"h-hotel", def("book_hotel", "搜索城市里可预订的酒店", none)},
		{"h-hotel", def("cancel_booking", "取消酒店预订", none)},
		{"i-speech", def("speech_to_text", "Transcribe speech in an audio file to text.", none)},
		{"i-fit", def("record_exercise", "Record a workout as text notes.", none)},
		// Asking what a song is identifies it.
		{"k-music", def("play_music", "Play a song.", none)},
		{"k-music", def("recognize_music", "Recognize the song that is playing.", none)},
		// A keyword said in two parts: 订…机票 is 订机票; 我订的酒店 is the
		// hotel booked.
		{"l-air", def("find_flights", "搜索航班和机票：预订前比较价格", none)},
		{"l-air", def("book_flight", "出票", none)},
		// A price cap searches products.
		{"m-shop", def("product_search", "搜索商品和价格", none)},
		// One Chinese character that says a catalog word (翻 is 翻译, 约 is
		// 预约), or ends a compound by its kind (柴犬币 is a coin, 骨科 a
		// department, 男声 a voice); a poster is a picture to draw.
		{"n-tr", def("translate_text", "翻译一段文字", none)},
		{"n-tr", def("dictionary", "查单词的意思", none)},
		{"n-coin", def("coin_price", "查询加密货币价格", none)},
		{"n-coin", def("stock_price", "查询股票价格", none)},
		{"n-clinic", def("doctor_booking", "预约医生", none)},
		{"n-tts", def("text_to_speech", "把文字转换成语音", none)},
		{"n-img", def("draw_image", "根据描述生成图片", none)},
		{"n-img", def("upscale_image", "把图片放大", none)},
		// A message's content, after 说, is not the request.
		{"n-mail", def("send_mail", "发送电子邮件", none)},
		// A clipped word: "coords" is coordinates.
		{"f-map", def("geocode", "Convert an address into latitude and longitude coordinates.", none)},
		{"f-map", def("nearby_places", "Find places near an address.", none)},
	}
	kw := map[string][]string{"a-weather__weather_forecast": {"天气预报", "明天天气"}, "d-ride__call_taxi": {"叫车", "打车"}, "d-air__airport_info": {"机场"}, "e-music__play_song": {"放歌", "播放"}, "e-music__song_lyrics": {"歌词"}, "l-air__find_flights": {"机票", "航班"}, "l-air__book_flight": {"订机票"},
		"n-tr__translate_text": {"翻译"}, "n-tr__dictionary": {"单词"}, "n-coin__coin_price": {"虚拟币", "加密货币"}, "n-coin__stock_price": {"股票"},
		"n-clinic__doctor_booking": {"看医生", "挂号"}, "n-tts__text_to_speech": {"语音合成"}, "n-img__draw_image": {"生成图片", "画图"}, "n-img__upscale_image": {"放大", "图片"},
		"n-mail__send_mail": {"发邮件", "邮件"}}
	p := offlineFor(t, newSchemaHub(t, tools, nil, nil))
	p.Keywords = func(e registry.Entry) []string { return kw[e.Name] }
	wantFirst(t, p, []searchCase{
		{"will it rain in London tomorrow", "a-weather__weather_forecast"},
		{"what was the weather in Lima on 2019-12-25", "a-weather__weather_archive"},
		{"what's the weather in Lima", "a-weather__current_weather"},
		{"今天走了多少步", "c-fit__step_count"},
		{"帮我叫辆车去浦东机场", "d-ride__call_taxi"},
		{"放首周杰伦的稻香", "e-music__play_song"},
		{"这首歌叫什么名字，帮我识别一下", "g-music__identify_song"},
		{"退掉我在上海订的酒店", "h-hotel__cancel_booking"},
		{"turn this recording into text", "i-speech__speech_to_text"},
		{"what song is this playing right now", "k-music__recognize_music"},
		{"帮我订一张去成都的机票", "l-air__book_flight"},
		{"搜一下两百块以内的蓝牙耳机", "m-shop__product_search"},
		{"gps coords for 10 Downing Street", "f-map__geocode"},
		{"这篇说明书帮我翻成日语", "n-tr__translate_text"},
		{"柴犬币今天涨了没有", "n-coin__coin_price"},
		{"下周三想去看骨科门诊", "n-clinic__doctor_booking"},
		{"把这首诗用浑厚男声朗诵一遍", "n-tts__text_to_speech"},
		{"给新开的咖啡馆做一张开业海报", "n-img__draw_image"},
		{"给老李写封邮件说周五的酒店预订取消了", "n-mail__send_mail"},
		// A place's last character is no kind (莫斯科 is no department).
		{"莫斯科明天天气怎么样", "a-weather__weather_forecast"},
		// A keyword that holds a date (明天天气) is still the keyword.
		{"北京明天天气怎么样", "a-weather__weather_forecast"},
	})
}
