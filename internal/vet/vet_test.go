package vet

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
)

// TestFoundPins: the digests --remote found are those checked less one
// per image error; none when the error is of another kind.
func TestFoundPins(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		err  error
		want int
	}{
		{"all found", 5, nil, 5},
		{"two missing", 5, fmt.Errorf("wrapped: %w", registry.Errors{{Key: "a"}, {Key: "b"}}), 3},
		{"more errors than pins", 1, registry.Errors{{Key: "a"}, {Key: "b"}}, 0},
		{"not an image error", 5, errors.New("connection refused"), 0},
	} {
		if got := foundPins(tc.n, tc.err); *got != tc.want {
			t.Errorf("%s: foundPins(%d) = %d, want %d", tc.name, tc.n, *got, tc.want)
		}
	}
}

// TestSiteManifestsNoSite: --site refuses a profile without a site
// registry, naming it, and a source with nothing rendered or pinned.
func TestSiteManifestsNoSite(t *testing.T) {
	_, _, _, err := siteManifests(&v1alpha1.Config{}, []*plan.Plan{{Profiles: []string{"lab"}}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `--site: profile "lab" names no site registry`) {
		t.Errorf("profile without a site: %v", err)
	}
	_, _, _, err = siteManifests(&v1alpha1.Config{}, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "nothing is rendered or pinned") {
		t.Errorf("nothing to check: %v", err)
	}
}
