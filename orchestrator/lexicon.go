package orchestrator

// The offline planner's built-in lexicon: small, general word lists in
// English and Chinese. Vendors and operators add their own words per tool
// with `keywords:` in the config; these only bridge the commonest gaps (a
// Chinese goal against an English description, "add" against "sum").

// conceptGroups are words that mean the same thing to a tool catalog. A
// word in a group matches any other word of the group, in either language.
// English words are written as they are typed; they are stemmed when the
// lexicon is built.
var conceptGroups = [][]string{
	{"weather", "forecast", "temperature", "rain", "raining", "snow", "snowing", "sunny", "umbrella", "hot", "cold", "warm", "chilly", "freezing", "humid", "degrees", "windy", "storm",
		"temp", "temps", "lashing", "pouring", "bucketing", "drizzle", "drizzling", "muggy", "nippy", "parky", "baltic", "nice out", "chill", "heat", "heatwave", "frost", "frosty", "scorching", "boiling", "sweltering", "jacket", "coat", "sweater", "brolly",
		"tipping down", "chucking it down", "pissing down", "bucketing down", "teeming", "rainy", "cloudy", "overcast", "foggy", "misty", "thunder", "thunderstorm", "hail",
		"warmer", "colder", "hotter", "cooler", "it like out", "like outside", "weahter", "wether", "wheather", "weather's", "outside", "outdoors", "out there", "wear", "what to wear", "穿什么", "穿啥", "要不要穿", "羽绒服", "外套", "秋裤",
		"天气", "气温", "温度", "下雨", "下雪", "晴天", "预报", "冷不冷", "热不热", "冷", "热", "多少度", "几度", "带伞", "气候", "刮风", "闷热", "炎热", "寒冷", "凉快", "暖和", "冻", "凉", "晒",
		"天儿", "啥天", "温差", "落雨", "落雪", "阴天", "雾蒙蒙", "贼冷", "贼热", "冷唔冷", "热唔热", "天氣"},
	{"route", "direction", "directions", "navigate", "how to get", "get there", "how to go", "get from", "navigation", "itinerary", "path", "map", "maps", "地图", "how do i get", "how i go", "how i get", "how can i go", "how can i get", "get to", "way to", "路线", "导航", "怎么走", "怎么去", "线路", "路程", "路径", "咋走", "咋去", "怎么到", "咋到", "怎么过去", "怎么坐车", "哪条路", "走哪条路", "咋坐", "怎么坐"},
	{"restaurant", "restaurants", "food", "eat", "craving", "peckish", "starving", "famished", "halal", "kosher", "dinner", "lunch", "breakfast", "brunch", "dine", "cafe", "bistro", "diner", "dish", "dishes", "cuisine",
		"sushi", "taco", "tacos", "pizza", "ramen", "noodles", "dim sum", "seafood", "burger", "burgers", "bbq", "barbecue", "steak", "curry", "kebab", "dumplings",
		"street food", "places to eat", "place to eat", "vegetarian", "vegan", "takeaway",
		"pasta", "steakhouse", "tapas", "noodle", "pho", "bagel", "bakery", "pub", "trattoria", "pizzeria", "sushi bar", "food truck", "hot pot", "falafel", "shawarma",
		"churrascaria", "taqueria", "izakaya", "brasserie", "tavern", "osteria", "cantina",
		"chicken", "jerk chicken", "nyama choma", "waakye", "suya", "nasi lemak", "nasi kandar", "roti canai", "bak kut teh", "hokkien mee", "mee goreng", "char siu", "bunny chow", "braai", "roti", "chicken rice", "char kway teow",
		"ice cream", "bubble tea", "boba", "jollof", "biryani", "shawarma spot", "chippy", "kebab shop", "joint", "joints", "chop bar", "chop bars", "冰淇淋", "奶茶",
		"paella", "dumpling", "udon", "burrito", "oyster", "lobster", "crab", "wings", "fried chicken", "brisket", "dessert", "gelato", "hawker", "eatery", "eateries", "grill",
		"餐厅", "饭店", "餐馆", "美食", "吃饭", "吃的", "好吃", "馆子", "海鲜", "寿司", "披萨", "火锅", "烧烤", "早茶", "小吃", "拉面", "面馆", "料理", "午饭", "晚饭", "早饭", "夜宵", "烤肉", "快餐", "吃",
		"菜馆", "饭馆", "小馆", "茶餐厅", "餐吧", "食堂", "大排档", "菜", "餐", "湘菜", "川菜", "粤菜", "西餐", "中餐", "日料", "大排档", "烤鸭", "面条", "饺子", "包子", "牛排", "串串", "甜品",
		"面馆", "粉店", "火锅店", "烧烤店", "热干面", "小笼包", "生煎", "煎饼", "肉夹馍", "凉皮", "羊肉串", "麻辣烫", "螺蛳粉", "米线", "过桥米线", "烧麦", "锅包肉", "小龙虾", "酸菜鱼", "烤鱼", "牛肉面", "兰州拉面", "炸酱面", "担担面", "煲仔饭", "肠粉", "茶餐厅", "奶茶", "咖啡",
		// the dishes of cuisineWords: a dish asks for a place to eat it
		"hotpot", "oysters", "bagels", "desserts", "fish and chips", "biryani", "jollof", "injera", "ceviche", "empanadas", "arepas", "pierogi", "goulash", "borscht", "tagine", "couscous", "mezze", "hummus", "dosa", "thali", "momo", "momos", "laksa", "satay", "nasi goreng", "rendang", "banh mi", "pad thai", "tom yum", "bulgogi", "tteokbokki", "yakitori", "tempura", "okonomiyaki", "gyoza", "churros", "poutine", "fondue", "raclette", "kimbap", "xiaolongbao", "baozi", "churrascaria", "taqueria", "izakaya", "poke", "bibimbap", "kimchi", "khachapuri", "schnitzel", "crepes", "waffles", "鲁菜", "浙菜", "徽菜", "闽菜", "苏菜", "本帮菜", "东北菜", "西北菜", "韩餐", "泰餐", "法餐", "意餐", "素食", "清真", "米粉", "点心", "汉堡", "炸鸡", "咖喱", "沙拉", "自助餐"},
	{"image", "picture", "pic", "pics", "pfp", "photo", "illustration", "drawing", "painting", "poster", "logo", "wallpaper", "artwork", "watercolor", "图片", "图像", "照片", "插画", "图", "海报", "壁纸", "插图", "头像"},
	{"draw", "paint", "sketch", "illustrate", "画", "绘制", "整一张", "整张", "整一幅", "整个图", "弄一张", "搞一张"},
	{"generate", "create", "make", "render", "design", "生成", "创建", "制作", "设计", "做"},
	{"sum", "add", "plus", "total", "addition", "加", "相加", "求和", "之和", "总和", "加起来", "加上"},
	{"multiply", "times", "product", "乘", "相乘", "乘以"},
	{"subtract", "minus", "difference", "减", "相减", "减去"},
	{"echo", "repeat", "say back", "parrot", "重复", "复述", "回显", "跟我说"},
	{"environment", "env", "环境变量", "环境"},
	{"compress", "gzip", "zip", "压缩", "打包"},
	{"research", "investigate", "study", "研究", "调研", "调查"},
	{"log", "logging", "logs", "日志"},
	{"toggle", "switch", "turn on", "turn off", "enable", "disable", "开启", "关闭", "打开", "切换"},
	{"message", "消息", "信息"},
	{"error", "错误", "报错"},
	{"resource", "资源"},
	{"link", "links", "链接"},
	{"reference", "引用"},
	{"file", "文件"},
	{"tiny", "small", "little", "小", "微型"},
	{"long", "slow", "长", "长时间"},
	{"operation", "task", "job", "操作", "任务"},
	{"structured", "结构化"},
	{"annotated", "annotation", "annotations", "标注", "注释"},
	{"subscription", "subscriber", "subscribe", "订阅"},
	{"search", "look up", "lookup", "query", "搜索", "查找", "查询", "找", "搵"},
	{"translate", "translation", "how do you say", "how do i say", "how to say", "how do u say", "how would you say", "how would i say", "how can i say", "how do we say", "翻译", "怎么说", "咋说", "怎么讲", "咋讲", "用英语说", "用日语说", "译成", "翻成"},
	{"flight", "flights", "fly", "airline", "plane", "airfare", "one-way", "round trip", "roundtrip", "nonstop", "non-stop", "layover", "business class", "economy class", "first class", "机票", "航班", "飞机", "直飞"},
	{"currency", "exchange rate", "exchange", "money", "worth", "汇率", "货币", "兑换", "换多少", "能换多少", "可以换多少"},
	{"convert", "conversion", "换算", "转换", "换做", "换成"},
	{"parcel", "package", "shipment", "tracking", "快递", "包裹", "物流", "单号"},
	{"air quality", "pollution", "smog", "aqi", "pollutant", "ozone", "haze", "空气质量", "雾霾", "污染", "浓度", "污染物", "臭氧", "空气好不好", "空气怎么样", "空气咋样"},
	// 民宿 (a homestay) is no word of the hotel group: it is what a
	// vacation rental tool says, and tool search finds those by it.
	{"hotel", "accommodation", "lodging", "place to stay", "somewhere to stay", "hostel", "酒店", "宾馆", "住宿", "住的地方", "住处", "旅馆"},
	{"joke", "笑话"},
	{"stock", "share price", "股票", "股价", "多少钱一股", "一股"},
	{"music", "song", "play", "音乐", "歌", "播放"},
	{"email", "mail", "write to", "邮件"},
	{"calendar", "cal", "diary", "in my calendar", "in my cal", "schedule", "meeting", "block", "block out", "appt", "appointment", "set up a call", "日历", "日程", "会议", "开个会", "约个会", "记一下", "记下来"},
	{"news", "headline", "新闻"},
	{"time", "clock", "时间", "几点"},
	{"walking", "walk", "on foot", "by foot", "afoot", "步行", "走路", "走到", "走过去", "走去"},
	{"driving", "drive", "car", "by car", "开车", "驾车", "自驾"},
	{"transit", "train", "bus", "subway", "metro", "public transport", "u-bahn", "u bahn", "s-bahn", "s bahn", "tube", "underground", "tram", "mrt", "mtr", "bts", "lrt", "skytrain", "dart", "luas", "metrorail", "light rail", "trotro", "tro tro", "matatu", "jeepney", "danfo", "minibus", "public transportation", "电车", "轻轨", "捷运", "公交", "地铁", "火车", "坐车"},
	{"metric", "celsius", "公制", "摄氏"},
	{"imperial", "fahrenheit", "英制", "华氏"},
	// what catalogs of consumer tools say in other words than their users
	{"cancel", "cancellation", "call off", "取消", "退订"},
	{"book", "reserve", "reservation", "booking", "预订", "预定", "订"},
	{"delay", "delayed", "late", "on time", "晚点", "延误", "准点"},
	{"distance", "how far", "km", "kilometer", "kilometre", "kilometers", "kilometres", "miles", "距离", "公里"},
	{"coordinates", "latitude", "longitude", "lat", "lng", "lat long", "geocode", "geocoding", "经纬度", "坐标"},
	{"bitcoin", "btc", "crypto", "cryptocurrency", "ethereum", "eth", "比特币", "加密货币", "虚拟币"},
	{"recipe", "cook", "cooking", "how to make", "how do i make", "how to cook", "做法", "菜谱", "食谱", "怎么做"},
	{"win", "won", "winner", "score", "scores", "赢", "输", "比分"},
	{"resolution", "res", "hd", "upscale", "enlarge", "sharpen", "sharper", "高清", "放大", "清晰"},
	{"taxi", "cab", "uber", "ride", "打车", "打个车", "叫车", "出租车", "网约车"},
	{"background", "cutout", "cut out", "抠图", "抠", "去背景", "背景"},
	{"trending", "viral", "热搜", "热门"},
	{"remind", "reminder", "提醒"},
	{"symptom", "symptoms", "headache", "fever", "症状", "头疼", "头痛", "发烧"},
	{"lyrics", "歌词"},
	{"subtitle", "subtitles", "caption", "captions", "字幕"},
	{"amenities", "facilities", "pool", "gym", "健身房", "泳池", "设施"},
	{"check in", "checkin", "check-in", "boarding pass", "值机", "登机牌"},
	{"traffic", "congestion", "jam", "traffic jam", "堵车", "拥堵", "路况", "堵"},
}

