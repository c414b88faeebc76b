package spelling

import "testing"

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"enviroments", "environments", 1},
		{"kitten", "sitting", 3}, {"webportal", "webportal", 0}, {"ab", "ba", 2},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()
	names := []string{"digest", "kind", "name", "platforms"}
	for _, tc := range []struct{ s, want string }{
		{"digests", "digest"}, {"platfroms", "platforms"}, {"colour", ""}, {"nme", "name"}, {"", ""},
	} {
		if got := Nearest(tc.s, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
