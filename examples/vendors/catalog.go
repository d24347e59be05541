package vendors

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The example vendors.
const (
	WeatherA = "weather-a" // current_weather {city, units?} → {city, temp_c, condition, humidity, observed_at}
	WeatherB = "weather-b" // current_weather {location, units?} → {location, temperature, units, condition, humidity, observed_at}
	Maps     = "maps"      // route {from, to, mode?} → {distance_km, duration_min, mode, steps}
	Places   = "places"    // search_restaurants {near, cuisine?, limit?} → {results: [{name, rating, address, cuisine}]}
	Doubao   = "doubao"    // generate_image {prompt, size?} → PNG + {image_id, width, height, images}
	SD       = "sd"        // txt2img {text, width?, height?} → PNG + {seed, width, height, images}
)

// Names returns the names of all example vendors, sorted.
func Names() []string { return slices.Sorted(maps.Keys(catalog)) }

// toolSpec is one tool of an example vendor.
type toolSpec struct {
	name, description string
	input, output     string // raw JSON Schemas
	// garbageKey names the structured field that ModeGarbage replaces with a
	// string, which the output schema forbids.
	garbageKey string
	run        func(v *Vendor, args map[string]any) (*mcp.CallToolResult, error)
}

func (t toolSpec) serverTool(v *Vendor) server.ServerTool {
	// NewToolWithRawSchema, not NewTool + WithRawInputSchema: NewTool sets
	// InputSchema.Type, and Tool.MarshalJSON refuses a tool with both.
	tool := mcp.NewToolWithRawSchema(t.name, t.description, json.RawMessage(t.input))
	tool.RawOutputSchema = json.RawMessage(t.output)
	return server.ServerTool{
		Tool: tool,
		Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return t.run(v, req.GetArguments())
		},
	}
}

// lie makes res violate the tool's output schema, like a vendor whose
// answers drifted from what it declared.
func (t toolSpec) lie(res *mcp.CallToolResult) {
	if m, ok := res.StructuredContent.(map[string]any); ok && t.garbageKey != "" {
		m[t.garbageKey] = "n/a"
	}
}

var catalog = map[string][]toolSpec{
	WeatherA: {{
		name:        "current_weather",
		description: "Current weather for a city (weather-a). Units default to metric.",
		input: `{
  "type": "object",
  "properties": {
    "city": {"type": "string", "minLength": 1, "description": "City name, e.g. \"Paris\""},
    "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"}
  },
  "required": ["city"],
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "city": {"type": "string"},
    "temp_c": {"type": "number", "description": "Temperature in °C"},
    "temp_f": {"type": "number", "description": "Temperature in °F, with units=imperial"},
    "condition": {"type": "string", "enum": ["clear", "cloudy", "rain", "snow", "fog", "storm", "wind"]},
    "humidity": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Relative humidity, %"},
    "observed_at": {"type": "string", "format": "date-time"}
  },
  "required": ["city", "temp_c", "condition", "humidity", "observed_at"],
  "additionalProperties": false
}`,
		garbageKey: "temp_c",
		run:        weatherA,
	}},
	WeatherB: {{
		name:        "current_weather",
		description: "Current weather at a location (weather-b). Temperature is in the requested units, metric by default.",
		input: `{
  "type": "object",
  "properties": {
    "location": {"type": "string", "minLength": 1, "description": "Place name, e.g. \"Paris\""},
    "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"}
  },
  "required": ["location"],
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "location": {"type": "string"},
    "temperature": {"type": "number", "description": "°C with units=metric, °F with units=imperial"},
    "units": {"type": "string", "enum": ["metric", "imperial"]},
    "condition": {"type": "string", "enum": ["clear", "cloudy", "rain", "snow", "fog", "storm", "wind"]},
    "humidity": {"type": "integer", "minimum": 0, "maximum": 100},
    "observed_at": {"type": "string", "format": "date-time"}
  },
  "required": ["location", "temperature", "units", "condition", "humidity", "observed_at"],
  "additionalProperties": false
}`,
		garbageKey: "temperature",
		run:        weatherB,
	}},
	Maps: {{
		name:        "route",
		description: "Route between two places, with distance, duration and steps.",
		input: `{
  "type": "object",
  "properties": {
    "from": {"type": "string", "minLength": 1},
    "to": {"type": "string", "minLength": 1},
    "mode": {"type": "string", "enum": ["driving", "walking", "transit"], "default": "driving"}
  },
  "required": ["from", "to"],
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "distance_km": {"type": "number", "minimum": 0},
    "duration_min": {"type": "integer", "minimum": 1},
    "mode": {"type": "string", "enum": ["driving", "walking", "transit"]},
    "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}
  },
  "required": ["distance_km", "duration_min", "mode", "steps"],
  "additionalProperties": false
}`,
		garbageKey: "distance_km",
		run:        route,
	}},
	Places: {{
		name:        "search_restaurants",
		description: "Restaurants near a place, best rated first.",
		input: `{
  "type": "object",
  "properties": {
    "near": {"type": "string", "minLength": 1},
    "cuisine": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
  },
  "required": ["near"],
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "results": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "name": {"type": "string"},
          "rating": {"type": "number", "minimum": 1, "maximum": 5},
          "address": {"type": "string"},
          "cuisine": {"type": "string"}
        },
        "required": ["name", "rating", "address"],
        "additionalProperties": false
      }
    }
  },
  "required": ["results"],
  "additionalProperties": false
}`,
		garbageKey: "results",
		run:        searchRestaurants,
	}},
	Doubao: {{
		name:        "generate_image",
		description: "Generate an image from a prompt (cloud). Returns a PNG.",
		input: `{
  "type": "object",
  "properties": {
    "prompt": {"type": "string", "minLength": 1},
    "size": {"type": "string", "enum": ["512x512", "1024x1024"], "default": "1024x1024"}
  },
  "required": ["prompt"],
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "image_id": {"type": "string"},
    "width": {"type": "integer", "minimum": 1},
    "height": {"type": "integer", "minimum": 1},
    "images": {"type": "integer", "minimum": 1, "description": "Images generated: the billing unit"}
  },
  "required": ["image_id", "width", "height", "images"],
  "additionalProperties": false
}`,
		garbageKey: "width",
		run:        generateImage,
	}},
	SD: {{
		name:        "txt2img",
		description: "Text to image (self-hosted Stable Diffusion). Returns a PNG.",
		input: `{
  "type": "object",
  "properties": {
    "text": {"type": "string", "minLength": 1},
    "width": {"type": "integer", "minimum": 64, "maximum": 1024, "multipleOf": 8, "default": 512},
    "height": {"type": "integer", "minimum": 64, "maximum": 1024, "multipleOf": 8, "default": 512}
  },
  "required": ["text"],
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "seed": {"type": "integer", "minimum": 0},
    "width": {"type": "integer", "minimum": 1},
    "height": {"type": "integer", "minimum": 1},
    "images": {"type": "integer", "minimum": 1, "description": "Images generated: the billing unit"}
  },
  "required": ["seed", "width", "height", "images"],
  "additionalProperties": false
}`,
		garbageKey: "seed",
		run:        txt2img,
	}},
}

