package fn

import (
	"os"
	"testing"

	"github.com/stowage/stowage/internal/testing/testbin"
	"github.com/stowage/stowage/schema"
)

// TestMain removes the stowage binary the tests built and shared, if they
// built one (testbin.Stowage). Run with the one argument schema.ChildArg,
// the test binary is the child a config is evaluated in (TestRunChild),
// as a binary built on Main is.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == schema.ChildArg {
		os.Exit(schema.ServeChild(os.Stdin, os.Stdout))
	}
	testbin.Main(m)
}
