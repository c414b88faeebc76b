package v1alpha1

import (
	"errors"
	"testing"
)

// TestProfileNoneNamed: without a name, a config of several profiles says
// how many and lists them, and one of none says so; both wrap ErrNoProfile.
func TestProfileNoneNamed(t *testing.T) {
	t.Parallel()
	two := &Config{Profiles: map[string]Profile{"gpu-readiness": {}, "gpu": {}}}
	_, _, err := two.Profile("")
	if !errors.Is(err, ErrNoProfile) || err.Error() != "the config has 2 profiles; choose one with --profile (gpu, gpu-readiness)" {
		t.Errorf("two profiles: %v", err)
	}
	_, _, err = (&Config{}).Profile("")
	if !errors.Is(err, ErrNoProfile) || err.Error() != "the config has no profiles" {
		t.Errorf("no profiles: %v", err)
	}
}
