package vendors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"sync"
)

// renderPNG draws a w×h PNG of colored tiles chosen by seed: a real, valid
// image that stays small and cheap at 1024×1024 (a paletted image of flat
// tiles compresses to a few kilobytes).
//
// The tiles' layout depends on the size and on seed>>60 mod 4 only; the
// seed's colors live in the PNG's palette (its PLTE chunk). So the encoded
// bytes of each layout are kept, and a seed's image is that layout with
// its own palette written in: byte for byte the PNG that encoding the
// image would give (TestRenderPNGSameBytes), without encoding a megapixel
// per call, which the example vendors, run in the hub's process by the
// drills, would otherwise charge to the hub's CPU.
func renderPNG(seed uint64, w, h int) ([]byte, error) {
	pal := tilePalette(seed)
	key := tileLayout{w: w, h: h, shift: int(seed>>60) % len(pal)}
	layouts.Lock()
	tmpl, ok := layouts.m[key]
	layouts.Unlock()
	if ok {
		return withPalette(tmpl, pal)
	}
	b, err := encodeTiles(pal, w, h, key.shift)
	if err != nil {
		return nil, err
	}
	layouts.Lock()
	if len(layouts.m) < maxLayouts {
		layouts.m[key] = b
	}
	layouts.Unlock()
	return bytes.Clone(b), nil
}

// tileLayout is what the pixels of a rendered image depend on.
type tileLayout struct{ w, h, shift int }

// maxLayouts bounds the encoded layouts kept (sizes come from arguments).
const maxLayouts = 64

var layouts = struct {
	sync.Mutex
	m map[tileLayout][]byte
}{m: map[tileLayout][]byte{}}

func tilePalette(seed uint64) color.Palette {
	palette := make(color.Palette, 4)
	for i := range palette {
		s := seed >> (i * 12)
		palette[i] = color.RGBA{R: uint8(s), G: uint8(s >> 4), B: uint8(s >> 8), A: 0xff}
	}
	return palette
}

// encodeTiles encodes the image itself.
func encodeTiles(palette color.Palette, w, h, shift int) ([]byte, error) {
	img := image.NewPaletted(image.Rect(0, 0, w, h), palette)
	const tile = 64
	for y := range h {
		for x := range w {
			img.Pix[y*img.Stride+x] = uint8((x/tile + y/tile + shift) % len(palette))
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// withPalette returns a copy of the PNG b with its PLTE chunk's colors
// (opaque, as many as b has) replaced by pal's, and the chunk's CRC redone.
func withPalette(b []byte, pal color.Palette) ([]byte, error) {
	out := bytes.Clone(b)
	for i := 8; i+12 <= len(out); { // after the signature: length, type, data, CRC
		n := int(binary.BigEndian.Uint32(out[i:]))
		if i+12+n > len(out) {
			break
		}
		if string(out[i+4:i+8]) == "PLTE" {
			if n != 3*len(pal) {
				break
			}
			data := out[i+8 : i+8+n]
			for j, c := range pal {
				r, g, b, _ := c.RGBA()
				data[3*j], data[3*j+1], data[3*j+2] = uint8(r>>8), uint8(g>>8), uint8(b>>8)
			}
			binary.BigEndian.PutUint32(out[i+8+n:], crc32.ChecksumIEEE(out[i+4:i+8+n]))
			return out, nil
		}
		i += 12 + n
	}
	return nil, errors.New("vendors: render: no PLTE chunk of the palette's size in the kept PNG")
}
