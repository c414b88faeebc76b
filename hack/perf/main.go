// Command perf measures stowage side by side with the tools users would pick
// instead, on this machine, and writes docs/benchmarks.md:
//
//   - render of each example (whole process, median of -runs) against
//     `cue export` of the same files with stowage's schema, cue built from
//     the same cuelang.org/go version as stowage, and start-up (`stowage
//     version` against `cue version`), in CPU time;
//
//   - a scale series of synthetic configs (100 to 20,000 images): render
//     beside `cue export` + schema of the same files, time, CPU, peak
//     resident memory and the growth of each per 10× images;
//
//   - the KRM function: its share of `kustomize build` over a kyaml
//     fn/framework no-op (hack/perf/kyamlnoop), beside the share of the
//     same function in a binary of its own (hack/perf/fnmain: fn.Main, none
//     of the other commands' libraries), beside CUE's share alone
//     (hack/perf/cuefloor: the no-op validating its functionConfig with
//     stowage's schema, the floor while the function keeps the schema), and
//     `stowage fn` pinning -fn-n Deployments against that no-op;
//
//   - with -lock-report and -lock-json, the registry section written by
//     hack/bench (lock and bump against crane, skopeo and kbld);
//
//   - a goals table at the top, with met or missed.
//
// It prints figures only: the reading of them (why a goal is missed, what
// the profiles showed) is prose people write below keptMarker in the same
// file, which perf keeps.
//
// `make bench` runs hack/bench, then this:
//
//	go run ./hack/perf -stowage bin/stowage -lock-report bin/bench-registry.md -lock-json bin/bench-registry.json -out docs/benchmarks.md
//
// Two modes measure a part and print it to stdout, leaving the report
// alone: -startup (the examples, start-up and the function's share:
// `make bench-startup`) and -large (render of 20,000 images and the
// function pinning -fn-n objects: `make bench-large`).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 15, "runs per measurement; the median is reported")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "report file")
	flag.StringVar(&o.stowage, "stowage", "", "the stowage binary to measure (default: build one)")
	flag.StringVar(&o.lockReport, "lock-report", "", "markdown section on the registry side to include (hack/bench -md)")
	flag.StringVar(&o.lockJSON, "lock-json", "", "headline numbers of the registry side (hack/bench -json)")
	flag.StringVar(&o.mirrorReport, "mirror-report", "", "markdown section on stowage mirror to include (hack/mirrorbench -md)")
	fnInput := flag.String("fn-input", "", "only write the ResourceList of the fn measurement (-fn-n Deployments) to this file")
	flag.IntVar(&o.fnN, "fn-n", 20000, "Deployments in the fn pinning measurement")
	flag.BoolVar(&o.startup, "startup", false, "measure only the start-up goals (render of each example against cue export, stowage version against cue version, the function's share of kustomize build) and print their sections and goals to stdout; the report is not written")
	flag.BoolVar(&o.large, "large", false, "measure only the 20,000-image goals (render of the largest scale config against cue export, stowage fn pinning -fn-n objects against a kyaml no-op) and print their tables and goals to stdout; the report is not written")
	flag.Parse()
	if *fnInput != "" {
		if err := writeFnInput(*fnInput, o.fnN); err != nil {
			fmt.Fprintln(os.Stderr, "perf:", err)
			os.Exit(1)
		}
		return
	}
	if err := perf(o); err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

type options struct {
	startup, large                                   bool
	runs, fnN                                        int
	out, stowage, lockReport, lockJSON, mirrorReport string
}

// sample is one measured command: median wall time, median CPU time (user
// plus system: on a loaded machine it moves less than the wall time) and
// peak RSS in bytes.
type sample struct {
	wall, cpu time.Duration
	rss       int64
}

// measure runs argv runs times (after one warm-up) in dir with env added and
// returns the median wall time and the largest peak RSS. stdin, when not
// empty, is the standard input of every run.
func measure(runs int, env []string, dir, stdin string, argv ...string) (sample, error) {
	var walls, cpus []time.Duration
	var rss int64
	for i := -1; i < runs; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = dir
		if stdin != "" {
			f, err := os.Open(stdin)
			if err != nil {
				return sample{}, err
			}
			cmd.Stdin = f
			defer f.Close()
		}
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
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		rss = max(rss, peakRSS(cmd.ProcessState))
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return sample{wall: walls[len(walls)/2], cpu: cpus[len(cpus)/2], rss: rss}, nil
}

