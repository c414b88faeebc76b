// Command perf measures stowage side by side with the tools users would pick
// instead, on this machine, and writes docs/benchmarks.md:
//
//   - render of each example (whole process, median of -runs) against
//     `cue export` of the same files, with cue built from the same
//     cuelang.org/go version as stowage;
//
//   - a scale series of synthetic configs (100 to 8,000 images): median time
//     and peak resident memory of render, and the growth per 4× input;
//
//   - the time the KRM function adds to `kustomize build`;
//
//   - with -lock-report, the registry section written by hack/bench (lock
//     against a crane digest loop and the other tools).
//
//     go run ./hack/perf -out docs/benchmarks.md
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/stowage/stowage/internal/synth"
)

func main() {
	runs := flag.Int("runs", 7, "runs per measurement; the median is reported")
	out := flag.String("out", "docs/benchmarks.md", "report file")
	lockReport := flag.String("lock-report", "", "markdown section on the registry side to include")
	flag.Parse()
	if err := perf(*runs, *out, *lockReport); err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

// sample is one measured command: median wall time and peak RSS in bytes.
type sample struct {
	wall time.Duration
	rss  int64
}

// measure runs argv runs times (after one warm-up) in dir with env added and
// returns the median wall time and the largest peak RSS.
func measure(runs int, env []string, dir string, argv ...string) (sample, error) {
	var walls []time.Duration
	var rss int64
	for i := -1; i < runs; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return sample{}, fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
		}
		wall := time.Since(start)
		if i < 0 {
			continue // warm-up: page cache, first exec
		}
		walls = append(walls, wall)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = max(rss, ru.Maxrss*1024) // Linux reports KiB
		}
	}
	slices.Sort(walls)
	return sample{wall: walls[len(walls)/2], rss: rss}, nil
}

var scaleSizes = []int{100, 500, 2000, 8000}