// observation is the fake weather both weather vendors report, so a test can
// check that weather-b mapped to weather-a's shape gives the same answer.
type observation struct {
	tempC     float64
	condition string
	humidity  int
}

func observe(place string) observation {
	r := rng(place)
	return observation{
		tempC:     round1(-10 + 45*r.Float64()),
		condition: []string{"clear", "cloudy", "rain", "snow", "fog", "storm", "wind"}[r.IntN(7)],
		humidity:  20 + r.IntN(80),
	}
}

func fahrenheit(c float64) float64 { return round1(c*9/5 + 32) }

func weatherA(v *Vendor, args map[string]any) (*mcp.CallToolResult, error) {
	city := strings.TrimSpace(str(args, "city", ""))
	o := observe(city)
	out := map[string]any{
		"city":        city,
		"temp_c":      o.tempC,
		"condition":   o.condition,
		"humidity":    o.humidity,
		"observed_at": v.now().UTC().Truncate(time.Minute).Format(time.RFC3339),
	}
	text := fmt.Sprintf("%s: %.1f°C, %s, humidity %d%%", city, o.tempC, o.condition, o.humidity)
	if str(args, "units", "metric") == "imperial" {
		out["temp_f"] = fahrenheit(o.tempC)
		text = fmt.Sprintf("%s: %.1f°F, %s, humidity %d%%", city, fahrenheit(o.tempC), o.condition, o.humidity)
	}
	return mcp.NewToolResultStructured(out, text), nil
}

func weatherB(v *Vendor, args map[string]any) (*mcp.CallToolResult, error) {
	loc := strings.TrimSpace(str(args, "location", ""))
	units := str(args, "units", "metric")
	o := observe(loc)
	temp, unit := o.tempC, "°C"
	if units == "imperial" {
		temp, unit = fahrenheit(o.tempC), "°F"
	}
	out := map[string]any{
		"location":    loc,
		"temperature": temp,
		"units":       units,
		"condition":   o.condition,
		"humidity":    o.humidity,
		"observed_at": v.now().UTC().Truncate(time.Minute).Format(time.RFC3339),
	}
	return mcp.NewToolResultStructured(out, fmt.Sprintf("%s %.1f%s %s", loc, temp, unit, o.condition)), nil
}

