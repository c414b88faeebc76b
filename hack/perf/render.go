package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stowage/stowage/internal/testing/configgen"
	"github.com/stowage/stowage/schema"
)

// meter holds what the render measurements share: the runs per figure,
// the repository root, a scratch directory, the two binaries and the
// image counts of the scale series (nil: scaleSizes, with CUE's profile).
type meter struct {
	runs                    int
	root, tmp, stowage, cue string
	sizes                   []int
}

// cpuRatio is a's CPU time over b's.
func cpuRatio(a, b sample) float64 { return float64(a.cpu) / float64(b.cpu) }

// The start-up goals (issue 38): render of an example at most renderGoal
// times the CPU of cue export with the schema, stowage version at most
// versionGoal times cue version, and the function's share of a kustomize
// build at most fnShareGoal of CPU over a kyaml no-op.
const (
	renderGoal  = 2.0
	versionGoal = 2.0
	fnShareGoal = 15 * time.Millisecond
)

// examples is the config directories render is measured on.
var examples = []string{"openpai-offline", "submarine-notebooks", "gpu-platform", "gitops-flux/config"}

// exampleFlags are the render flags an example needs: gpu-platform has two
// profiles and no default.
var exampleFlags = map[string][]string{"gpu-platform": {"--profile", "gpu"}}

// cueDir writes into a new directory under m.tmp the evaluation stowage
// does, as cue's own command line takes it: the embedded schema
// (schema/stowage.cue), the config files of src (configFiles) and one
// file that embeds #Config in the package, so that `cue export` unifies
// every file with #Config and exports the result, as schema.Load does
// before it decodes. It returns the directory and the files in the order
// cue export is given them.
func (m *meter) cueDir(name, src string) (string, []string, error) {
	dir := filepath.Join(m.tmp, "cue-"+strings.ReplaceAll(name, "/", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	files, err := configFiles(src)
	if err != nil {
		return "", nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			return "", nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "stowage.cue"), schema.Source, 0o644); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "zz_bench_config.cue"), []byte("package stowage\n\n#Config\n"), 0o644); err != nil {
		return "", nil, err
	}
	return dir, append([]string{"stowage.cue", "zz_bench_config.cue"}, files...), nil
}

// examples measures `stowage render` of each example against `cue
// export` of the same files with the schema, and start-up (`stowage
// version` against `cue version`). Ratios are of CPU time (user plus
// system), which a shared machine moves less than the wall time.
func (m *meter) examples(b *strings.Builder, cueVersion string) ([]goal, error) {
	var goals []goal
	b.WriteString("## Render versus `cue export` of the same files with the schema\n\n")
	fmt.Fprintf(b, "`cue` is built from cuelang.org/go %s, the version stowage embeds. `cue export` is given the example's config\n"+
		"files, stowage's schema (schema/stowage.cue) and a file embedding `#Config` in the package: the evaluation render\n"+
		"starts with. The ratio is of CPU time (user plus system); what stowage does on top is reading the lock, the plan\n"+
		"and writing the Kubernetes objects.\n\n", cueVersion)
	b.WriteString("| example | stowage render: time, CPU | cue export + schema: time, CPU | CPU ratio | peak memory: stowage / cue | goal ≤ 2× |\n|---|---:|---:|---:|---:|---|\n")
	env := []string{"SUBMARINE_HARBOR_PASSWORD=bench-password", "STOWAGE_ALLOW_ENV=SUBMARINE_HARBOR_PASSWORD"}
	for _, ex := range examples {
		src := filepath.Join(m.root, "examples", ex)
		s, err := measure(m.runs, env, m.root, "", append([]string{m.stowage, "render", src}, exampleFlags[ex]...)...)
		if err != nil {
			return nil, err
		}
		dir, files, err := m.cueDir(ex, src)
		if err != nil {
			return nil, err
		}
		c, err := measure(m.runs, nil, dir, "", append([]string{m.cue, "export"}, files...)...)
		if err != nil {
			return nil, err
		}
		r := cpuRatio(s, c)
		fmt.Fprintf(b, "| %s | %s, %s | %s, %s | %.2f× | %s / %s | %s |\n", ex, ms(s.wall), ms(s.cpu), ms(c.wall), ms(c.cpu), r, mb(s.rss), mb(c.rss), verdict(r <= renderGoal))
		goals = append(goals, goal{goal: "render " + ex + " ≤ 2× the CPU of `cue export` + schema",
			measured: fmt.Sprintf("%.2f× (%s against %s)", r, ms(s.cpu), ms(c.cpu)), met: r <= renderGoal})
	}
	b.WriteString("\nCommands: `stowage render examples/EXAMPLE`; in a directory holding the example's config files, stowage.cue and\n" +
		"zz_bench_config.cue (`package stowage` and `#Config`): `cue export stowage.cue zz_bench_config.cue FILES…`.\n\n")

	sv, err := measure(m.runs, nil, m.root, "", m.stowage, "version")
	if err != nil {
		return nil, err
	}
	cv, err := measure(m.runs, nil, m.root, "", m.cue, "version")
	if err != nil {
		return nil, err
	}
	r := cpuRatio(sv, cv)
	fmt.Fprintf(b, "| start-up | stowage version | cue version | CPU ratio | goal ≤ 2× |\n|---|---:|---:|---:|---|\n"+
		"| time, CPU | %s, %s | %s, %s | %.2f× | %s |\n\n", ms(sv.wall), ms(sv.cpu), ms(cv.wall), ms(cv.cpu), r, verdict(r <= versionGoal))
	b.WriteString("Commands: `stowage version`, `cue version`. What each binary initialises before main: `GODEBUG=inittrace=1 stowage version`.\n\n")
	goals = append(goals, goal{goal: "`stowage version` ≤ 2× the CPU of `cue version`",
		measured: fmt.Sprintf("%.2f× (%s against %s)", r, ms(sv.cpu), ms(cv.cpu)), met: r <= versionGoal})
	return goals, nil
}

