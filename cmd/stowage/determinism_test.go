package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/linediff"
	"github.com/stowage/stowage/internal/testing/registrytest"
	"github.com/stowage/stowage/schema"
)

// The determinism suite: one input, one output, byte for byte, however
// often stowage runs and whatever order the files and lists come in
// (issue 5, item 3). Shuffles use a fixed seed per test so that a failure
// can be replayed; the seed is in the failure message.

// exampleConfigDirs are the example config directories that carry a lock.
func exampleConfigDirs(t *testing.T) []string {
	t.Helper()
	locks, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*", schema.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(repoRoot, "examples", "*", "*", schema.LockFile))
	var dirs []string
	for _, l := range append(locks, more...) {
		dir := filepath.Dir(l)
		if files, err := schema.ReadDir(dir); err == nil && len(files) > 0 {
			if _, err := schema.Load(dir, schema.Options{}); err == nil {
				dirs = append(dirs, dir)
			}
		}
	}
	if len(dirs) < 3 {
		t.Fatalf("found %d example config directories, want at least 3: %v", len(dirs), dirs)
	}
	return dirs
}

// renderProfiles renders every profile of dir through the CLI and returns
// profile -> stdout.
func renderProfiles(t *testing.T, dir string, profiles []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range profiles {
		stdout, stderr, code := runCLI(t, exampleEnv, "render", dir, "--profile", p)
		if code != 0 {
			t.Fatalf("render %s --profile %s: exit %d: %s", dir, p, code, stderr)
		}
		out[p] = stdout
	}
	return out
}

func sameRenders(t *testing.T, what string, want, got map[string][]byte) {
	t.Helper()
	for p, w := range want {
		if !bytes.Equal(w, got[p]) {
			t.Fatalf("%s: profile %s renders differently:\n%s", what, p, linediff.First(w, got[p]))
		}
	}
}

// TestDeterminismRepeat renders every profile of every example 100 times:
// one output.
func TestDeterminismRepeat(t *testing.T) {
	t.Parallel()
	for _, dir := range exampleConfigDirs(t) {
		cfg, err := schema.Load(dir, schema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := renderProfiles(t, dir, cfg.ProfileNames())
		for i := 1; i < 100; i++ {
			sameRenders(t, fmt.Sprintf("%s, run %d", dir, i+1), want, renderProfiles(t, dir, cfg.ProfileNames()))
		}
	}
}

// copyRenamed writes dir's config files into a new directory under other
// names, given by rename, in the order given by order, plus its lock; it
// returns the new directory.
func copyRenamed(t *testing.T, dir string, files []schema.File, rename func(i int, name string) string, order []int) string {
	t.Helper()
	to := t.TempDir()
	for _, i := range order {
		f := files[i]
		if err := os.WriteFile(filepath.Join(to, rename(i, filepath.Base(f.Name))), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyLock(t, dir, to)
	return to
}

// copyLock copies the example's lock and the trust files its verify
// policies name (registrytest.CopyTrustFiles) from from to to: what render
// reads beside the config files.
func copyLock(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, lock.FileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(from, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := registrytest.CopyTrustFiles(cfg, from, to); err != nil {
		t.Fatal(err)
	}
}

// TestDeterminismFileOrder writes each example's files to temporary
// directories under permuted names, created in permuted order, and renders
// them (to stdout and with -o): the same bytes as the example.
func TestDeterminismFileOrder(t *testing.T) {
	t.Parallel()
	const seed = 5
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, dir := range exampleConfigDirs(t) {
		cfg, err := schema.Load(dir, schema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		profiles := cfg.ProfileNames()
		want := renderProfiles(t, dir, profiles)
		wantDirs := map[string]map[string]string{}
		for _, p := range profiles {
			wantDirs[p] = renderDirFiles(t, dir, p)
		}
		files, err := schema.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 10 {
			prefixes := rng.Perm(len(files))
			rename := func(i int, name string) string {
				// A new name whose sort position is random; the extension
				// stays (it selects the decoder).
				return fmt.Sprintf("%02d-%x%s", prefixes[i], rng.Uint32(), filepath.Ext(name))
			}
			shuffled := copyRenamed(t, dir, files, rename, rng.Perm(len(files)))
			what := fmt.Sprintf("%s with its files renamed and reordered (seed %d, round %d)", dir, seed, round)
			sameRenders(t, what, want, renderProfiles(t, shuffled, profiles))
			for _, p := range profiles {
				if got := renderDirFiles(t, shuffled, p); !maps.Equal(wantDirs[p], got) {
					t.Fatalf("%s: render -o of profile %s writes other files", what, p)
				}
			}
		}
	}
}

// renderDirFiles renders profile of dir with -o into a new directory and
// returns its files.
func renderDirFiles(t *testing.T, dir, profile string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, code := runCLI(t, exampleEnv, "render", dir, "--profile", profile, "--output-dir", out); code != 0 {
		t.Fatalf("render -o: exit %d: %s", code, stderr)
	}
	return cliSnapshot(t, out)
}

// shuffleConfig permutes every list of cfg whose order carries no meaning:
// pullers, each puller's environments, images and OpenPAI roles, its
// tolerations, the package cache rows, the OpenPAI features, keep and drop
// lists, and the platforms of images and environments.
func shuffleConfig(rng *rand.Rand, cfg *v1alpha1.Config) {
	shuffle := func(n int, swap func(i, j int)) { rng.Shuffle(n, swap) }
	strs := func(ss []string) { shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] }) }
	tols := func(ts []v1alpha1.Toleration) { shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] }) }
	for k, im := range cfg.Images {
		strs(im.Platforms)
		cfg.Images[k] = im
	}
	for k, env := range cfg.Environments {
		strs(env.Platforms)
		tols(env.Tolerations)
		cfg.Environments[k] = env
	}
	for name, prof := range cfg.Profiles {
		ps := prof.Pullers
		shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		for i := range ps {
			strs(ps[i].Environments)
			strs(ps[i].Images)
			strs(ps[i].OpenPAI)
			tols(ps[i].Tolerations)
		}
		rows := prof.PackageCache
		shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		if op := prof.OpenPAI; op != nil {
			strs(op.Features)
			strs(op.Keep)
			strs(op.Drop)
		}
		cfg.Profiles[name] = prof
	}
}