func route(_ *Vendor, args map[string]any) (*mcp.CallToolResult, error) {
	from, to := strings.TrimSpace(str(args, "from", "")), strings.TrimSpace(str(args, "to", ""))
	mode := str(args, "mode", "driving")
	r := rng(from, to)
	km := round1(2 + 600*r.Float64())
	if mode == "walking" {
		km = round1(0.5 + 30*r.Float64()) // nobody walks 600 km in an example
	}
	kmh := map[string]float64{"driving": 60, "walking": 5, "transit": 30}[mode]
	minutes := max(1, int(math.Round(km/kmh*60)))
	first := round1(km * (0.1 + 0.3*r.Float64()))
	steps := []string{
		fmt.Sprintf("Start at %s", from),
		fmt.Sprintf("Head %s for %.1f km", []string{"north", "east", "south", "west"}[r.IntN(4)], first),
		fmt.Sprintf("Continue on %s for %.1f km", []string{"Main St", "Route 9", "the ring road", "Line 2"}[r.IntN(4)], round1(km-first)),
		fmt.Sprintf("Arrive at %s", to),
	}
	out := map[string]any{"distance_km": km, "duration_min": minutes, "mode": mode, "steps": steps}
	return mcp.NewToolResultStructured(out, fmt.Sprintf("%s → %s: %.1f km, %d min by %s", from, to, km, minutes, mode)), nil
}

func searchRestaurants(_ *Vendor, args map[string]any) (*mcp.CallToolResult, error) {
	near := strings.TrimSpace(str(args, "near", ""))
	cuisine := strings.TrimSpace(str(args, "cuisine", ""))
	limit := integer(args, "limit", 5)
	r := rng(near, cuisine)
	cuisines := []string{"Sichuan", "Italian", "Japanese", "Mexican", "Indian", "French", "Thai"}
	results := make([]any, limit)
	for i := range results {
		c := cuisine
		if c == "" {
			c = cuisines[r.IntN(len(cuisines))]
		}
		results[i] = map[string]any{
			"name": fmt.Sprintf("%s %s %s",
				[]string{"Golden", "Little", "Blue", "Old Town", "Corner", "Happy", "Royal"}[r.IntN(7)], c,
				[]string{"Kitchen", "House", "Table", "Garden", "Bistro", "Bar"}[r.IntN(6)]),
			"rating":  round1(5 - 0.15*float64(i) - 0.1*r.Float64()), // best first, ≥ 1.9
			"address": fmt.Sprintf("%d %s, %s", 1+r.IntN(200), []string{"High St", "Market Rd", "River Ln", "Station Sq"}[r.IntN(4)], near),
			"cuisine": c,
		}
	}
	out := map[string]any{"results": results}
	return mcp.NewToolResultStructured(out, fmt.Sprintf("%d restaurants near %s", limit, near)), nil
}

func generateImage(_ *Vendor, args map[string]any) (*mcp.CallToolResult, error) {
	prompt, size := str(args, "prompt", ""), str(args, "size", "1024x1024")
	side := 1024
	if size == "512x512" {
		side = 512
	}
	h := hash(prompt, size)
	img, err := renderPNG(h, side, side)
	if err != nil {
		return nil, fmt.Errorf("doubao: generate_image: %w", err)
	}
	id := fmt.Sprintf("img_%012x", h&(1<<48-1))
	out := map[string]any{"image_id": id, "width": side, "height": side, "images": 1}
	return &mcp.CallToolResult{
		Content: []mcp.Content{
			mcp.NewImageContent(base64.StdEncoding.EncodeToString(img), "image/png"),
			mcp.NewTextContent(fmt.Sprintf("Generated %s (%dx%d) for %q", id, side, side, prompt)),
		},
		StructuredContent: out,
	}, nil
}

func txt2img(_ *Vendor, args map[string]any) (*mcp.CallToolResult, error) {
	text := str(args, "text", "")
	w, h := integer(args, "width", 512), integer(args, "height", 512)
	seed := hash(text) & (1<<31 - 1)
	img, err := renderPNG(seed, w, h)
	if err != nil {
		return nil, fmt.Errorf("sd: txt2img: %w", err)
	}
	out := map[string]any{"seed": seed, "width": w, "height": h, "images": 1}
	return &mcp.CallToolResult{
		Content: []mcp.Content{
			mcp.NewImageContent(base64.StdEncoding.EncodeToString(img), "image/png"),
			mcp.NewTextContent(fmt.Sprintf("seed %d, %dx%d", seed, w, h)),
		},
		StructuredContent: out,
	}, nil
}

// hash folds parts, case- and space-insensitively, into a seed.
func hash(parts ...string) uint64 {
	f := fnv.New64a()
	for _, p := range parts {
		f.Write([]byte(strings.ToLower(strings.TrimSpace(p))))
		f.Write([]byte{0})
	}
	return f.Sum64()
}

// rng is a deterministic random source for the given inputs.
func rng(parts ...string) *rand.Rand {
	h := hash(parts...)
	return rand.New(rand.NewPCG(h, h^0x9e3779b97f4a7c15))
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func str(args map[string]any, key, def string) string {
	if s, ok := args[key].(string); ok && s != "" {
		return s
	}
	return def
}

func integer(args map[string]any, key string, def int) int {
	switch n := args[key].(type) {
	case float64:
		return int(n)
	case int:
		return n
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	return def
}
