// Command stowage-fn is stowage's KRM function built in another module:
// the whole program is fn.NewCommand.
package main

import (
	"os"

	"github.com/stowage/stowage/fn"
)

func main() {
	if err := fn.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
