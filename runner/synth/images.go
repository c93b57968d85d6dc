package synth

import (
	"bytes"
	"encoding/base64"
	"hash/fnv"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"

	"github.com/runnerbench/runner/scenario"
)

// Images in prompts: a prompt set's images block adds Count images to each
// chat request, as data URLs. Synthetic images are drawn from the stage's
// seed and the request's place (level, seq), so a rerun sends the same
// bytes, and every request's differ (an engine's image cache would
// otherwise make their encoding free) unless the plan asks for repeat.

// Images makes a stage's images.
type Images struct {
	im  *scenario.Images
	key uint64 // the stage's seed and name

	same      []string // repeat: the one set every request sends
	sameBytes int
}

// NewImages is the images of a prompt set's images block for stage, drawn
// from its seed (nil for none). The stage's name is part of the draw: two
// stages on one prompt set (their seeds alike by default) send different
// images at the same level and request.
func NewImages(im *scenario.Images, seed int64, stage string) *Images {
	if im == nil {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(stage))
	p := &Images{im: im, key: uint64(seed) ^ 0x696d616765 ^ h.Sum64()}
	if im.Repeat {
		p.same, p.sameBytes = p.make(0, 0)
	}
	return p
}

// ForRequest is request (level, seq)'s images as data URLs, and their
// bytes before encoding.
func (p *Images) ForRequest(level, seq int) ([]string, int) {
	if p.same != nil {
		return p.same, p.sameBytes
	}
	return p.make(level, seq)
}

func (p *Images) make(level, seq int) ([]string, int) {
	im := p.im
	out := make([]string, im.Count)
	total := 0
	for k := range out {
		var mt string
		var data []byte
		if len(im.Loaded) > 0 {
			f := im.Loaded[(seq*im.Count+k)%len(im.Loaded)]
			mt, data = f.MediaType, f.Data
		} else {
			r := rand.New(rand.NewPCG(p.key, uint64(level)<<40|uint64(uint32(seq))<<8|uint64(k)))
			mt, data = synthImage(r, im.Width, im.Height, im.Format)
		}
		total += len(data)
		out[k] = "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data)
	}
	return out, total
}

// synthImage draws a w×h image from r: a two-colour gradient with a few
// rectangles over it, cheap to draw and encode (a noise image of 512×512
// would take a PNG encoder tens of milliseconds), and different for every r.
func synthImage(r *rand.Rand, w, h int, format scenario.ImageFormat) (string, []byte) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	c0 := color.RGBA{uint8(r.UintN(256)), uint8(r.UintN(256)), uint8(r.UintN(256)), 255}
	c1 := color.RGBA{uint8(r.UintN(256)), uint8(r.UintN(256)), uint8(r.UintN(256)), 255}
	for y := range h {
		t := y * 256 / h
		c := color.RGBA{mix(c0.R, c1.R, t), mix(c0.G, c1.G, t), mix(c0.B, c1.B, t), 255}
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for x := 0; x < len(row); x += 4 {
			row[x], row[x+1], row[x+2], row[x+3] = c.R, c.G, c.B, 255
		}
	}
	for range 8 {
		x0, y0 := int(r.UintN(uint(w))), int(r.UintN(uint(h)))
		x1, y1 := min(w, x0+1+int(r.UintN(uint(max(1, w/3))))), min(h, y0+1+int(r.UintN(uint(max(1, h/3)))))
		cr, cg, cb := uint8(r.UintN(256)), uint8(r.UintN(256)), uint8(r.UintN(256))
		for y := y0; y < y1; y++ {
			row := img.Pix[y*img.Stride:]
			for x := x0; x < x1; x++ {
				row[4*x], row[4*x+1], row[4*x+2] = cr, cg, cb
			}
		}
	}
	var b bytes.Buffer
	if format == scenario.ImageJPEG {
		_ = jpeg.Encode(&b, img, &jpeg.Options{Quality: 85})
		return "image/jpeg", b.Bytes()
	}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	_ = enc.Encode(&b, img)
	return "image/png", b.Bytes()
}

func mix(a, b uint8, t int) uint8 { return uint8((int(a)*(256-t) + int(b)*t) / 256) }
