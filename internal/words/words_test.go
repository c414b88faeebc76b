package words

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 images"}, {1, "1 image"}, {2, "2 images"}, {-1, "-1 images"}} {
		if got := Count(tc.n, "image"); got != tc.want {
			t.Errorf("Count(%d, image) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := CountAs(1, "entry", "entries"); got != "1 entry" {
		t.Errorf("CountAs(1) = %q", got)
	}
	if got := CountAs(4, "entry", "entries"); got != "4 entries" {
		t.Errorf("CountAs(4) = %q", got)
	}
}

// TestBytes: decimal units as docker prints them, two decimals from 1 kB.
func TestBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0B", 999: "999B", 1000: "1.00kB", 1_060_000_000: "1.06GB", 999_999: "1000.00kB", 5_500_000_000_000: "5.50TB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
