package orchestrator

import (
	_ "embed"
	"strings"
)

// gazetteerText lists place names of the world in Chinese and English
// (gazetteer.txt): the Chinese names are words of the segmenter's
// dictionary, and their English names name enum values (日本 → "jp Japan").
//
//go:embed gazetteer.txt
var gazetteerText string

func init() {
	for _, line := range strings.Split(gazetteerText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		zh, en, _ := strings.Cut(line, "\t")
		first, _, _ := strings.Cut(en, ",")
		for _, w := range strings.Split(zh, ",") {
			if w = strings.TrimSpace(w); w != "" {
				hanPlaceNames[w] = strings.TrimSpace(first)
				baseDict.add(w, hanWord{place: true})
			}
		}
	}
}