// goal is one line of the goals table.
type goal struct {
	goal, measured string
	met            bool
	skip           bool // not measured
}

// lockSummary is hack/bench's -json.
type lockSummary struct {
	N                int     `json:"n"`
	LockSeconds      float64 `json:"lockSeconds"`
	LockPerRef       float64 `json:"lockRequestsPerRef"`
	CraneRatio       float64 `json:"craneOverLock"`
	KbldRatio        float64 `json:"kbldOverLock"`
	KbldPerRef       float64 `json:"kbldRequestsPerRef"`
	KbldNote         string  `json:"kbldNote"`
	SkopeoRatio      float64 `json:"skopeoOverLock"`
	BumpManifestsRef float64 `json:"bumpManifestRequestsPerRef"`
	BumpPings        int     `json:"bumpPings"`
}

func perf(o options) error {
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
	loadStart := loadavg()
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	cueVersion, err := buildTools(o, root, tmp, bin, stowage)
	if err != nil {
		return err
	}
	var goals []goal
	var body strings.Builder
	b := &body
	m := &meter{runs: o.runs, root: root, tmp: tmp, stowage: stowage, cue: cue}

	if o.large {
		return large(o, m, b, root, bin, cueVersion, loadStart)
	}

	// 1. Render of each example against cue export with the schema, and
	// start-up.
	gs, err := m.examples(b, cueVersion)
	if err != nil {
		return err
	}
	goals = append(goals, gs...)
	if o.startup {
		if err := buildFunctions(root, bin); err != nil {
			return err
		}
		k, err := exec.LookPath("kustomize")
		if err != nil {
			return err
		}
		b.WriteString("## The KRM function in `kustomize build`\n\n")
		gs, err := krm(b, o.runs, root, tmp, bin, k)
		if err != nil {
			return err
		}
		goals = append(goals, gs...)
		printGoals(goals, body.String(), loadStart)
		return nil
	}

	// 2. Scale series, with cue export of the same files beside it.
	gs, err = m.scale(b, cueVersion)
	if err != nil {
		return err
	}
	goals = append(goals, gs...)

	// 3. The KRM function: its share of kustomize build over a kyaml
	// no-op, and pinning 20,000 objects.
	if err := buildFunctions(root, bin); err != nil {
		return err
	}
	b.WriteString("## The KRM function in `kustomize build`\n\n")
	if k, err := exec.LookPath("kustomize"); err != nil {
		b.WriteString("kustomize is not installed here; `go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2` and run again.\n\n")
		goals = append(goals, goal{goal: "stowage's share of `kustomize build` ≤ 15 ms CPU over a kyaml no-op function", skip: true, measured: "kustomize not installed"})
	} else {
		gs, err := krm(b, o.runs, root, tmp, bin, k)
		if err != nil {
			return err
		}
		goals = append(goals, gs...)
	}
	gs, err = m.fnScale(b, o.fnN, filepath.Join(bin, "kyamlnoop"))
	if err != nil {
		return err
	}
	goals = append(goals, gs...)

	// 4. The registry side, from hack/bench.
	gs, lockSection, err := registryGoals(o)
	if err != nil {
		return err
	}
	goals = append(goals, gs...)
	loadEnd := loadavg()

	return writeBenchmarks(o, root, goals, body.String(), lockSection, loadStart, loadEnd)
}

// large measures the goals at the largest scale alone: render of the last
// of scaleSizes against cue export with the schema, and stowage fn
// pinning o.fnN objects against kyaml's no-op; it prints them as
// printGoals does.
func large(o options, m *meter, b *strings.Builder, root, bin, cueVersion, loadStart string) error {
	if err := buildFunctions(root, bin); err != nil {
		return err
	}
	m.sizes = scaleSizes[len(scaleSizes)-1:]
	goals, err := m.scale(b, cueVersion)
	if err != nil {
		return err
	}
	gs, err := m.fnScale(b, o.fnN, filepath.Join(bin, "kyamlnoop"))
	if err != nil {
		return err
	}
	printGoals(append(goals, gs...), b.String(), loadStart)
	return nil
}