// stopwords carry no meaning for choosing a tool.
var stopwordList = []string{
	"a", "an", "the", "and", "or", "of", "to", "in", "into", "for", "from", "on", "at", "by", "with", "about",
	"me", "my", "mine", "i", "i'm", "im", "him", "her", "hers", "his", "he", "she", "they", "them", "their", "you", "your", "we", "us", "our", "it", "its", "it's", "this", "that", "these", "those",
	"is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "can", "could", "would", "will", "shall", "should",
	"what", "what's", "whats", "which", "who", "how", "how's", "where", "when", "why", "there", "here", "please", "pls", "kindly",
	"some", "any", "all", "one", "get", "give", "show", "tell", "let", "let's", "want", "need", "like", "going", "go", "gonna",
	"check", "find", "look", "see", "know", "help", "also", "then", "just", "now", "out", "up", "as", "so", "too", "very",
	"nearby", "near", "around", "close", "than", "if", "but", "not", "no", "yes", "ok", "okay", "hey", "hi",
	"today", "tomorrow", "tonight", "yesterday", "morning", "afternoon", "evening", "night", "weekend", "week", "day",
	"plan", "trip", "visit", "travel", "holiday", "vacation", "journey", "for me", "use", "using", "run", "do it", "is it",
	"gimme", "lemme", "todya", "tdy", "tomorow", "tommorow", "tommorrow", "tmrw", "tmr", "tonite", "both", "each", "either", "vs", "versus", "right", "one's", "ones", "rn",
	"put", "firstly", "secondly", "thirdly", "fourthly", "lastly", "additionally", "moreover", "furthermore",
}

