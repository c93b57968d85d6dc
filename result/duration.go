package result

import (
	"math"
	"strconv"
	"time"
)

// FormatMs prints a duration given in milliseconds for a person: three
// significant digits and its unit ("0.42 ms", "2.74 ms", "49.6 ms",
// "496 ms", "1.25 s", "12.5 s", "2m05s"). Every warning that names a
// duration prints it with this, so none shows "49.571468ms" or a bare
// number without its unit.
func FormatMs(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'f', -1, 64) + " ms"
	case v < 0:
		return "-" + FormatMs(-v)
	case Round(v, 0) < 1000:
		return sig3(v) + " ms"
	case Round(v/1000, 1) < 60:
		return sig3(v/1000) + " s"
	}
	s := int64(math.Round(v / 1000))
	if s < 3600 {
		return strconv.FormatInt(s/60, 10) + "m" + pad2(s%60) + "s"
	}
	return strconv.FormatInt(s/3600, 10) + "h" + pad2(s/60%60) + "m"
}

// FormatDuration is FormatMs for a time.Duration.
func FormatDuration(d time.Duration) string {
	return FormatMs(float64(d) / float64(time.Millisecond))
}

// sig3 prints v (0 <= v < 1000) with three significant digits, at most
// two decimals: 0.004 → "0", 0.42 → "0.42", 2.744 → "2.74", 49.57 → "49.6".
func sig3(v float64) string {
	dp := 2
	switch {
	case Round(v, 0) >= 100:
		dp = 0
	case Round(v, 1) >= 10:
		dp = 1
	}
	return strconv.FormatFloat(v, 'f', dp, 64)
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}
