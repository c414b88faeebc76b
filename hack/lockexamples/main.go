// Command lockexamples writes the stowage.lock.yaml of each example config
// directory or kustomization (with the stowage transformer) it is given the way a user's lock is written: `stowage lock`
// against a real registry. The registry is Debian's docker-registry (CNCF
// distribution), started on 127.0.0.1 for the run and seeded with the
// deterministic stand-in image (internal/testing/offlineimage) of every reference, each
// of the config's registries mirrored under its own path (--mirror), so the
// lock keeps the real names. The real registries are out of reach offline;
// the stand-ins are the same bytes on every machine, so the locks are too.
// TestExampleLocksFromRegistry in cmd/stowage checks the committed locks
// the same way.
//
//	make lock-examples
//	go run ./hack/lockexamples -stowage bin/stowage examples/openpai-offline examples/submarine-notebooks
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

func main() {
	stowage := flag.String("stowage", "bin/stowage", "the stowage binary to run")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lockexamples [-stowage BIN] DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*stowage, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "lockexamples: %v\n", err)
		os.Exit(1)
	}
}

func run(stowage string, dirs []string) error {
	tmp, err := os.MkdirTemp("", "stowage-lockexamples-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	d, err := registrytest.StartDistribution(tmp, registrytest.Options{})
	if err != nil {
		return err
	}
	defer d.Stop()
	for _, dir := range dirs {
		ex, err := registrytest.LoadExample(dir)
		if err != nil {
			return err
		}
		plan, err := registrytest.SeedFor(ex.Config, d.Host, ex.Workloads...)
		if err != nil {
			return err
		}
		push, err := registry.New(append(plan.Options(), registry.WithInsecure(d.Host))...)
		if err != nil {
			return err
		}
		if err := registrytest.SeedStandIns(context.Background(), push, nil, plan.Refs, 8); err != nil {
			return err
		}
		// Lock a copy without its lock, so every entry is resolved again
		// and the example is only replaced when all went well.
		work, err := os.MkdirTemp(tmp, "config-")
		if err != nil {
			return err
		}
		if err := ex.Write(work); err != nil {
			return err
		}
		args := append([]string{"lock", work, "--quiet", "--insecure-registry", d.Host}, plan.Flags()...)
		cmd := exec.Command(stowage, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %v: %w", stowage, args, err)
		}
		out, err := os.ReadFile(filepath.Join(work, ex.Lock))
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, ex.Lock), out, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d bytes\n", filepath.Join(dir, ex.Lock), len(out))
	}
	return nil
}