// hanFunctionWords are Chinese words that are never places and never pick
// a tool: pronouns, particles, question words, time words, measure phrases.
// The tokenizer reads them as words so that what is left between them
// ("北京", "西湖") can be read as a place.
var hanFunctionWords = []string{
	"我", "你", "他", "她", "我们", "你们", "帮我", "给我", "请", "请问", "麻烦", "帮忙", "一下", "一遍", "一只", "一张", "一幅", "一个", "一份", "一次", "一家",
	"的", "了", "吗", "呢", "吧", "啊", "呀", "么", "是", "在", "有", "和", "跟", "与", "及", "哪家", "哪个", "哪些", "哪里有", "有没有", "来", "好", "订", "以及", "并", "并且", "还有", "然后", "再", "顺便", "同时", "另外", "接着", "之后", "如果", "要是", "的话", "那么",
	"怎么样", "多久", "多远", "多长时间", "要多久", "要多长时间", "如何", "怎样", "什么", "多少", "几", "哪里", "哪儿", "吗？", "是不是", "会不会", "等于", "是多少",
	"今天", "明天", "后天", "昨天", "今晚", "明早", "现在", "周末", "早上", "上午", "中午", "下午", "晚上",
	"查", "查一下", "查查", "看看", "看一下", "告诉", "告诉我", "想", "想要", "要", "需要", "能", "可以", "会", "推荐", "找一下", "安排", "计划", "准备", "打算", "旅行", "行程", "不咋", "不怎么", "不太", "分别", "各自", "一共", "总共", "左右", "买菜", "做菜", "炒菜", "您", "麻烦您",
	"从", "到", "去", "往", "至", "那里", "那边", "那儿", "附近", "周边", "周围", "当地", "这里", "这边", "这儿", "我这儿",
	"把", "将", "对", "为", "给", "个", "家", "只", "张", "条", "份", "遍", "次", "上", "下", "里",
	// words that follow a place and are no part of its name (纽约出差, 芝加哥开会)
	"坐", "乘", "搭", "骑", "打车", "出差", "开会", "旅游", "玩", "度假", "出发", "回来", "入住", "住", "待", "逛", "逛街", "工作", "上学", "留学", "参观", "转机", "飞", "飞往", "前往",
	"找下", "搜下", "问下", "算下", "换下", "翻下", "订下", "推荐下", "介绍下", "安排下", "查询下", "搜索下", "规划下", "计算下", "确认下", "发封", "发个",
	"这会儿", "这会", "此刻", "过去", "关于", "有关", "那块", "那一块", "这块", "大概", "大约", "别超过", "不能超过", "吃完", "吃完饭", "坐坐", "这两天", "这几天", "近几天", "最近几天", "评分高", "评分高的", "没", "远吗", "远不远", "远不", "近吗", "近不近", "附进", "付近",
	"严重不", "严重吗", "严不严重", "厉害吗", "大不大", "高不高", "目前", "当前", "眼下",
	"那种", "这种", "那样", "这样", "今儿", "明儿", "昨儿",
	// demonstratives, and fillers of speech (那个 就是 我想问一下 从成都东站到那个春熙路)
	"那", "那个", "我这", "我这里", "我这边", "这附近", "那天", "当天", "那一天", // Shanghainese, Cantonese and northern words of speech
	"阿拉", "侬", "俺", "咱", "咱们", "马上", "而家", "冇", "嘅", "咗", "喺", "啲", "乜", "点样", "几耐", "要几耐", "几多", "有几多", "点计", "等一下", "等下",
	"外头", "外面", "外边", "今早", "老说", "老是", "一直问", "嗯", "呃", "额", "哎妈呀", "哎妈", "哎呀", "哎哟", "哎", "哇塞", "我的妈呀", "就是说",
	// a verb and its result: 到 is no "to" (要靠窗能看到江景)
	"看到", "见到", "找到", "听到", "收到", "遇到", "想到", "做到", "得到", "吃到", "买到", "订到", "拿到", "碰到", "感到", "受到", "看得到", "看不到",
	// a comparison, never a place (要是AQI超过200); a count asked for (给我看3条)
	"超过", "高于", "给我看", "给我来", "对比", "对比一下", "比一比", "比比", "比较一下", "哪边", "哪一边", "哪个地方",
	// Sichuan, Hunan and northern words of speech (看哈 巴适的火锅, 啥子, 要好久, 小同志, 就算了)
	"看哈", "查哈", "查哈子", "看哈子", "帮我看哈", "随便", "饿死了", "饿死", "饿了", "算啦", "就算啦", "念书", "读书", "我娃", "娃", "已经", "再见", "嘛", "巴适", "安逸", "啥子", "要得", "耍", "整", "咯会子", "这会子", "好久", "要好久", "同志", "小同志", "算了", "就算了", "下星期", "这星期", "上星期", "下周末",
	// a preference the tool has no parameter for (下周一北京飞上海的机票，要最便宜的)
	"最便宜", "最便宜的", "便宜点", "便宜些", "便宜一点", "最快", "最快的", "直飞", "直飞的", "靠窗", "早一点", "晚一点",
	// (how things are, never a place: hanJudges, 雾霾好严重啊)
	// praise of food, never a place (曼谷有什么地道的泰国菜)
	"地道", "正宗", "实惠", "便宜", "有名", "出名", "高档", "热门", "网红", "人气", "靠谱",
	// a rate or a cap (每晚不超过800)
	"每晚", "每人", "每天", "每位", "不超过", "不要超过", "不高于", "低于", "最多",
	"瞅瞅", "瞅一眼", "瞅一下", "瞧瞧", "瞧一下", "看下", "查下", "找找", "搜搜", "小时", "个小时", "分钟", "钟头", "还是", "或者", "更", "比较", "哪个更", "几家", "几个", "人在", "记到", "记下", "记一下", "加到", "放到", "写到", "存到", "咋样", "啥", "有啥", "有什么", "好玩", "最近", "下周", "这周", "本周", "下个月", "多少钱", "怎么办", "边上", "一带", "市中心",
}

