package runner

import (
	"encoding/hex"
	"math/rand/v2"

	"github.com/runnerbench/runner/runner/wire"
)

// Ids that join a request's record to the server's logs and traces: each
// measured request carries a W3C traceparent (https://www.w3.org/TR/trace-context/)
// of its own, unless the endpoint turns it off (traceparent: false), and its
// record keeps the trace id beside the ids the server answered with (the
// response's id, its x-request-id header: runner/wire reads those).

// traceparentHeader is the header's canonical name.
const traceparentHeader = "Traceparent"

// newTraceparent is a new traceparent for one request (version 00, a random
// trace id and parent id, sampled) and its trace id. The ids come from the
// runtime's unpredictable generator: a rerun must not reuse them, as it
// must not reuse a nonce. They are made before the request's clock starts.
func newTraceparent() (h wire.Header, traceID string) {
	var b [55]byte // 00-<32 hex>-<16 hex>-01
	var id [24]byte
	for i := 0; i < len(id); i += 8 {
		v := rand.Uint64()
		for k := range 8 {
			id[i+k] = byte(v >> (8 * k))
		}
	}
	if isZero(id[:16]) || isZero(id[16:]) {
		id[0], id[16] = 1, 1 // all-zero ids are invalid
	}
	copy(b[:], "00-")
	hex.Encode(b[3:35], id[:16])
	b[35] = '-'
	hex.Encode(b[36:52], id[16:])
	copy(b[52:], "-01")
	s := string(b[:])
	return wire.Header{Name: traceparentHeader, Value: s}, s[3:35]
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
