package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/schema"
)

// formatNames are -o values some command reads as a format, or that
// kubectl users give as one (kubectl get --help: wide, name, jsonpath=…,
// go-template=…, custom-columns=…), or other formats' names; as a path
// given to -o they are almost always a mistake (isFormatName).
var formatNames = []string{"json", "yaml", "yml", "table", "markdown", "md", "text",
	"wide", "name", "xml", "csv", "toml", "go-template", "go-template-file", "template", "templatefile",
	"jsonpath", "jsonpath-file", "jsonpath-as-json", "custom-columns", "custom-columns-file"}

// isFormatName reports whether an -o value names an output format
// (formatNames, any case, and kubectl's NAME=ARG forms such as
// jsonpath={.items}) rather than a path.
func isFormatName(value string) bool {
	name, _, _ := strings.Cut(strings.ToLower(value), "=")
	return slices.Contains(formatNames, name)
}

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
