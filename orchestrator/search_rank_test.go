package orchestrator

import (
	"testing"

	"github.com/toolhub/toolhub/registry"
)

// The first hit of each query is the tool that does what it asks, in a
// catalog where another tool shares its words less well: each case is a
// class of query the ranking used to get wrong (the wrong tool tied or
// won, or nothing was found).
func TestSearchRanksClasses(t *testing.T) {
	none := `{}`
	text := `{"q":{"type":"string"}}`
	tools := []schemaTool{
		// A concept word in a name ("hot" is weather) ties with the tool
		// that says the query's word ("rain").
		{"a-news", def("hot_searches", "Trending searches on social media.", none)},
		{"b-weather", def("weather_forecast", "Forecast for the next days: rain chance.", none)},
		// Chinese: 取消 (cancel) and the keyword 取消订单 against a tool
		// whose keyword is the one word 酒店 (hotel).
		{"a-hotel", def("search_hotels", "搜索城市里可预订的酒店", none)},
		{"b-hotel", def("cancel_booking", "取消酒店预订", none)},
		// Soft stop words: "plan a trip" says what the tool does.
		{"c-travel", def("plan_trip", "Plan a day-by-day travel itinerary.", none)},
		// PM2.5 is read as the catalog reads it.
		{"d-air", def("air_quality", "Air quality index (PM2.5, ozone) for a city.", none)},
		// "check me in" is the phrase "check in".
		{"e-air", def("online_checkin", "Check in online for a flight and get a boarding pass.", none)},
		{"e-air", def("search_flights", "Search flights between two airports.", none)},
		// The place a query names says where, not what.
		{"f-air", def("airport_info", "Information about an airport: terminals and delays.", none)},
		{"f-ride", def("request_ride", "Request a taxi to a destination.", text)},
		// A month is not a typo ("march" is not "match").
		{"a-sport", def("match_odds", "Betting odds for a match.", none)},
	}
	kw := map[string][]string{"a-hotel__search_hotels": {"酒店"}, "b-hotel__cancel_booking": {"取消订单", "退订"}}
	p := offlineFor(t, newSchemaHub(t, tools, nil, nil))
	p.Keywords = func(e registry.Entry) []string { return kw[e.Name] }
	wantFirst(t, p, []searchCase{
		{"will it rain in London", "b-weather__weather_forecast"},
		{"帮我取消酒店订单", "b-hotel__cancel_booking"},
		{"plan a 3 day trip to Kyoto", "c-travel__plan_trip"},
		{"成都PM2.5多少", "d-air__air_quality"},
		{"check me in for my flight", "e-air__online_checkin"},
		{"get me a taxi to the airport", "f-ride__request_ride"},
		{"cheap flights to bangkok in march", "e-air__search_flights"},
	})
}

// Tool search takes first the entry the scores choose, not the one the
// planner prefers for a clause's first word ("make" → generate_image) or
// without its generic words; a dish read by its last character (可乐鸡翅)
// weighs as a place does, so "its recipe" is the recipe tool; 民宿 is a
// vacation rental, not a hotel.
func TestSearchRanksPlannerPreferences(t *testing.T) {
	none := `{}`
	prompt := `{"prompt":{"type":"string","description":"what to draw"}}`
	tools := []schemaTool{
		{"a-image", def("upscale_image", "Upscale a photo to a higher resolution.", none)},
		{"a-image", def("generate_image", "Generate an image from a text prompt.", prompt, "prompt")},
		{"b-food", def("recipe_steps", "菜谱：一道菜的做法", none)},
		{"b-food", def("restaurant_guide", "附近的餐厅和美食", none)},
		{"c-stay", def("hotel_rooms", "酒店客房", none)},
		{"c-stay", def("vacation_rentals", "短租民宿和公寓", none)},
	}
	p := offlineFor(t, newSchemaHub(t, tools, nil, nil))
	wantFirst(t, p, []searchCase{
		{"make this photo higher resolution", "a-image__upscale_image"},
		{"可乐鸡翅的做法", "b-food__recipe_steps"},
		{"在大理找一家民宿住一周", "c-stay__vacation_rentals"},
	})
}

// searchCase is a query and the entry tool search must rank first.
type searchCase struct{ query, want string }

// wantFirst checks that each case's query ranks its entry first.
func wantFirst(t *testing.T, p *Planner, cases []searchCase) {
	t.Helper()
	for _, c := range cases {
		hits := p.Search("default", c.query, 3)
		var got []string
		for _, h := range hits {
			got = append(got, h.Entry.Name)
		}
		if len(got) == 0 || got[0] != c.want {
			t.Errorf("%q: hits %v, want %s first", c.query, got, c.want)
		}
	}
}
