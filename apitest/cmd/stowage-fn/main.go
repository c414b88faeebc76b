// Command stowage-fn is stowage's KRM function built in another module:
// the whole program is fn.Main.
package main

import (
	"os"

	"github.com/stowage/stowage/fn"
)

func main() { os.Exit(fn.Main()) }