// printGoals writes to stdout the load average at loadStart and now, the
// goals table's rows and body, for the modes that measure a part and
// leave the report alone.
func printGoals(goals []goal, body, loadStart string) {
	fmt.Printf("Load average (1, 5, 15 min) at the start: %s; at the end: %s.\n\n", loadStart, loadavg())
	for _, g := range goals {
		fmt.Printf("| %s | %s | %s |\n", g.goal, g.measured, verdict(g.met))
	}
	fmt.Printf("\n%s", body)
}

// buildTools puts stowage (built, or --stowage copied), cue at the
// cuelang.org/go version of go.mod and a no-op KRM function into bin, and
// returns that cue version.
func buildTools(o options, root, tmp, bin, stowage string) (string, error) {
	fmt.Fprintln(os.Stderr, "building stowage, cue and a no-op KRM function …")
	if o.stowage != "" {
		abs, err := filepath.Abs(o.stowage)
		if err != nil {
			return "", err
		}
		if err := run(root, nil, "cp", abs, stowage); err != nil {
			return "", err
		}
		// stowage-full beside the front, when it is there (make build).
		if full := filepath.Join(filepath.Dir(abs), "stowage-full"); fileExists(full) {
			if err := run(root, nil, "cp", full, filepath.Join(filepath.Dir(stowage), "stowage-full")); err != nil {
				return "", err
			}
		}
	} else {
		// The release's pair: the front, which the figures measure, and
		// stowage-full beside it (cmd/stowage/fullonly.go).
		if err := run(root, nil, "go", "build", "-o", filepath.Join(filepath.Dir(stowage), "stowage-full"), "./cmd/stowage"); err != nil {
			return "", err
		}
		if err := run(root, nil, "go", "build", "-tags", "stowagefront", "-o", stowage, "./cmd/stowage"); err != nil {
			return "", err
		}
	}
	// cue from the cuelang.org/go version in go.mod: both run one evaluator.
	cueVersion, err := output(root, "go", "list", "-m", "-f", "{{.Version}}", "cuelang.org/go")
	if err != nil {
		return "", err
	}
	cue, err := buildCue(cueVersion)
	if err != nil {
		return "", err
	}
	if err := run(root, nil, "cp", cue, filepath.Join(bin, "cue")); err != nil {
		return "", err
	}
	if err := buildNoop(tmp, filepath.Join(bin, "noop")); err != nil {
		return "", err
	}

	return cueVersion, nil
}

// registryGoals are the registry side's goals and report section, from
// hack/bench's report (--lock-report) and summary (--lock-json); none
// without them.
func registryGoals(o options) (goals []goal, lockSection []byte, err error) {
	if o.lockReport != "" {
		if lockSection, err = os.ReadFile(o.lockReport); err != nil {
			return nil, nil, err
		}
	}
	if o.lockJSON != "" {
		data, err := os.ReadFile(o.lockJSON)
		if err != nil {
			return nil, nil, err
		}
		var ls lockSummary
		if err := json.Unmarshal(data, &ls); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", o.lockJSON, err)
		}
		g := goal{goal: fmt.Sprintf("lock of %d tags ≥ 20× faster than a `crane digest` loop", ls.N), measured: fmt.Sprintf("%.1f×", ls.CraneRatio), met: ls.CraneRatio >= 20}
		goals = append(goals, g)
		if ls.KbldRatio > 0 {
			g := goal{goal: "lock ≥ 2× faster than kbld", measured: fmt.Sprintf("%.1f×", ls.KbldRatio), met: ls.KbldRatio >= 2}
			goals = append(goals, g)
		} else {
			goals = append(goals, goal{goal: "lock ≥ 2× faster than kbld", skip: true, measured: ls.KbldNote})
		}
		goals = append(goals, goal{goal: "steady-state bump: exactly 1 request per unique reference",
			measured: fmt.Sprintf("%.3f manifest requests per reference, plus %d ping for the whole run", ls.BumpManifestsRef, ls.BumpPings),
			met:      ls.BumpManifestsRef == 1})
	}
	return goals, lockSection, nil
}