// conjunctions split a goal into clauses (besides punctuation).
var (
	englishConjunctions = map[string]bool{"and": true, "then": true, "also": true, "afterwards": true, "if": true, "but": true, "unless": true}
	englishConjPhrases  = [][]string{{"and", "then"}, {"as", "well", "as"}, {"after", "that"}, {"and", "also"}}
	hanConjunctions     = map[string]bool{"然后": true, "再": true, "顺便": true, "还有": true, "并且": true, "同时": true, "以及": true, "另外": true, "接着": true, "之后": true, "如果": true, "就": true, "假如": true, "要是": true, "和": true, "及": true, "跟": true, "并": true, "与": true}
)

// englishThere are words that refer back to a place named earlier; they are
// never read as a place themselves (nor are the Chinese ones, 那里 and 附近,
// which are function words above).
var englishThere = map[string]bool{"there": true, "nearby": true, "around": true, "locally": true}

// timeWords are not places even after "in" or "at".
var timeWords = map[string]bool{
	"morning": true, "afternoon": true, "evening": true, "night": true, "today": true, "tomorrow": true, "tonight": true,
	"minute": true, "minutes": true, "hour": true, "hours": true, "second": true, "seconds": true, "day": true, "days": true,
	"week": true, "weeks": true, "month": true, "months": true, "year": true, "years": true, "weekend": true, "noon": true,
	"moment": true, "future": true, "past": true, "general": true, "detail": true, "details": true, "order": true, "total": true,
	"celsius": true, "fahrenheit": true, "english": true, "chinese": true, "french": true, "parallel": true,
	"atm": true, "rn": true, "currently": true, "tmrw": true, "tmr": true, "tdy": true,
}

