//go:build !stowagefront

package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/imageset"
	"github.com/stowage/stowage/internal/limitflags"
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
  stowage images from-list images.list -o cue --output-file site/images.cue

  # what a GPU operator chart runs, with a site's values
  stowage images from-chart ./gpu-operator --values site-values.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(newImagesFromList(), newImagesFromChart())
	return c
}

// imageSetOutput is the output flags every images subcommand shares.
type imageSetOutput struct {
	format string
	file   string
	as     string
}

func (o *imageSetOutput) flags(c *cobra.Command) {
	c.Flags().StringVarP(&o.format, "output", "o", "yaml", "the config language: yaml, or cue")
	c.Flags().StringVar(&o.file, "output-file", "", "file to write (atomically) instead of stdout, e.g. config/images.yaml; - is stdout")
	c.Flags().StringVar(&o.as, "as", "images", "write an images catalogue (images.NAME.reference), or environments (environments.NAME.image)")
}

func (o *imageSetOutput) check() error {
	if err := checkFormat("--as", o.as, imageset.Kinds...); err != nil {
		return err
	}
	return checkFormat("-o", o.format, imageset.Formats...)
}

// refuseInputs refuses an --output-file that is one of the command's
// inputs or lies inside an input directory (imageset.InputOf), before
// anything is read.
func (o *imageSetOutput) refuseInputs(inputs ...string) error {
	if o.file == "" || o.file == stdoutName {
		return nil
	}
	in, err := imageset.InputOf(o.file, inputs...)
	if err != nil || in == "" {
		return err
	}
	return usageError{fmt.Errorf("--output-file %s is an input of this command (%s): write the catalogue elsewhere", o.file, in)}
}

// write encodes set and writes it to stdout or, atomically, to the file.
func (o *imageSetOutput) write(cmd *cobra.Command, set imageset.Set, source string) error {
	data, err := imageset.EncodeAs(set, o.format, o.as, source)
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
images.list, the GPU Operator's air-gap list; - reads standard input): blank lines and lines starting
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
			if err := out.refuseInputs(args[0]); err != nil {
				return err
			}
			read := imageset.ReadList
			if args[0] == imageset.Stdin {
				read = func(string) (imageset.Set, error) { return imageset.ReadListFrom(cmd.InOrStdin()) }
			}
			set, err := read(args[0])
			if err != nil {
				return err
			}
			return out.write(cmd, set, args[0])
		},
	}
	out.flags(c)
	return c
}

