// Package words spells counts in stowage's messages: "1 image", "2 images",
// never "2 image(s)".
package words

import (
	"fmt"
	"strconv"
)

// Count is n followed by noun, with an s when n is not 1 ("1 image",
// "0 images", "3 images"). For a noun whose plural is not noun+"s" use
// CountAs.
func Count(n int, noun string) string {
	return CountAs(n, noun, noun+"s")
}

// CountAs is n followed by one when n is 1 and by many otherwise
// ("1 entry", "2 entries").
func CountAs(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Bytes prints n bytes in decimal units as docker does ("1.06GB" is
// 1,060,000,000 bytes; below 1000, "999B").
func Bytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f%cB", float64(n)/float64(div), "kMGTPE"[exp])
}
