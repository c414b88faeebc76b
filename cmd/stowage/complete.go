package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/schema"
)

// formatNames are -o values that other commands read as a format; as a
// render output directory they are almost always a mistake.
var formatNames = []string{"json", "yaml", "yml", "table", "markdown", "md", "text"}

// checkOutDirName refuses an output directory spelled like a format
// ("render -o json") unless it is written as a path ("./json") or already
// exists, with a hint: -o is a directory for render, a format for vet,
// lock, bump and openpai services.
func checkOutDirName(flag, out string) error {
	if !slices.Contains(formatNames, strings.ToLower(out)) {
		return nil
	}
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	return usageError{fmt.Errorf("%s %s: for render, %s is an output directory, and %q looks like a format; render writes YAML to stdout without %s (-o json is for vet, lock, bump and openpai services); to write into a directory of that name, say %s %s",
		flag, out, flag, out, flag, flag, "."+string(filepath.Separator)+out)}
}

// checkOutFileName refuses an -o file spelled like a format ("openpai
// package-cache -o json") unless it is written as a path ("./json") or
// already exists (then the ownership check decides).
func checkOutFileName(out string) error {
	if !slices.Contains(formatNames, strings.ToLower(out)) {
		return nil
	}
	if _, err := os.Lstat(out); err == nil {
		return nil
	}
	return usageError{fmt.Errorf("-o %s: -o is the file to write here, and %q looks like a format; package-cache writes package_cache_info to stdout without -o; to write a file of that name, say -o %s",
		out, out, "."+string(filepath.Separator)+out)}
}

// completeProfiles offers the profile names of the config directory given
// as the first argument (default .), for --profile. It loads the config
// without reading any password; a config that does not load offers none.
func completeProfiles(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	cfg, err := schema.Load(dirArg(args), schema.Options{AllowLiteralPasswords: true})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for name := range cfg.Profiles {
		if strings.HasPrefix(name, toComplete) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}

// registerCompletions adds profile-name completion to every command with a
// --profile flag, and directory completion to their DIR argument.
func registerCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("profile") != nil {
			_ = c.RegisterFlagCompletionFunc("profile", completeProfiles)
			if c.ValidArgsFunction == nil {
				c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return nil, cobra.ShellCompDirectiveFilterDirs
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