// hanNumerals are read as numbers: 三 → 3, 十二 → 12, 两百 → 200.
var hanNumerals = map[rune]int{'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '俩': 2, '仨': 3, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
var hanUnits = map[rune]int{'十': 10, '百': 100, '千': 1000, '万': 10000}

// bankNumerals and bankUnits are the numerals written on cheques and
// receipts (叁仟伍佰元): read as numerals only in a run of two or more,
// since alone some are names (伍, 陆).
var (
	bankNumerals = map[rune]int{'壹': 1, '贰': 2, '貳': 2, '叁': 3, '參': 3, '肆': 4, '伍': 5, '陆': 6, '陸': 6, '柒': 7, '捌': 8, '玖': 9}
	bankUnits    = map[rune]int{'拾': 10, '佰': 100, '仟': 1000, '萬': 10000}
)

// cuisineWords are kinds of food a parameter named cuisine asks for:
// cuisines by their people or place, and dishes (kindLists).
var cuisineWords = []string{
	"thai", "italian", "mexican", "indian", "french", "japanese", "chinese", "korean", "vietnamese", "greek", "turkish", "spanish",
	"lebanese", "ethiopian", "peruvian", "brazilian", "argentinian", "georgian", "moroccan", "persian", "iranian", "israeli", "german",
	"american", "british", "irish", "portuguese", "russian", "polish", "ukrainian", "hungarian", "austrian", "swiss", "belgian", "dutch",
	"scandinavian", "nordic", "malaysian", "indonesian", "filipino", "singaporean", "taiwanese", "cantonese", "sichuan", "szechuan",
	"hunan", "shanghainese", "nepalese", "nepali", "pakistani", "bangladeshi", "sri lankan", "afghan", "egyptian", "nigerian", "cuban",
	"caribbean", "jamaican", "colombian", "venezuelan", "chilean", "cajun", "creole", "tex-mex", "hawaiian", "mediterranean",
	"middle eastern", "asian", "latin", "african", "arabic", "uzbek", "armenian", "burmese", "cambodian", "laotian", "mongolian", "basque",
	"vegetarian", "vegan", "halal", "kosher", "gluten-free", "seafood",
	"sushi", "ramen", "pizza", "pasta", "tacos", "taco", "burrito", "burger", "burgers", "bbq", "barbecue", "steak", "steakhouse", "curry",
	"kebab", "dumplings", "dumpling", "dim sum", "pho", "noodles", "noodle", "udon", "tapas", "paella", "falafel", "shawarma", "hot pot",
	"hotpot", "fried chicken", "wings", "brisket", "oyster", "oysters", "lobster", "crab", "bagel", "bagels", "gelato", "dessert",
	"desserts", "brunch", "street food", "fish and chips", "biryani", "jollof", "injera", "ceviche", "empanadas", "arepas", "pierogi",
	"goulash", "borscht", "tagine", "couscous", "mezze", "hummus", "dosa", "thali", "momo", "momos", "laksa", "satay", "nasi goreng", "rendang",
	"banh mi", "pad thai", "tom yum", "bulgogi", "tteokbokki", "yakitori", "tempura", "okonomiyaki", "gyoza", "churros", "poutine", "fondue",
	"jerk chicken", "nyama choma", "waakye", "suya", "nasi lemak", "nasi kandar", "roti canai", "bak kut teh", "hokkien mee", "mee goreng", "char siu", "bunny chow", "roti", "chicken rice", "char kway teow", "ice cream", "bubble tea",
	"boba", "冰淇淋", "奶茶",
	"raclette", "kimbap", "xiaolongbao", "baozi", "churrascaria", "taqueria", "izakaya", "poke", "bibimbap", "kimchi", "khachapuri", "schnitzel", "crepes", "waffles",
	"寿司", "拉面", "披萨", "火锅", "烧烤", "烤肉", "海鲜", "早茶", "小吃", "烤鸭", "面条", "饺子", "包子", "牛排", "串串", "甜品", "日料",
	"川菜", "粤菜", "湘菜", "鲁菜", "浙菜", "徽菜", "闽菜", "苏菜", "本帮菜", "东北菜", "西北菜", "西餐", "中餐", "韩餐", "泰餐", "法餐",
	"意餐", "素食", "清真", "麻辣烫", "小龙虾", "螺蛳粉", "米线", "米粉", "煲仔饭", "点心", "汉堡", "炸鸡", "咖喱", "沙拉", "自助餐",
	"面馆", "粉店", "火锅店", "烧烤店", "热干面", "小笼包", "生煎", "煎饼", "肉夹馍", "凉皮", "羊肉串", "过桥米线", "烧麦", "锅包肉", "酸菜鱼", "烤鱼", "牛肉面", "炸酱面", "担担面", "肠粉", "茶餐厅", "大排档", "烤鸭店", "日料店", "西餐厅", "冰室", "糖水铺",
}

// cuisineHeads are nouns a kind of food stands before: "thai food",
// "pho spots", "georgian restaurants".
var cuisineHeads = []string{
	"food", "foods", "cuisine", "restaurant", "restaurants", "place", "places", "spot", "spots", "joint", "joints", "bar", "bars",
	"dishes", "dish", "kitchen", "eatery", "eateries", "house", "shop", "shops", "diner", "diners", "cafe", "cafes", "meal", "dinner", "lunch",
}

// kindAdjectives praise or size what follows and are no kind of it
// ("good thai food", "cheap eats").
var kindAdjectives = map[string]bool{
	"chop": true, "good": true, "best": true, "great": true, "nice": true, "cheap": true, "decent": true, "local": true, "top": true, "authentic": true,
	"rated": true, "tasty": true, "fancy": true, "popular": true, "famous": true, "new": true, "some": true, "any": true, "few": true,
	"nearby": true, "close": true, "closest": true, "nearest": true, "late": true, "open": true, "quick": true, "affordable": true,
	"romantic": true, "delicious": true, "yummy": true, "top-rated": true, "highly": true, "real": true, "proper": true, "cool": true,
	"fun": true, "little": true, "small": true, "big": true, "busy": true, "quiet": true, "cozy": true, "family": true, "kid-friendly": true,
}

// placeHeads are nouns that end the name of a place: "hoan kiem lake",
// "union square", "gion district" are places typed in lower case.
var placeHeads = map[string]bool{
	"lake": true, "park": true, "square": true, "station": true, "street": true, "st": true, "road": true, "avenue": true, "ave": true,
	"bridge": true, "tower": true, "market": true, "fountain": true, "museum": true, "temple": true, "airport": true, "beach": true,
	"palace": true, "gate": true, "district": true, "quarter": true, "hill": true, "hills": true, "island": true, "river": true, "bay": true,
	"plaza": true, "centre": true, "center": true, "mall": true, "university": true, "campus": true, "harbour": true, "harbor": true,
	"pier": true, "castle": true, "cathedral": true, "church": true, "mosque": true, "stadium": true, "garden": true, "gardens": true,
	"village": true, "town": true, "place": true, "circle": true, "port": true, "valley": true, "mountain": true, "peak": true, "falls": true, "boulevard": true, "shrine": true, "monument": true, "zoo": true, "aquarium": true, "terminal": true,
}

// actionVerbs lead a clause that asks for a step of its own, even of the
// tool of the clause before ("draw a cat, draw a dog"); English ones stemmed.
var actionVerbs = map[string]bool{
	"draw": true, "paint": true, "sketch": true, "generat": true, "generate": true, "creat": true, "create": true, "make": true, "render": true,
	"design": true, "search": true, "convert": true, "translat": true, "translate": true, "track": true, "send": true, "book": true, "add": true,
	"schedul": true, "schedule": true, "画": true, "生成": true, "查": true, "找": true, "搜": true, "换": true, "翻译": true, "发": true, "订": true, "加": true,
}

// withVerbs are done with someone: after 和/跟/与 and a name they make the
// conjunction mean "with" (和老王开会), not a new clause.
var withVerbs = map[string]bool{"开会": true, "吃饭": true, "见面": true, "见": true, "聊": true, "谈": true, "通话": true, "打电话": true,
	"视频": true, "约": true, "看房": true, "面试": true, "讨论": true, "碰头": true, "打球": true, "喝": true, "吃": true, "一起": true, "对接": true, "沟通": true}

// cuisineSuffix follow a place's name in a kind of food: 泰国菜, 日本料理.
var cuisineSuffix = map[string]bool{"菜": true, "料理": true, "餐": true, "菜馆": true, "风味": true}

// restaurantHeads name a place to eat: a country's name between 的 and
// one is its kind of food (那里的印度餐厅).
var restaurantHeads = map[string]bool{"餐厅": true, "餐馆": true, "馆子": true, "饭店": true, "饭馆": true, "菜馆": true, "小馆": true}