// scaleSizes are the image counts of the scale series; the last is the
// goal's.
var scaleSizes = []int{100, 500, 2000, 8000, 20000}

// scale measures render of synthetic configs of scaleSizes images beside
// `cue export` of the same files with the schema, with the growth of
// each per 10× images (where CUE itself grows faster than linearly, the
// column shows it).
func (m *meter) scale(b *strings.Builder, cueVersion string) ([]goal, error) {
	b.WriteString("## Scale: render time and memory against images\n\n")
	b.WriteString("Synthetic configs from `go run ./hack/scalegen -n N -o DIR` (N images, N/40 pullers in up to 20 namespaces, the lock\n" +
		"from the stand-in images; about half are multi-arch indexes), rendered by stowage and exported by cue with the schema\n" +
		"as above. From 8,000 images on each figure is the median of 3 runs.\n\n")
	b.WriteString("| images | render: time, CPU | peak memory | output | cue export + schema: time, CPU | CPU ratio | CPU growth per 10× images: stowage / cue |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	var goals []goal
	var prevS, prevC sample
	var prevN int
	cueDirs := map[int][]string{}
	sizes := m.sizes
	if sizes == nil {
		sizes = scaleSizes
	}
	for i, n := range sizes {
		dir := filepath.Join(m.tmp, fmt.Sprintf("scale-%d", n))
		if err := configgen.Generate(n, 40, dir); err != nil {
			return nil, err
		}
		runs := m.runs
		if n >= 8000 {
			runs = min(runs, 3)
		}
		s, err := measure(runs, nil, m.root, "", m.stowage, "render", dir)
		if err != nil {
			return nil, err
		}
		outSize, _ := outputSize(m.stowage, "render", dir)
		cdir, files, err := m.cueDir(fmt.Sprintf("scale-%d", n), dir)
		if err != nil {
			return nil, err
		}
		c, err := measure(runs, nil, cdir, "", append([]string{m.cue, "export"}, files...)...)
		if err != nil {
			return nil, err
		}
		cueDirs[n] = append([]string{cdir}, files...)
		growth := ""
		if i > 0 {
			factor := float64(n) / float64(prevN)
			growth = fmt.Sprintf("%.1f× / %.1f×", perTen(cpuRatio(s, prevS), factor), perTen(cpuRatio(c, prevC), factor))
		}
		r := cpuRatio(s, c)
		fmt.Fprintf(b, "| %d | %s, %s | %s | %s | %s, %s | %.2f× | %s |\n", n, ms(s.wall), ms(s.cpu), mb(s.rss), mb(outSize), ms(c.wall), ms(c.cpu), r, growth)
		if i == len(sizes)-1 {
			goals = append(goals, goal{goal: fmt.Sprintf("render %d images ≤ 2× the CPU of `cue export` + schema", n),
				measured: fmt.Sprintf("%.2f× (%s against %s)", r, ms(s.cpu), ms(c.cpu)), met: r <= 2})
		}
		prevS, prevC, prevN = s, c, n
	}
	b.WriteString("\nCommands: `stowage render DIR` (the YAML stream to stdout); `cue export stowage.cue zz_bench_config.cue config.yaml`\n" +
		"as above. Linear growth is 10.0× per 10× images; a fixed start-up cost makes small inputs grow less.\n\n")
	if m.sizes != nil {
		return goals, nil
	}
	if err := m.profileCUE(b, cueDirs, cueVersion); err != nil {
		return nil, err
	}
	return goals, nil
}

// fnScale measures `stowage fn` pinning n Deployments (writeFnInput)
// against kyamlnoop, kyaml's fn/framework returning the same
// ResourceList unchanged.
func (m *meter) fnScale(b *strings.Builder, n int, kyamlnoop string) ([]goal, error) {
	input := filepath.Join(m.tmp, fmt.Sprintf("fn-%d.yaml", n))
	if err := writeFnInput(input, n); err != nil {
		return nil, err
	}
	fi, err := os.Stat(input)
	if err != nil {
		return nil, err
	}
	// The input is larger than stowage fn's default bound (4 MiB): the
	// operator's variable raises the cap and the flag the function's
	// bound up to it. Its memory peaks above the default bound (2 GiB),
	// which the operator's other variable raises.
	bound := fmt.Sprint(fi.Size() + 1<<20)
	runs := min(m.runs, 5)
	env := []string{"STOWAGE_MAX_INPUT_BYTES=" + bound, "STOWAGE_MAX_MEMORY=" + fmt.Sprint(8<<30)}
	s, err := measure(runs, env, m.root, input, m.stowage, "fn", "--max-input-bytes", bound)
	if err != nil {
		return nil, err
	}
	k, err := measure(runs, nil, m.root, input, kyamlnoop)
	if err != nil {
		return nil, err
	}
	cr, mr := cpuRatio(s, k), float64(s.rss)/float64(k.rss)
	fmt.Fprintf(b, "| the function on %d Deployments (%s ResourceList, pin mode, the ImageLock item beside them) | time | CPU | peak memory |\n|---|---:|---:|---:|\n", n, mb(fi.Size()))
	fmt.Fprintf(b, "| kyaml fn/framework no-op (hack/perf/kyamlnoop) | %s | %s | %s |\n", ms(k.wall), ms(k.cpu), mb(k.rss))
	fmt.Fprintf(b, "| `stowage fn` | %s | %s | %s |\n", ms(s.wall), ms(s.cpu), mb(s.rss))
	fmt.Fprintf(b, "| ratio (goal ≤ 1.5× in CPU and memory) | | %.2f× | %.2f× |\n\n", cr, mr)
	fmt.Fprintf(b, "Commands: `go run ./hack/perf -fn-input FILE -fn-n %d` writes the ResourceList; `STOWAGE_MAX_INPUT_BYTES=SIZE\n"+
		"STOWAGE_MAX_MEMORY=8GiB stowage fn --max-input-bytes SIZE < FILE` (SIZE: the file's size and 1 MiB); `kyamlnoop < FILE` "+
		"(median of %d runs).\n\n", n, runs)
	return []goal{{goal: fmt.Sprintf("`stowage fn` pinning %d objects ≤ 1.5× a kyaml no-op in CPU and memory", n),
		measured: fmt.Sprintf("%.2f× CPU (%s against %s), %.2f× memory (%s against %s)", cr, ms(s.cpu), ms(k.cpu), mr, mb(s.rss), mb(k.rss)),
		met:      cr <= 1.5 && mr <= 1.5}}, nil
}

// perTen converts a growth ratio over an input factor to the growth per
// 10×.
func perTen(ratio, factor float64) float64 {
	if ratio <= 0 || factor <= 1 {
		return 0
	}
	return math.Pow(ratio, 1/math.Log10(factor))
}
