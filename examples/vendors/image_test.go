package vendors

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

// encodeDirect is how renderPNG encoded every image before it kept layouts.
func encodeDirect(seed uint64, w, h int) []byte {
	palette := tilePalette(seed)
	img := image.NewPaletted(image.Rect(0, 0, w, h), palette)
	for y := range h {
		for x := range w {
			img.Pix[y*img.Stride+x] = uint8((x/64 + y/64 + int(seed>>60)) % len(palette))
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// TestRenderPNGSameBytes: an image made from a kept layout with the seed's
// palette written in is byte for byte the PNG that encoding it gives.
func TestRenderPNGSameBytes(t *testing.T) {
	for _, size := range [][2]int{{1024, 1024}, {512, 512}, {100, 37}} {
		for _, seed := range []uint64{0, 1, 0x0123456789abcdef, 0xfedcba9876543210, 1 << 61, 3 << 60, 7 << 60, ^uint64(0)} {
			want := encodeDirect(seed, size[0], size[1]) // once: the race detector makes it slow
			for range 2 {                                // the first may encode, the second uses the kept layout
				got, err := renderPNG(seed, size[0], size[1])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("seed %#x, %dx%d: rendered PNG differs from the encoded image", seed, size[0], size[1])
				}
			}
		}
	}
}

func BenchmarkRenderPNG(b *testing.B) {
	for i := range b.N {
		if _, err := renderPNG(uint64(i)*0x9e3779b97f4a7c15, 1024, 1024); err != nil {
			b.Fatal(err)
		}
	}
}
