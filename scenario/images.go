package scenario

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/runnerbench/runner/protocol"
)

// Images adds images to every request of a prompt set, sent as data URLs in
// the chat (or Responses) content: synthetic ones, generated from the stage's seed, or
// image files from the plan's tree.
type Images struct {
	// Count is the images per request, 1–16. Default 1.
	Count int `yaml:"count,omitempty" json:"count,omitempty"`
	// Width and Height are a synthetic image's size in pixels, 1–4096 each.
	Width  int `yaml:"width,omitempty" json:"width,omitempty"`
	Height int `yaml:"height,omitempty" json:"height,omitempty"`
	// Format is a synthetic image's encoding: png (default) or jpeg.
	Format ImageFormat `yaml:"format,omitempty" json:"format,omitempty"`
	// Files are image files (PNG, JPEG, GIF or WebP, by their content) inside the plan's directory (or an --allow-dir one), sent instead of synthetic images, in turn.
	Files []string `yaml:"files,omitempty" json:"files,omitempty"`
	// Repeat sends the same images with every request (to measure an image cache on purpose); by default every request's synthetic images differ, so an engine's cache cannot make them free.
	Repeat bool `yaml:"repeat,omitempty" json:"repeat,omitempty"`

	// Loaded is Files' contents (filled by the loader).
	Loaded []ImageFile `yaml:"-" json:"-"`
}

// ImageFile is an image file the plan names, as read.
type ImageFile struct {
	MediaType string // image/png, image/jpeg, image/gif or image/webp
	Data      []byte
}

// ImageFormat is a synthetic image's encoding.
type ImageFormat string

// Image formats.
const (
	ImagePNG  ImageFormat = "png"
	ImageJPEG ImageFormat = "jpeg"
)

// Bounds on images.
const (
	MaxImagesPerRequest = 16
	MaxImageSide        = 4096
	maxImageFileBytes   = 20 << 20
)

// ImageFormats are the synthetic image encodings.
var ImageFormats = []ImageFormat{ImagePNG, ImageJPEG}

// imageTypes are the media types an image file may have (what vision
// servers take in a data URL).
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// images checks a prompt set's images block.
func (v *validator) images(path string, im *Images) {
	ip := path + ".images"
	if im.Count < 0 || im.Count > MaxImagesPerRequest {
		v.errf(ip+".count", "%s: count must be between 1 and %d, got %d", ip, MaxImagesPerRequest, im.Count)
	} else if im.Count == 0 && v.has(ip+".count") {
		v.errf(ip+".count", "%s: count must be at least 1", ip)
	}
	enum(v, ip+".format", im.Format, ImageFormats)
	if len(im.Files) > 0 {
		for _, f := range []string{"width", "height", "format"} {
			if v.has(ip + "." + f) {
				v.errf(ip+"."+f, "%s: %s applies to synthetic images, not files", ip, f)
			}
		}
		return
	}
	if v.has(ip + ".files") {
		v.errf(ip+".files", "%s: files list is empty", ip)
		return
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"width", im.Width}, {"height", im.Height}} {
		switch {
		case !v.has(ip + "." + c.name):
			v.errf(ip, "%s: a synthetic image needs width and height (or give files)", ip)
			return
		case c.n < 1 || c.n > MaxImageSide:
			v.errf(ip+"."+c.name, "%s: %s must be between 1 and %d pixels, got %d", ip, c.name, MaxImageSide, c.n)
		}
	}
}

// loadImages reads every prompt set's image files, each through the plan's
// file rules, and checks that it is an image.
func (v *validator) loadImages() {
	for name, ps := range v.plan.Prompts {
		if ps == nil || ps.Images == nil {
			continue
		}
		im := ps.Images
		for i, f := range im.Files {
			fp := fmt.Sprintf("prompts.%s.images.files[%d]", name, i)
			data, ok := v.readPlanFile(fp, f, "image file", maxImageFileBytes)
			if !ok {
				continue
			}
			mt := http.DetectContentType(data)
			if !slices.Contains(imageTypes, mt) {
				v.errf(fp, "%s: %q is not a PNG, JPEG, GIF or WebP image (its content reads as %s)", fp, f, mt)
				continue
			}
			im.Loaded = append(im.Loaded, ImageFile{MediaType: mt, Data: data})
		}
	}
}

// stageImages checks that a stage whose prompt set has images speaks an
// API that can carry them.
func (v *validator) stageImages(path string, s *Stage, ps *PromptSet) {
	if ps == nil || ps.Images == nil || s.API == "" || is[protocol.ImageTaker](s.API, true) {
		return
	}
	v.errf(path+".api", "%s: prompt set %q has images, which api: %s cannot send (use api: %s)", path, s.Prompts, s.API, namesOf[protocol.ImageTaker]())
}
