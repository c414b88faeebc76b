package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// arcLookup is the pprof focus of CUE's field lookup by label: both
// functions scan a struct's arcs (its fields) one by one
// (cuelang.org/go internal/core/adt, fields.go and composite.go in
// v0.17.1), so adding n fields to one struct costs O(n²) comparisons.
const arcLookup = `adt\.\(\*nodeContext\)\.getArc$|adt\.\(\*Vertex\)\.LookupRaw$`

// profileSizes are the sizes the CUE evaluation is profiled at.
var profileSizes = []int{2000, 8000, 20000}

// cueRun is one profiled `cue export`: its CPU time and the part of its
// CPU profile's samples spent in arcLookup, in milliseconds.
type cueRun struct {
	n               int
	cpu             sample
	total, inLookup float64
}

// profileCUE profiles `cue export` on the scale series' directories
// (cueDirs: size → directory and files, as scale wrote them) and on a
// plain CUE file of one struct with n fields under a pattern constraint,
// which holds nothing of stowage's, and writes the table: where CUE's
// super-linear growth goes.
func (m *meter) profileCUE(b *strings.Builder, cueDirs map[int][]string, cueVersion string) error {
	var withSchema, plain []cueRun
	for _, n := range profileSizes {
		d, ok := cueDirs[n]
		if !ok {
			continue
		}
		r, err := m.profileOne(n, d[0], d[1:])
		if err != nil {
			return err
		}
		withSchema = append(withSchema, r)
		dir := filepath.Join(m.tmp, fmt.Sprintf("cue-fields-%d", n))
		if err := writeFieldsFile(dir, n); err != nil {
			return err
		}
		if r, err = m.profileOne(n, dir, []string{"fields.cue"}); err != nil {
			return err
		}
		plain = append(plain, r)
	}
	fmt.Fprintf(b, "Where `cue export`'s CPU goes as the images grow (cuelang.org/go %s, `cue export --cpuprofile P …`, then\n"+
		"`go tool pprof -top -nodefraction=0 -focus='%s' P`: the samples whose stack holds CUE's field lookup\n"+
		"by label, which scans the fields of a struct one by one). \"one struct of N fields\" is `fields.cue`, which holds nothing of\n"+
		"stowage's: `#Image: {reference: string}`, `images: [string]: #Image` and `images: {…}` with N fields `\"img-NNNNN\": reference: \"…\"`.\n\n",
		cueVersion, arcLookup)
	b.WriteString("| input | images | cue export: time, CPU | profile samples | in field lookup | CPU growth per 10× images |\n|---|---:|---:|---:|---:|---:|\n")
	for _, rows := range []struct {
		name string
		runs []cueRun
	}{{"scale config + schema", withSchema}, {"one struct of N fields (fields.cue)", plain}} {
		for i, r := range rows.runs {
			growth := ""
			if i > 0 {
				p := rows.runs[i-1]
				growth = fmt.Sprintf("%.1f×", perTen(cpuRatio(r.cpu, p.cpu), float64(r.n)/float64(p.n)))
			}
			share := 0.0
			if r.total > 0 {
				share = 100 * r.inLookup / r.total
			}
			fmt.Fprintf(b, "| %s | %d | %s, %s | %.0f ms | %.0f ms (%.0f %%) | %s |\n", rows.name, r.n, ms(r.cpu.wall), ms(r.cpu.cpu), r.total, r.inLookup, share, growth)
		}
	}
	b.WriteString("\n")
	return nil
}

// profileOne measures `cue export files…` in dir (median of up to 3 runs)
// and profiles one more run.
func (m *meter) profileOne(n int, dir string, files []string) (cueRun, error) {
	s, err := measure(min(m.runs, 3), nil, dir, "", append([]string{m.cue, "export"}, files...)...)
	if err != nil {
		return cueRun{}, err
	}
	prof := filepath.Join(dir, "cpu.pprof")
	cmd := exec.Command(m.cue, append([]string{"export", "--cpuprofile", prof}, files...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return cueRun{}, fmt.Errorf("cue export --cpuprofile in %s: %v: %.500s", dir, err, out)
	}
	total, in, err := focusedSamples(prof, arcLookup)
	if err != nil {
		return cueRun{}, err
	}
	return cueRun{n: n, cpu: s, total: total, inLookup: in}, nil
}

// pprofHeader is the line `go tool pprof -top -unit=ms` prints before its
// table: the flat time of the nodes shown and the profile's total (a
// zero is printed without its unit).
var pprofHeader = regexp.MustCompile(`Showing nodes accounting for ([0-9.]+)(?:ms)?, [0-9.]+% of ([0-9.]+)(?:ms)? total`)

// focusedSamples returns the profile's total sample time and the sample
// time whose stack matches focus, in milliseconds, as `go tool pprof`
// reports them: with no node dropped, the nodes shown account for exactly
// the samples shown (all of them without a focus, the focused ones with
// one).
func focusedSamples(prof, focus string) (total, focused float64, err error) {
	if total, _, err = pprofShown(prof, ""); err != nil {
		return 0, 0, err
	}
	_, focused, err = pprofShown(prof, focus)
	return total, focused, err
}

// pprofShown runs `go tool pprof -top` on prof with focus (none when
// empty) and returns the total and the time of the nodes shown, in
// milliseconds; a focus matching nothing shows 0.
func pprofShown(prof, focus string) (total, shown float64, err error) {
	args := []string{"tool", "pprof", "-top", "-unit=ms", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0"}
	if focus != "" {
		args = append(args, "-focus="+focus)
	}
	out, err := exec.Command("go", append(args, prof)...).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("go tool pprof %s: %v: %.500s", prof, err, out)
	}
	sm := pprofHeader.FindSubmatch(out)
	if sm == nil {
		return 0, 0, fmt.Errorf("go tool pprof %s: no %q line in: %.500s", prof, pprofHeader, out)
	}
	shown, _ = strconv.ParseFloat(string(sm[1]), 64)
	total, _ = strconv.ParseFloat(string(sm[2]), 64)
	return total, shown, nil
}

// writeFieldsFile writes dir/fields.cue: one struct of n fields under a
// pattern constraint, the shape of a config's images in plain CUE.
func writeFieldsFile(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("package fields\n\n#Image: {reference: string}\nimages: [string]: #Image\nimages: {\n")
	for i := range n {
		fmt.Fprintf(&b, "\t\"img-%05d\": reference: \"registry.example:5000/app-%05d:v1\"\n", i, i)
	}
	b.WriteString("}\n")
	return os.WriteFile(filepath.Join(dir, "fields.cue"), []byte(b.String()), 0o644)
}