// TestDeterminismListOrder loads each example, shuffles every list whose
// order carries no meaning, writes the result as one JSON config beside the
// example's lock and renders it: the same bytes as the example. (The JSON
// file also checks that the typed config says everything the files said.)
func TestDeterminismListOrder(t *testing.T) {
	t.Parallel()
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, dir := range exampleConfigDirs(t) {
		cfg, err := schema.Load(dir, schema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		profiles := cfg.ProfileNames()
		want := renderProfiles(t, dir, profiles)
		for round := range 10 {
			shuffled, err := schema.Load(dir, schema.Options{})
			if err != nil {
				t.Fatal(err)
			}
			shuffleConfig(rng, shuffled)
			b, err := json.MarshalIndent(shuffled, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			to := t.TempDir()
			if err := os.WriteFile(filepath.Join(to, "config.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			copyLock(t, dir, to)
			what := fmt.Sprintf("%s with its lists shuffled (seed %d, round %d)", dir, seed, round)
			sameRenders(t, what, want, renderProfiles(t, to, profiles))
		}
	}
}

// TestDeterminismLock runs `stowage lock` against an unchanged in-process
// registry, from no lock, for configs that list the same images in other
// orders and spellings split over other files: every run writes the same
// lock, byte for byte; a following lock and bump leave it as it is.
func TestDeterminismLock(t *testing.T) {
	t.Parallel()
	reg := startInProcess(t)
	h := reg.Host
	refs := []string{h + "/team/app:1.0", h + "/team/tool", h + "/team/multi:2", h + "/stowage/helper:v1", h + "/k8s/pause:3.10"}
	seed(t, nil, append(refs, h+"/team/tool:latest"), registry.WithInsecure(h))
	// Catalogue entries: key -> reference; "tool" and "tool2" are two
	// spellings of one image (an implicit and an explicit "latest").
	catalogue := map[string]string{
		"app": refs[0], "tool": refs[1], "tool2": h + "/team/tool:latest", "multi": refs[2],
	}
	const rounds = 20
	rng := rand.New(rand.NewPCG(11, 11))
	var want []byte
	for round := range rounds {
		keys := []string{"app", "tool", "tool2", "multi"}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		// The catalogue in one file, in shuffled order; the profile in
		// another, with the puller's list shuffled too.
		var cat strings.Builder
		cat.WriteString("images:\n")
		for _, k := range keys {
			fmt.Fprintf(&cat, "  %s: {reference: %q}\n", k, catalogue[k])
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		prof := fmt.Sprintf("profiles: p: {\n\thelper: {image: %q, pause: %q}\n\tpullers: [{name: \"pre\", namespace: \"ns\", images: [%s]}]\n}\n",
			refs[3], refs[4], `"`+strings.Join(keys, `", "`)+`"`)
		dir := t.TempDir()
		names := []string{fmt.Sprintf("%x.yaml", rng.Uint32()), fmt.Sprintf("%x.cue", rng.Uint32())}
		for i, data := range []string{cat.String(), prof} {
			if err := os.WriteFile(filepath.Join(dir, names[i]), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, stderr, code := runCLI(t, nil, "lock", dir, "--insecure-registry", h); code != 0 {
			t.Fatalf("round %d: lock exit %d: %s", round, code, stderr)
		}
		got := readFile(t, filepath.Join(dir, lock.FileName))
		if round == 0 {
			want = got
		} else if !bytes.Equal(want, got) {
			t.Fatalf("round %d wrote another lock:\n%s", round, linediff.First(want, got))
		}
		if round%5 != 0 {
			continue
		}
		for _, args := range [][]string{{"lock", dir}, {"bump", dir, "--exit-code"}} {
			if stdout, stderr, code := runCLI(t, nil, append(args, "--insecure-registry", h)...); code != 0 {
				t.Fatalf("round %d: %s on an unchanged registry: exit %d: %s%s", round, args[0], code, stdout, stderr)
			}
			if got := readFile(t, filepath.Join(dir, lock.FileName)); !bytes.Equal(want, got) {
				t.Fatalf("round %d: %s on an unchanged registry changed the lock:\n%s", round, args[0], linediff.First(want, got))
			}
		}
	}
}
