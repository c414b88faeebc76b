package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/schema"
)

// formatNames are -o values some command reads as a format; as a path
// given to -o they are almost always a mistake.
var formatNames = []string{"json", "yaml", "yml", "table", "markdown", "md", "text"}

// completeProfiles offers the profile names of the config directory given
// as the first argument (default .), for --profile. It loads the config
// without reading any password; a config that does not load offers none.
func completeProfiles(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	cfg, err := schema.Load(dirArg(args), schemaOptions(cmd.Context(), schema.Options{AllowLiteralPasswords: true})...)
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