func newImagesFromChart() *cobra.Command {
	var (
		out         imageSetOutput
		o           imageset.ChartOptions
		perNode     []string
		chartLimits limitflags.Chart
	)
	c := &cobra.Command{
		Use:   "from-chart CHART",
		Short: "Write stowage config for the images a Helm chart's workloads run",
		Long: `Render the Helm chart CHART (a chart directory or a .tgz) offline with Helm's
SDK, as helm template does: client only, no cluster, no repository; a chart's
dependencies must already be in its charts/ (helm dependency build). Then list
every image its workloads would run: the containers, init containers and
ephemeral containers of every Pod, Deployment, StatefulSet, DaemonSet, Job,
CronJob, ReplicaSet and ReplicationController rendered, hooks included (test
hooks not), and the images the chart's values describe as maps
(repository/image with tag or version, registry and digest optional, as the
GPU Operator's driver, toolkit and devicePlugin) that the rendered objects
use: the composed reference appears as a string in them, or an object carries
the same fields (the GPU Operator's ClusterPolicy). Pod templates of other
kinds (custom resources) count when their images parse. A tag or version
written as a number is spelled as Helm prints it (1.10 prints 1.1, and a note
says so); a version that is a digest (sha256:...) gives a digest reference. A
map with enabled: false, or under a section with enabled: false, is left out.
--values and --set work as helm's; values files are local, and --values -
reads values from standard input (once). --api-versions and
--kube-version set the capabilities the templates see, as helm template's.

Every entry is written after comments saying where it came from (the rendered
object and field, or the values path and the object carrying the map) and
whether only the value-map heuristic found it. An image whose tag the
operator completes at run time with the node's OS (the GPU Operator's driver)
carries a note; --per-node-label with the OS suffixes as values (ubuntu22.04,
rhel9.4) writes one reference per OS.

--per-node-label LABEL=VALUE:FILE (repeatable, one LABEL) is for images built
per node group, as the GPU Operator's driver per kernel: the chart is rendered
once per VALUE with its values file FILE last, and an image whose reference
differs between the values is written as byNodeLabel {label: LABEL,
references: {VALUE: reference}}, so that render pre-pulls each reference only
on the nodes labelled LABEL=VALUE; an image the same in every render is
written as usual. LABEL is a label key and VALUE a label value (Kubernetes'
rules), at most 64 values.

--as environments writes environments (environments.NAME.image) instead of
an images catalogue, for pullers that list environments.

Bounds: the chart 20 MiB (10,000 files), each values file 4 MiB, the rendered
manifests 64 MiB. The chart's templates are code from whoever wrote the chart:
they are rendered in a child process of stowage that the operator's limits end,
--chart-timeout (default 1m), --max-chart-memory (heap bytes, default 1 GiB;
the child's address space is that plus 2 GiB) and --max-chart-objects (default
10,000); a chart cannot raise them. A chart that hits one is refused with exit
1, naming the chart and the template (found by rendering the templates once
more, one by one, under the same limits: at most twice --chart-timeout in all).
Names and output as from-list (docs/imagesets.md).`,
		Example: `  # the images a chart runs with its default values
  stowage images from-chart ./gpu-operator

  # with a site's values and a per-kernel driver tag, as CUE
  stowage images from-chart gpu-operator-v24.3.0.tgz --values site.yaml \
    --set driver.version=550.54.15-ubuntu22.04 -o cue --output-file site/gpu-images.cue

  # the precompiled driver per kernel (Node Feature Discovery's label), as environments
  stowage images from-chart ./gpu-operator --as environments \
    --per-node-label feature.node.kubernetes.io/kernel-version.full=5.15.0-91-generic:kernel-5.15.yaml \
    --per-node-label feature.node.kubernetes.io/kernel-version.full=6.8.0-1015-aws:kernel-6.8-aws.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			setLogLabel("helm") // the standard log now carries Helm's SDK's warnings
			if err := out.check(); err != nil {
				return err
			}
			if err := readStdinValues(cmd, &o); err != nil {
				return err
			}
			label, values, err := imageset.ParseNodeValues(perNode)
			if err != nil {
				return usageError{fmt.Errorf("--per-node-label %w", err)}
			}
			inputs := append([]string{args[0]}, o.ValueFiles...)
			for _, v := range values {
				inputs = append(inputs, v.File)
			}
			if err := out.refuseInputs(inputs...); err != nil {
				return err
			}
			var (
				set    imageset.Set
				source string
			)
			o.Limits = imageset.ChartLimits(chartLimits)
			o.Child = configRunOf(cmd.Context()).child
			if len(values) > 0 {
				set, source, err = imageset.FromChartByNodeLabel(args[0], o, label, values)
			} else {
				set, source, err = imageset.FromChart(args[0], o)
			}
			if err != nil {
				return err
			}
			return out.write(cmd, set, source)
		},
	}
	out.flags(c)
	c.Flags().StringArrayVar(&perNode, "per-node-label", nil, "LABEL=VALUE:FILE: render once per node label value with its values file; images that differ become byNodeLabel (repeatable, one label)")
	c.Flags().StringArrayVarP(&o.ValueFiles, "values", "f", nil, "a values file (repeatable; later ones win; - is standard input), as helm's --values")
	c.Flags().StringArrayVar(&o.Set, "set", nil, "key=value, as helm's --set (repeatable; applied after --values)")
	limitflags.AddChart(c.Flags(), &chartLimits, limitflags.Chart(imageset.DefaultChartLimits))
	c.Flags().StringSliceVarP(&o.APIVersions, "api-versions", "a", nil, "Kubernetes API versions the templates see in .Capabilities.APIVersions, as helm template's --api-versions (repeatable or comma-separated)")
	c.Flags().StringVar(&o.KubeVersion, "kube-version", "", "the Kubernetes version the templates see in .Capabilities.KubeVersion, as helm template's --kube-version (e.g. v1.33.0)")
	return c
}

// readStdinValues reads the values of --values - from standard input,
// bounded as a values file (internal/confined); - given twice is a usage
// error.
func readStdinValues(cmd *cobra.Command, o *imageset.ChartOptions) error {
	switch n := slices.Index(o.ValueFiles, imageset.Stdin); {
	case n < 0:
		return nil
	case slices.Contains(o.ValueFiles[n+1:], imageset.Stdin):
		return usageError{fmt.Errorf("--values - given twice: standard input is read once")}
	}
	b, err := confined.ReadStream(cmd.InOrStdin(), imageset.Stdin, confined.Kind{What: "values file", Max: imageset.MaxValuesBytes})
	o.StdinValues = b
	return err
}
