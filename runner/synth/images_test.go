package synth

import (
	"testing"

	"github.com/runnerbench/runner/scenario"
)

// TestImagesDiffer: a stage's images are a function of its seed, its name
// and the request's place: the same again for the same three, different
// for another request, another stage on the same prompt set, another seed.
func TestImagesDiffer(t *testing.T) {
	im := &scenario.Images{Count: 2, Width: 32, Height: 24, Format: scenario.ImagePNG}
	a, _ := NewImages(im, 1, "a").ForRequest(0, 0)
	again, _ := NewImages(im, 1, "a").ForRequest(0, 0)
	if a[0] != again[0] || a[1] != again[1] {
		t.Fatal("the same stage, seed and request drew other images")
	}
	if a[0] == a[1] {
		t.Fatal("a request's two images are the same")
	}
	for name, other := range map[string][]string{
		"next request":  first(NewImages(im, 1, "a").ForRequest(0, 1)),
		"next level":    first(NewImages(im, 1, "a").ForRequest(1, 0)),
		"another stage": first(NewImages(im, 1, "b").ForRequest(0, 0)),
		"another seed":  first(NewImages(im, 2, "a").ForRequest(0, 0)),
	} {
		if other[0] == a[0] || other[1] == a[1] {
			t.Errorf("%s: the same image as request 0 of stage a", name)
		}
	}
	if NewImages(nil, 1, "a") != nil {
		t.Fatal("no images block, yet images")
	}
}

func first(urls []string, _ int) []string { return urls }
