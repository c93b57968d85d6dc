package result

import (
	"math"
	"strconv"
)

// Round rounds x to dp decimal places the way Python's round(x, dp) does: to the
// nearest decimal, ties (exact in binary) to even. strconv's 'f' formatting
// rounds the exact binary value the same way, so the reference's numbers are
// reproduced digit for digit (round(0.125, 2) == 0.12, round(2.675, 2) == 2.67).
func Round(x float64, dp int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', dp, 64), 64)
	return v
}

// Ptr returns a pointer to v; handy for the nullable metric fields.
func Ptr[T any](v T) *T { return &v }

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
func itoa(i int) string          { return strconv.Itoa(i) }
