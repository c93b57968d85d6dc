package sim

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image_url parts may carry GIF, JPEG or PNG
	_ "image/jpeg"
	_ "image/png"
	"strings"
)

// imagePatch is the side of the square of pixels one image token stands
// for, as a vision encoder's patches (merged 2×2 from 14-pixel patches, as
// Qwen2-VL's are), and imageFrameTokens the tokens that open and close an
// image in the prompt.
const (
	imagePatch       = 28
	imageFrameTokens = 2
)

// imageTokens is what an image_url part costs in the prompt: one token per
// imagePatch² pixels (rounded up on each side) and its frame. The simulator
// reads only data URLs (it fetches nothing); their image header gives the
// size.
func imageTokens(url string) (int, error) {
	head, data, ok := strings.Cut(url, ",")
	if !ok || !strings.HasPrefix(head, "data:image/") || !strings.HasSuffix(head, ";base64") {
		return 0, errors.New("image_url must be a base64 data URL (data:image/...;base64,...)")
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return 0, fmt.Errorf("image data URL: %w", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("image data URL: %w", err)
	}
	return (cfg.Width+imagePatch-1)/imagePatch*((cfg.Height+imagePatch-1)/imagePatch) + imageFrameTokens, nil
}