// writeBenchmarks writes the report to o.out: the header (machine,
// commit, load at start and end), the goals, the sections body and
// lockSection, the --mirror-report section, and what was written below
// the kept marker before.
func writeBenchmarks(o options, root string, goals []goal, body string, lockSection []byte, loadStart, loadEnd string) error {
	// The report: header, goals, sections.
	var r strings.Builder
	cpu, _ := output(root, "sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")
	mem, _ := output(root, "sh", "-c", "awk '/MemTotal/ {printf \"%.0f GiB\", $2/1048576}' /proc/meminfo")
	goVersion, _ := output(root, "go", "env", "GOVERSION")
	commit, _ := output(root, "git", "rev-parse", "--short", "HEAD")
	fmt.Fprintf(&r, "# Benchmarks\n\nWritten by `make bench` on %s at commit %s: %d cores (%s), %s of memory, %s, %s.\n"+
		"Load average (1, 5, 15 min) when it started: %s; when it ended: %s. Other work shared the machine: figures move by\n"+
		"10–30%% between runs here, so the ratios, measured side by side, are the headline, not the absolute times.\n"+
		"Each figure is the median of %d whole-process runs after one warm-up unless said otherwise; memory is the peak resident set.\n\n",
		time.Now().UTC().Format("2006-01-02"), commit, runtime.NumCPU(), strings.TrimSpace(cpu), mem, goVersion, runtime.GOOS+"/"+runtime.GOARCH,
		loadStart, loadEnd, o.runs)
	r.WriteString("## Goals\n\n| goal | measured | verdict |\n|---|---|---|\n")
	for _, g := range goals {
		v := verdict(g.met)
		if g.skip {
			v = "not measured"
		}
		fmt.Fprintf(&r, "| %s | %s | %s |\n", g.goal, g.measured, v)
	}
	r.WriteString("\n")
	r.WriteString(body)
	r.Write(lockSection)
	if o.mirrorReport != "" {
		mirrorSection, err := os.ReadFile(o.mirrorReport)
		if err != nil {
			return err
		}
		r.Write(mirrorSection)
	}
	// What people wrote below the marker (what the figures mean, why a goal
	// is missed, what the profiles showed) is kept as it is.
	r.WriteString(keptMarker + "\n")
	if old, err := os.ReadFile(o.out); err == nil {
		if _, kept, ok := strings.Cut(string(old), keptMarker+"\n"); ok {
			r.WriteString(kept)
		}
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.out, []byte(r.String()), 0o644)
}

// buildFunctions builds into bin the KRM functions krm measures beside
// stowage: kyamlnoop (the floor), cuefloor (kyamlnoop plus CUE validating
// the functionConfig with stowage's schema) and fnmain (fn.Main alone,
// named stowage-fn).
func buildFunctions(root, bin string) error {
	for _, name := range []string{"kyamlnoop", "cuefloor"} {
		if err := run(root, nil, "go", "build", "-o", filepath.Join(bin, name), "./hack/perf/"+name); err != nil {
			return err
		}
	}
	return run(root, nil, "go", "build", "-o", filepath.Join(bin, "stowage-fn"), "./hack/perf/fnmain")
}