func perf(runs int, out, lockReport string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "stowage-perf-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	stowage := filepath.Join(bin, "stowage")
	cue := filepath.Join(bin, "cue")
	fmt.Fprintln(os.Stderr, "building stowage and cue …")
	if err := run(root, nil, "go", "build", "-o", stowage, "./cmd/stowage"); err != nil {
		return err
	}
	// cue from the cuelang.org/go version in go.mod: both run one evaluator.
	cueVersion, err := output(root, "go", "list", "-m", "-f", "{{.Version}}", "cuelang.org/go")
	if err != nil {
		return err
	}
	if err := run(root, []string{"GOBIN=" + bin}, "go", "install", "cuelang.org/go/cmd/cue@"+cueVersion); err != nil {
		return err
	}

	var b strings.Builder
	cpu, _ := output(root, "sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")
	goVersion, _ := output(root, "go", "env", "GOVERSION")
	fmt.Fprintf(&b, "# Benchmarks\n\nMeasured by `make bench` on %s: %d cores (%s), %s, %s.\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), strings.TrimSpace(cpu), goVersion, runtime.GOOS+"/"+runtime.GOARCH)
	fmt.Fprintf(&b, "Each figure is the median of %d whole-process runs after one warm-up; memory is the peak resident set.\n"+
		"Ratios are the headline: absolute times move with the machine.\n\n", runs)

	// 1. Examples against cue export.
	b.WriteString("## Render versus `cue export`\n\n")
	fmt.Fprintf(&b, "`cue` is built from cuelang.org/go %s, the version stowage embeds. `cue export` evaluates the same files\n"+
		"(without stowage's schema, lock and Kubernetes objects): the ratio is what stowage's work on top costs.\n\n", cueVersion)
	b.WriteString("| example | stowage render | cue export | ratio | goal ≤ 1.2× |\n|---|---:|---:|---:|---|\n")
	env := []string{"SUBMARINE_HARBOR_PASSWORD=bench-password"}
	for _, ex := range []string{"openpai-offline", "submarine-notebooks"} {
		dir := filepath.Join(root, "examples", ex)
		files, err := configFiles(dir)
		if err != nil {
			return err
		}
		s, err := measure(runs, env, root, stowage, "render", dir)
		if err != nil {
			return err
		}
		c, err := measure(runs, nil, dir, append([]string{cue, "export"}, files...)...)
		if err != nil {
			return err
		}
		ratio := float64(s.wall) / float64(c.wall)
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f× | %s |\n", ex, ms(s.wall), ms(c.wall), ratio, verdict(ratio <= 1.2))
	}
	b.WriteString("\nCommands: `stowage render examples/EXAMPLE`, and in the example's directory `cue export` of its .cue and .yaml files.\n\n")

	// 2. Scale series.
	b.WriteString("## Scale: render time and memory against images\n\n")
	b.WriteString("Synthetic configs from `go run ./hack/scalegen -n N -o DIR` (N images, N/40 pullers in up to 20 namespaces).\n\n")
	b.WriteString("| images | render | peak memory | time growth per 4× | memory growth per 4× |\n|---:|---:|---:|---:|---:|\n")
	var prev sample
	for i, n := range scaleSizes {
		dir := filepath.Join(tmp, fmt.Sprintf("scale-%d", n))
		if err := synth.Generate(n, 40, dir); err != nil {
			return err
		}
		s, err := measure(runs, nil, root, stowage, "render", dir)
		if err != nil {
			return err
		}
		growth, mgrowth := "", ""
		if i > 0 {
			factor := float64(n) / float64(scaleSizes[i-1])
			growth = fmt.Sprintf("%.2f×", perFour(float64(s.wall)/float64(prev.wall), factor))
			mgrowth = fmt.Sprintf("%.2f×", perFour(float64(s.rss)/float64(prev.rss), factor))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", n, ms(s.wall), mb(s.rss), growth, mgrowth)
		prev = s
	}
	b.WriteString("\nGoal: 2,000 images under 1 s and 300 MB, time linear in images (4.00× per 4×; a fixed start-up cost makes\n" +
		"small inputs grow less). Command: `stowage render DIR`.\n\n")

	// 3. The KRM function in kustomize build.
	b.WriteString("## The KRM function in `kustomize build`\n\n")
	if k, err := exec.LookPath("kustomize"); err != nil {
		b.WriteString("kustomize is not installed here; `go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2` and run again.\n\n")
	} else if err := krm(&b, runs, root, tmp, bin, k); err != nil {
		return err
	}

	if lockReport != "" {
		lr, err := os.ReadFile(lockReport)
		if err != nil {
			return err
		}
		b.Write(lr)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

// krm measures kustomize build of the Argo CD example with and without its
// transformers (the function).
func krm(b *strings.Builder, runs int, root, tmp, bin, kustomize string) error {
	with := filepath.Join(tmp, "krm-with")
	without := filepath.Join(tmp, "krm-without")
	for _, d := range []string{with, without} {
		if err := run(root, nil, "cp", "-r", filepath.Join(root, "examples", "gitops-argo", "prepull"), d); err != nil {
			return err
		}
	}
	kf := filepath.Join(without, "kustomization.yaml")
	kb, err := os.ReadFile(kf)
	if err != nil {
		return err
	}
	kb, _, _ = bytes.Cut(kb, []byte("transformers:"))
	if err := os.WriteFile(kf, kb, 0o644); err != nil {
		return err
	}
	path := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	w, err := measure(runs, path, root, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", with)
	if err != nil {
		return err
	}
	wo, err := measure(runs, path, root, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", without)
	if err != nil {
		return err
	}
	added := w.wall - wo.wall
	b.WriteString("| kustomization | kustomize build | added by the function | goal < 100 ms |\n|---|---:|---:|---|\n")
	fmt.Fprintf(b, "| examples/gitops-argo/prepull without the function | %s | | |\n", ms(wo.wall))
	fmt.Fprintf(b, "| examples/gitops-argo/prepull with the function | %s | %s | %s |\n\n", ms(w.wall), ms(added), verdict(added < 100*time.Millisecond))
	b.WriteString("Commands: `kustomize build --enable-alpha-plugins --enable-exec DIR`, the second directory being the first\n" +
		"without its `transformers:`. Part of the difference is kustomize's own cost of running any exec function\n" +
		"(writing the ResourceList, starting a process); `go test -run '^$' -bench Process ./fn` measures the function in-process.\n\n")
	return nil
}

// perFour converts a growth ratio over an input factor to the growth per 4×.
func perFour(ratio, factor float64) float64 {
	if ratio <= 0 || factor <= 1 {
		return 0
	}
	return math.Pow(ratio, math.Log(4)/math.Log(factor))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
func mb(n int64) string         { return fmt.Sprintf("%.0f MB", float64(n)/1e6) }

// configFiles lists the config files of an example as stowage's loader reads
// them (without the lock).
func configFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if n == "stowage.lock.yaml" || strings.HasPrefix(n, ".") {
			continue
		}
		switch filepath.Ext(n) {
		case ".cue", ".yaml", ".yml", ".json":
			files = append(files, n)
		}
	}
	return files, nil
}

func run(dir string, env []string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return nil
}

func output(dir string, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
