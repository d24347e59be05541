package vendors

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
)

// renderPNG draws a w×h PNG of colored tiles chosen by seed: a real, valid
// image that stays small and cheap at 1024×1024 (a paletted image of flat
// tiles compresses to a few kilobytes).
func renderPNG(seed uint64, w, h int) ([]byte, error) {
	palette := make(color.Palette, 4)
	for i := range palette {
		s := seed >> (i * 12)
		palette[i] = color.RGBA{R: uint8(s), G: uint8(s >> 4), B: uint8(s >> 8), A: 0xff}
	}
	img := image.NewPaletted(image.Rect(0, 0, w, h), palette)
	const tile = 64
	for y := range h {
		for x := range w {
			img.Pix[y*img.Stride+x] = uint8((x/tile + y/tile + int(seed>>60)) % len(palette))
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