// krm measures kustomize build of the Argo CD example with its
// transformers (the function), without them, with a no-op exec function
// in their place (kustomize's own cost of running any exec function) and
// with kyaml's fn/framework no-op (kyamlnoop: the parse and write every
// kyaml function does), with cuefloor (that no-op plus CUE validating
// the functionConfig with stowage's schema: CUE's share, the floor of a
// function that keeps the schema), with fn.Main in a binary of its own
// (hack/perf/fnmain, stowage-fn) in stowage's place, and `stowage fn` and
// stowage-fn alone on the ResourceList kustomize sends them. The goal is on CPU time: stowage's build minus the
// kyaml no-op's. A process's CPU includes the functions kustomize ran
// and waited for (wait4's rusage).
func krm(b *strings.Builder, runs int, root, tmp, bin, kustomize string) ([]goal, error) {
	names := []string{"with", "without", "noop", "kyamlnoop", "cuefloor", "fnmain", "capture"}
	dirs := map[string]string{}
	for _, name := range names {
		d := filepath.Join(tmp, "krm-"+name)
		if err := run(root, nil, "cp", "-r", filepath.Join(root, "examples", "gitops-argo", "prepull"), d); err != nil {
			return nil, err
		}
		dirs[name] = d
	}
	kf := filepath.Join(dirs["without"], "kustomization.yaml")
	kb, err := os.ReadFile(kf)
	if err != nil {
		return nil, err
	}
	kb, _, _ = bytes.Cut(kb, []byte("transformers:"))
	if err := os.WriteFile(kf, kb, 0o644); err != nil {
		return nil, err
	}
	// The no-op functions, stowage-fn and the capturing wrapper replace
	// stowage in the function's annotation (stowage-fn, as fn.Main, takes
	// the args written for stowage).
	input := filepath.Join(tmp, "fn-input.yaml")
	capture := filepath.Join(bin, "capture")
	if err := os.WriteFile(capture, []byte("#!/bin/sh\ntee "+input+" | stowage fn\n"), 0o755); err != nil {
		return nil, err
	}
	for name, path := range map[string]string{"noop": "noop", "kyamlnoop": "kyamlnoop", "cuefloor": "cuefloor", "fnmain": "stowage-fn", "capture": "capture"} {
		ff := filepath.Join(dirs[name], "stowage.yaml")
		fb, err := os.ReadFile(ff)
		if err != nil {
			return nil, err
		}
		fb = bytes.Replace(fb, []byte("path: stowage"), []byte("path: "+path), 1)
		if name != "fnmain" {
			fb = bytes.Replace(fb, []byte("args: [fn]"), []byte("args: []"), 1)
		}
		if err := os.WriteFile(ff, fb, 0o644); err != nil {
			return nil, err
		}
	}
	path := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	build := func(dir string) (sample, error) {
		return measure(runs, path, root, "", kustomize, "build", "--enable-alpha-plugins", "--enable-exec", dir)
	}
	if err := run(root, path, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", dirs["capture"]); err != nil {
		return nil, err
	}
	got := map[string]sample{}
	for _, name := range names[:6] {
		s, err := build(dirs[name])
		if err != nil {
			return nil, err
		}
		got[name] = s
	}
	alone, err := measure(runs, nil, root, input, filepath.Join(bin, "stowage"), "fn")
	if err != nil {
		return nil, err
	}
	kyamlAlone, err := measure(runs, nil, root, input, filepath.Join(bin, "kyamlnoop"))
	if err != nil {
		return nil, err
	}
	fnmainAlone, err := measure(runs, nil, root, input, filepath.Join(bin, "stowage-fn"))
	if err != nil {
		return nil, err
	}
	floorAlone, err := measure(runs, nil, root, input, filepath.Join(bin, "cuefloor"))
	if err != nil {
		return nil, err
	}
	wo := got["without"]
	b.WriteString("| kustomize build of examples/gitops-argo/prepull | time | CPU | CPU added to the build without a function |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(b, "| without the function | %s | %s | |\n", ms(wo.wall), ms(wo.cpu))
	for _, row := range []struct{ name, what string }{
		{"noop", "with a program copying stdin to stdout in its place (kustomize's own cost of any exec function)"},
		{"kyamlnoop", "with a kyaml fn/framework no-op in its place (hack/perf/kyamlnoop)"},
		{"cuefloor", "with that no-op plus CUE validating the functionConfig with stowage's schema, nothing of stowage's own (hack/perf/cuefloor)"},
		{"with", "with the stowage function"},
		{"fnmain", "with the function in a binary of its own (fn.Main: hack/perf/fnmain, stowage-fn) in its place"},
	} {
		s := got[row.name]
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", row.what, ms(s.wall), ms(s.cpu), ms(s.cpu-wo.cpu))
	}
	share := got["with"].cpu - got["kyamlnoop"].cpu
	fnShare := got["fnmain"].cpu - got["kyamlnoop"].cpu
	floor := got["cuefloor"].cpu - got["kyamlnoop"].cpu
	fmt.Fprintf(b, "| **stowage's share: with the function minus with the kyaml no-op** | | **%s** | |\n", ms(share))
	fmt.Fprintf(b, "| **stowage-fn's share: with it minus with the kyaml no-op** | | **%s** | |\n", ms(fnShare))
	fmt.Fprintf(b, "| **CUE's share, the floor while the schema is kept: cuefloor minus the kyaml no-op** | | **%s** | |\n\n", ms(floor))
	fmt.Fprintf(b, "Alone on the ResourceList kustomize sends: `stowage fn < input.yaml` %s (%s CPU), `stowage-fn < input.yaml` %s (%s CPU), `kyamlnoop < input.yaml` %s (%s CPU), `cuefloor < input.yaml` %s (%s CPU).\n\n",
		ms(alone.wall), ms(alone.cpu), ms(fnmainAlone.wall), ms(fnmainAlone.cpu), ms(kyamlAlone.wall), ms(kyamlAlone.cpu), ms(floorAlone.wall), ms(floorAlone.cpu))
	b.WriteString("Commands: `kustomize build --enable-alpha-plugins --enable-exec DIR`; the second directory is the first without\n" +
		"its `transformers:`; the others name the program in the function's annotation instead of stowage.\n\n")
	return []goal{{goal: "stowage's share of `kustomize build` ≤ 15 ms CPU over a kyaml no-op function",
		measured: fmt.Sprintf("%s (the build with the function %s CPU, with the kyaml no-op %s); CUE's own share, validating the functionConfig with the schema and nothing else, is %s of it", ms(share), ms(got["with"].cpu), ms(got["kyamlnoop"].cpu), ms(floor)),
		met:      share <= fnShareGoal}, {goal: "the same with the function in a binary of its own (fn.Main, stowage-fn)",
		measured: fmt.Sprintf("%s (the build with stowage-fn %s CPU)", ms(fnShare), ms(got["fnmain"].cpu)),
		met:      fnShare <= fnShareGoal}}, nil
}

// buildCue returns the cue command line of cuelang.org/go at version,
// built once into the user's cache directory (stowage/bench/cue-VERSION)
// from a throw-away module: stowage's go.mod is untouched, and only the
// Go module proxy is asked for what the module cache lacks.
func buildCue(version string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "stowage", "bench")
	out := filepath.Join(dir, "cue-"+version)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	src := filepath.Join(dir, "cue-src-"+version)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module benchcue\n\ngo 1.26\n"), 0o644); err != nil {
		return "", err
	}
	if err := run(src, nil, "go", "get", "cuelang.org/go/cmd/cue@"+version); err != nil {
		return "", err
	}
	if err := run(src, nil, "go", "build", "-o", out+".tmp", "cuelang.org/go/cmd/cue"); err != nil {
		return "", err
	}
	return out, os.Rename(out+".tmp", out)
}

// buildNoop builds the no-op exec KRM function: a Go program that copies
// its standard input to its standard output.
func buildNoop(tmp, out string) error {
	src := filepath.Join(tmp, "noop-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module noop\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	main := "// Command noop is a KRM exec function that returns its ResourceList unchanged.\npackage main\n\nimport (\n\t\"io\"\n\t\"os\"\n)\n\nfunc main() { io.Copy(os.Stdout, os.Stdin) }\n"
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(main), 0o644); err != nil {
		return err
	}
	return run(src, []string{"GOFLAGS="}, "go", "build", "-o", out, ".")
}

// keptMarker separates what perf writes from what people wrote below it.
const keptMarker = "<!-- Below this line: written by people; make bench keeps it as it is. -->"

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
func mb(n int64) string {
	if n < 10e6 {
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}

// loadavg is the 1, 5 and 15 minute load averages of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// outputSize runs the command once and returns the size of its stdout.
func outputSize(argv ...string) (int64, error) {
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	return int64(len(out)), err
}

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

// fileExists reports whether p names an existing file.
func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
