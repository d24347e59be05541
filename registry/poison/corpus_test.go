package poison_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/poison"
)

// entry is one line of a corpus file: a tool as a vendor's tools/list
// gives it and whether it is poisoned.
type entry struct {
	Poison bool             `json:"poison"`
	Tool   registry.ToolDef `json:"tool"`
}

func loadCorpus(t *testing.T, name string) []entry {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type score struct{ tp, fp, fn, tn int }

func (s score) precision() float64 { return float64(s.tp) / float64(max(s.tp+s.fp, 1)) }
func (s score) recall() float64    { return float64(s.tp) / float64(max(s.tp+s.fn, 1)) }

func (s *score) add(o score) { s.tp += o.tp; s.fp += o.fp; s.fn += o.fn; s.tn += o.tn }

func scoreCorpus(t *testing.T, name string) score {
	var s score
	for _, e := range loadCorpus(t, name) {
		fs := poison.ScanTool(e.Tool)
		switch flagged := len(fs) > 0; {
		case flagged && e.Poison:
			s.tp++
		case flagged:
			s.fp++
			t.Logf("%s: false positive %q: %+v", name, e.Tool.Name, fs)
		case e.Poison:
			s.fn++
			t.Logf("%s: missed %q: %q", name, e.Tool.Name, e.Tool.Description)
		default:
			s.tn++
		}
	}
	return s
}

// TestCorpus is the scanner's measure: tuning.jsonl is what the rules were
// tuned on, heldout.jsonl was written before any rule and not tuned on.
// The figures are in docs/security.md.
func TestCorpus(t *testing.T) {
	var all score
	for _, name := range []string{"tuning.jsonl", "heldout.jsonl"} {
		s := scoreCorpus(t, name)
		t.Logf("%-14s poisoned %3d clean %3d  tp %3d fp %2d fn %2d  precision %.3f recall %.3f",
			name, s.tp+s.fn, s.fp+s.tn, s.tp, s.fp, s.fn, s.precision(), s.recall())
		all.add(s)
	}
	t.Logf("%-14s poisoned %3d clean %3d  tp %3d fp %2d fn %2d  precision %.3f recall %.3f",
		"all", all.tp+all.fn, all.fp+all.tn, all.tp, all.fp, all.fn, all.precision(), all.recall())
	if all.tp+all.fn < 150 || all.fp+all.tn < 150 {
		t.Errorf("corpus has %d poisoned and %d clean tools, want at least 150 of each", all.tp+all.fn, all.fp+all.tn)
	}
	if all.precision() < 0.95 || all.recall() < 0.95 {
		t.Errorf("precision %.3f, recall %.3f on the whole corpus, want both ≥ 0.95", all.precision(), all.recall())
	}
}

// A long text is scanned in windows around anchors: every finding of a
// corpus text is found, at the same place, with 6 KiB of clean text on
// each side of it.
func TestLongTextWindows(t *testing.T) {
	pad := strings.Repeat("Sunny, 21°C, humidity 40%. 明天多云。 ", 6<<10/40)
	for _, name := range []string{"tuning.jsonl", "heldout.jsonl"} {
		for _, e := range loadCorpus(t, name) {
			text := e.Tool.Description
			want := poison.ScanText("d", text)
			got := poison.ScanText("d", pad+text+" "+pad)
			for i := range want {
				want[i].Offset += len(pad)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %q (-whole +windows):\n%s", name, e.Tool.Name, diff)
			}
		}
	}
}
