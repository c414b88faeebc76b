package fluxoci

import (
	"testing"

	"github.com/stowage/stowage/internal/testing/testbin"
)

// TestMain removes the stowage binary the tests built and shared, if they
// built one (testbin.Stowage).
func TestMain(m *testing.M) { testbin.Main(m) }
