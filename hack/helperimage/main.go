// Command helperimage builds stowage's reproducible multi-arch helper image
// (internal/helperimage) from the module in the current directory and
// writes it as an OCI image layout; `make helper-image` runs it. With
// -image stowage it builds the stowage image instead (the CLI, for an
// Argo CD plugin sidecar or a CI step; `make stowage-image`), stamped with
// -version.
//
//	go run ./hack/helperimage [-o bin/helper-image] [-ref ghcr.io/stowage/stowage-helper:v0.1.0]
//	go run ./hack/helperimage -image stowage -version v0.2.0 -o bin/stowage-image -ref ghcr.io/stowage/stowage:v0.2.0
//
// It prints the index digest. An existing output directory is replaced only
// when it is an OCI layout (it holds an oci-layout file); anything else is
// refused.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/stowage/stowage/internal/helperimage"
)

func main() {
	out := flag.String("o", "bin/helper-image", "output directory (an OCI image layout)")
	ref := flag.String("ref", helperimage.DefaultReference, "reference recorded in index.json ("+helperimage.RefNameAnnotation+")")
	image := flag.String("image", "helper", "the image: helper, or stowage (the CLI)")
	version := flag.String("version", "", "with -image stowage: the version stamped into the binary")
	flag.Parse()
	prog := helperimage.Helper
	switch *image {
	case "helper":
		if *version != "" {
			flag.Usage()
			os.Exit(2)
		}
	case "stowage":
		prog = helperimage.Stowage(*version)
	default:
		fmt.Fprintln(os.Stderr, "helperimage: -image must be helper or stowage")
		os.Exit(2)
	}
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: helperimage [-image helper|stowage] [-version V] [-o DIR] [-ref REFERENCE]")
		os.Exit(2)
	}
	if err := run(prog, *out, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "helperimage:", err)
		os.Exit(1)
	}
}

func run(prog helperimage.Program, out, ref string) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run from the stowage module root (no go.mod here)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	idx, err := prog.Build(ctx, helperimage.Options{ModuleDir: ".", Stderr: os.Stderr})
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil {
		if _, err := os.Stat(filepath.Join(out, "oci-layout")); err != nil {
			return fmt.Errorf("%s exists and is not an OCI layout; not replacing it", out)
		}
		if err := os.RemoveAll(out); err != nil {
			return err
		}
	}
	if err := helperimage.WriteLayout(out, idx, ref); err != nil {
		return err
	}
	fmt.Printf("%s %s\n", out, digest)
	return nil
}
