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
