package toolcorpus

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/toolhub/toolhub/registry"
)

// ToolsPerVendor is how many tools each generated vendor serves: its
// domain's functions and some of the generic ones.
const ToolsPerVendor = 10

// Vendor is one generated vendor.
type Vendor struct {
	ID      string
	Domain  string
	Chinese bool // describes its tools in Chinese, with Chinese keywords
	Tools   []registry.ToolDef
	// Keywords are the vendor's keywords: by tool name (registry.Vendor.Keywords).
	Keywords map[string][]string
}

// Goal is one user goal with the function that answers it.
type Goal struct {
	Text string `json:"goal"`
	Lang string `json:"lang"` // en or zh
	// Function is the function that answers it ("weather.current"): every
	// vendor's tool of that function is a right answer.
	Function string `json:"function"`
	// Half is "tune" or "held-out": ranking may be tuned on the first
	// half only.
	Half string `json:"half"`
}

// Corpus is a generated catalog and its goals.
type Corpus struct {
	Vendors []Vendor
	Goals   []Goal
	fn      map[[2]string]string // vendor, tool → function
}

// Function returns the function of vendor's tool ("" for none).
func (c *Corpus) Function(vendor, tool string) string { return c.fn[[2]string{vendor, tool}] }

// Tools counts the corpus's tools.
func (c *Corpus) Tools() int {
	n := 0
	for _, v := range c.Vendors {
		n += len(v.Tools)
	}
	return n
}

type function struct {
	key, zh, params string
	names, en, kw   []string
	goalEN, goalZH  string
}

func parse(line string) function {
	f := strings.Split(line, "|")
	for len(f) < 8 {
		f = append(f, "")
	}
	list := func(s, sep string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, sep)
	}
	return function{key: f[0], names: list(f[1], ","), en: list(f[2], ";"), zh: f[3], kw: list(f[4], ","), params: f[5], goalEN: f[6], goalZH: f[7]}
}

// schema is the input schema of "name:type:description,…".
func schema(params string) json.RawMessage {
	props := map[string]any{}
	var req []string
	for _, p := range strings.Split(params, ",") {
		if p == "" {
			continue
		}
		f := strings.SplitN(p, ":", 3)
		props[f[0]] = map[string]any{"type": f[1], "description": f[2]}
		if len(req) == 0 {
			req = append(req, f[0]) // the first parameter is required
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(req) > 0 {
		s["required"] = req
	}
	b, _ := json.Marshal(s)
	return b
}

// Goals returns the goal set: for each domain function one English and
// one Chinese goal, split between the halves so that each half has as
// many of each language.
func Goals() []Goal {
	var out []Goal
	i := 0
	for _, d := range domains {
		for _, line := range d.fns {
			f := parse(line)
			en, zh := "tune", "held-out"
			if i%2 == 1 {
				en, zh = zh, en
			}
			out = append(out, Goal{Text: f.goalEN, Lang: "en", Function: f.key, Half: en}, Goal{Text: f.goalZH, Lang: "zh", Function: f.key, Half: zh})
			i++
		}
	}
	return out
}

// Generate makes n vendors of [ToolsPerVendor] tools each from seed: the
// domains in turn (so every domain has near-duplicates from n = 50 up),
// each vendor naming and describing its domain's functions its own way,
// a third of them in Chinese.
func Generate(n int, seed uint64) *Corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Corpus{Goals: Goals(), fn: map[[2]string]string{}}
	gen := make([]function, len(generic))
	for i, l := range generic {
		gen[i] = parse(l)
	}
	for i := 0; i < n; i++ {
		d := domains[i%len(domains)]
		brand := d.brands[(i/len(domains))%len(d.brands)]
		v := Vendor{ID: fmt.Sprintf("%s-%s-%d", d.name, brand, i/len(domains)), Domain: d.name, Chinese: rng.IntN(3) == 0}
		fns := make([]function, 0, ToolsPerVendor)
		for _, l := range d.fns {
			fns = append(fns, parse(l))
		}
		for _, j := range rng.Perm(len(gen))[:ToolsPerVendor-len(fns)] {
			fns = append(fns, gen[j])
		}
		for _, f := range fns {
			def := registry.ToolDef{Name: f.names[rng.IntN(len(f.names))], InputSchema: schema(f.params)}
			switch {
			case v.Chinese:
				def.Description = f.zh
				if len(f.kw) > 0 {
					if v.Keywords == nil {
						v.Keywords = map[string][]string{}
					}
					v.Keywords[def.Name] = f.kw
				}
			default:
				def.Description = f.en[rng.IntN(len(f.en))]
				if rng.IntN(2) == 0 {
					def.Description += " Powered by " + strings.ToUpper(brand[:1]) + brand[1:] + "."
				}
			}
			v.Tools = append(v.Tools, def)
			c.fn[[2]string{v.ID, def.Name}] = f.key
		}
		c.Vendors = append(c.Vendors, v)
	}
	return c
}
