package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/render"
)

func newRender(getenv env) *cobra.Command {
	var o loadOptions
	var out string
	var check bool
	c := &cobra.Command{
		Use:   "render [DIR]",
		Short: "Render a profile of the config in DIR (default .) with digests from DIR/stowage.lock.yaml",
		Long: `Render a profile: DaemonSets that pre-pull every image pinned to its digest,
pull Secrets, records ConfigMaps, the OpenPAI service ConfigMap and the package
cache ConfigMap. Never contacts a registry: digests come from the lock.

Without -o, writes one multi-document YAML stream to stdout. With -o DIR, writes
one file per object plus a kustomization.yaml, replacing DIR atomically. With
--check (needs -o), writes nothing and exits 1 listing the files that differ.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if check && out == "" {
				return usageError{fmt.Errorf("--check needs -o DIR, the committed output to compare with")}
			}
			objs, err := renderDir(dirArg(args), o, getenv)
			if err != nil {
				return err
			}
			if out == "" {
				b, err := render.Encode(objs)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			files, err := render.Files(objs)
			if err != nil {
				return err
			}
			if check {
				diff, err := diffDir(out, files)
				if err != nil {
					return err
				}
				if len(diff) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "stowage: %s is stale; run `stowage render %s -o %s` and commit the result:\n", out, dirArg(args), out)
					for _, d := range diff {
						fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", d)
					}
					return errCheckFailed
				}
				return nil
			}
			if err := checkOutputDir(out); err != nil {
				return err
			}
			return atomicfile.ReplaceDirContext(cmd.Context(), out, files)
		},
	}
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "profile to render (optional when the config has one)")
	c.Flags().StringVarP(&out, "output", "o", "", "write one file per object and a kustomization.yaml into this directory")
	c.Flags().BoolVar(&check, "check", false, "compare with the files in -o DIR instead of writing; exit 1 when they differ")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	return c
}

// diffDir compares want with the regular files of dir and describes each
// difference: "changed NAME", "missing NAME", "extra NAME".
func diffDir(dir string, want map[string][]byte) ([]string, error) {
	have := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		have[e.Name()] = b
	}
	var diff []string
	for n, b := range want {
		h, ok := have[n]
		switch {
		case !ok:
			diff = append(diff, "missing "+n)
		case !bytes.Equal(h, b):
			diff = append(diff, "changed "+n)
		}
	}
	for n := range have {
		if _, ok := want[n]; !ok {
			diff = append(diff, "extra "+n)
		}
	}
	// Sort by file name, the part after the verb.
	sort.Slice(diff, func(i, j int) bool {
		_, a, _ := strings.Cut(diff[i], " ")
		_, b, _ := strings.Cut(diff[j], " ")
		return a < b
	})
	return diff, nil
}
