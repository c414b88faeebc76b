package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/imageset"
)

// newImages is `stowage images`: image sets taken from where vendors
// publish them (docs/imagesets.md). The logic is internal/imageset.
func newImages() *cobra.Command {
	c := &cobra.Command{
		Use:   "images",
		Short: "Write stowage config for the images a vendor's list or a Helm chart names",
		Long: `Turn the image sets vendors publish into stowage config: an images catalogue
(one entry per image, keyed by a name derived from its repository, with its
reference), sorted and stable, as YAML or CUE. Put the file into a config
directory, list the keys in a puller's images, and run stowage lock.
See docs/imagesets.md.`,
		Example: `  # kubespray's offline list, as YAML
  stowage images from-list images.list

  # the same as CUE, into a config directory
  stowage images from-list images.list -o cue --output-file site/images.cue`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(newImagesFromList())
	return c
}

// imageSetOutput is the output flags every images subcommand shares.
type imageSetOutput struct {
	format string
	file   string
}

func (o *imageSetOutput) flags(c *cobra.Command) {
	c.Flags().StringVarP(&o.format, "output", "o", "yaml", "the config language: yaml, or cue")
	c.Flags().StringVar(&o.file, "output-file", "", "file to write (atomically) instead of stdout, e.g. config/images.yaml; - is stdout")
}

func (o *imageSetOutput) check() error {
	return checkFormat("-o", o.format, imageset.Formats...)
}

// write encodes set and writes it to stdout or, atomically, to the file.
func (o *imageSetOutput) write(cmd *cobra.Command, set imageset.Set, source string) error {
	data, err := imageset.Encode(set, o.format, source)
	if err != nil {
		return err
	}
	if o.file == "" || o.file == stdoutName {
		_, err := cmd.OutOrStdout().Write(data)
		return err
	}
	if err := atomicfile.WriteFile(o.file, data, 0o644); err != nil {
		return fmt.Errorf("--output-file %s: %w", o.file, err)
	}
	return nil
}

func newImagesFromList() *cobra.Command {
	var out imageSetOutput
	c := &cobra.Command{
		Use:   "from-list FILE",
		Short: "Write stowage config for a plain image list (one reference a line)",
		Long: `Read a vendor's plain image list, one reference a line (kubespray's offline
images.list, the GPU Operator's air-gap list): blank lines and lines starting
with # are ignored, every other line is a reference, parsed as lock and render
parse them; a bad one fails naming FILE:LINE. The list may be at most 4 MiB.
The same image written twice (nginx:1.27 and docker.io/library/nginx:1.27)
is kept once.

Each image is keyed by the last component of its repository; images that
share it are keyed by the whole repository path, then with the registry,
then with the tag, so that the same list gives the same names whatever its
order (docs/imagesets.md#names).`,
		Example: `  # print the catalogue as YAML
  stowage images from-list images.list

  # write it as CUE into a config directory, then lock it
  stowage images from-list images.list -o cue --output-file site/images.cue
  stowage lock site`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			set, err := imageset.ReadList(args[0])
			if err != nil {
				return err
			}
			return out.write(cmd, set, args[0])
		},
	}
	out.flags(c)
	return c
}
