package imageset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/stowage/stowage/internal/isolate"
)

// ChartChildArg is the first argument of a process that renders one chart
// for its parent (ChartOptions.Child): a binary that sets Child must, first
// thing in main, run ServeChartChild when os.Args[1] is ChartChildArg.
const ChartChildArg = "__stowage-render-chart"

// chartRequest is one render, as the parent sends it to the child.
type chartRequest struct {
	Path   string
	Opts   ChartOptions
	Limits ChartLimits
	// Diagnose renders each template alone, naming it on stdout first,
	// to find the one that hits a limit.
	Diagnose bool
}

// chartResponse is the child's answer.
type chartResponse struct {
	Set    Set
	Source string
	Err    string
	// Log is each message Helm wrote to the standard logger (its
	// warnings about values), for the parent to log as it would have.
	Log []string
}

// diagnosePrefix starts the line a diagnosing child writes before it
// renders a template alone.
const diagnosePrefix = "template "

// fromChartChild renders the chart in a child process of o.Child under
// lim. When the child hits a limit, a second child renders the templates
// one at a time (each alone, with the chart's partials), naming each on
// its stdout before it starts, under the same limits, so the error names
// the template that hits the limit alone; the whole takes at most twice
// lim.Time.
func fromChartChild(p string, o ChartOptions, lim ChartLimits) (Set, string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, "", err
	}
	// Every option but the limits and the child reaches the child, the
	// values files as absolute paths.
	opts := o
	opts.ValueFiles = absAll(o.ValueFiles)
	req := chartRequest{Path: abs, Opts: opts, Limits: lim}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, "", err
	}
	var out bytes.Buffer
	runErr := isolate.Run(o.Child, ChartChildArg, in, &out, isolate.Limits{Time: lim.Time, Memory: lim.Memory})
	if runErr == nil {
		var resp chartResponse
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
			return nil, "", fmt.Errorf("chart %s: reading the render from its child process: %w", p, err)
		}
		// Helm's warnings, to this process's logger as an in-process
		// render writes them.
		for _, m := range resp.Log {
			log.Print(strings.TrimSuffix(m, "\n"))
		}
		if resp.Err != "" {
			return nil, "", errors.New(resp.Err)
		}
		return resp.Set, resp.Source, nil
	}
	var what string
	switch {
	case errors.Is(runErr, isolate.ErrTime):
		what = fmt.Sprintf("rendering took more than %v, the limit of a chart (raise it with --chart-timeout)", lim.Time)
	case errors.Is(runErr, isolate.ErrMemory):
		what = fmt.Sprintf("rendering took more than %d bytes of memory, the limit of a chart (raise it with --max-chart-memory)", lim.Memory)
	case errors.Is(runErr, isolate.ErrStack):
		what = "rendering recursed too deeply (its stack passed the Go runtime's limit): look for a template that includes itself, through include or tpl"
	default:
		return nil, "", fmt.Errorf("chart %s: rendering %w", p, runErr)
	}
	return nil, "", fmt.Errorf("chart %s: %s: %s", p, culprit(o.Child, req, lim), what)
}

// culprit renders req's chart template by template in a diagnosing child
// and returns "template NAME" for the one it was rendering when a limit
// ended it, or "its templates together" when none hits a limit alone.
func culprit(exe string, req chartRequest, lim ChartLimits) string {
	req.Diagnose = true
	in, err := json.Marshal(req)
	if err != nil {
		return "its templates"
	}
	var out bytes.Buffer
	runErr := isolate.Run(exe, ChartChildArg, in, &out, isolate.Limits{Time: lim.Time, Memory: lim.Memory})
	if runErr == nil || !(errors.Is(runErr, isolate.ErrTime) || errors.Is(runErr, isolate.ErrMemory) || errors.Is(runErr, isolate.ErrStack)) {
		return "its templates together"
	}
	last := ""
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), diagnosePrefix); ok {
			last = name
		}
	}
	if last == "" {
		return "its templates"
	}
	return "template " + last
}

// messages keeps each write of a log.Logger (one message each).
type messages []string

func (m *messages) Write(p []byte) (int, error) {
	if len(*m) < 1000 {
		*m = append(*m, string(p))
	}
	return len(p), nil
}

func absAll(files []string) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		if a, err := filepath.Abs(f); err == nil && f != Stdin {
			f = a
		}
		out = append(out, f)
	}
	return out
}

// ServeChartChild is the child's side of ChartOptions.Child: it reads one
// render from stdin, bounds its own address space (Unix) and heap
// (isolate.WatchHeap) at the request's memory limit, renders the chart in
// this process and writes the image set or the error to stdout. It
// returns the exit code: 0 when it wrote an answer, 1 when it could not.
func ServeChartChild(stdin io.Reader, stdout io.Writer) int {
	// The request: paths and flags, and at most MaxValuesBytes of values
	// from standard input, base64 in the JSON.
	data, err := io.ReadAll(io.LimitReader(stdin, 1<<20+2*MaxValuesBytes))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var req chartRequest
	if err := json.Unmarshal(data, &req); err != nil || req.Path == "" {
		fmt.Fprintln(os.Stderr, "not a chart render request", err)
		return 1
	}
	lim := req.Limits.orDefault()
	isolate.LimitAddressSpace(uint64(lim.Memory) + isolate.Overhead)
	isolate.WatchHeap(lim.Memory)
	if req.Diagnose {
		diagnose(req, lim, stdout)
		return 0
	}
	var resp chartResponse
	var logged messages
	log.SetFlags(0)
	log.SetPrefix("")
	log.SetOutput(&logged)
	// The parent's deadline ends the child first, so that the parent
	// names the template; this one only stops a child whose parent died.
	own := lim
	own.Time = 2*lim.Time + 10*time.Second
	resp.Set, resp.Source, err = fromChart(req.Path, req.Opts, own)
	if err != nil {
		resp.Err = err.Error()
	}
	resp.Log = logged
	out, err := json.Marshal(resp)
	if err == nil {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// diagnose renders each template of req's chart alone (with every
// partial, so that include still finds the chart's definitions), writing
// its name to w before it starts; errors are ignored, only a limit hit
// (which ends the process) matters.
func diagnose(req chartRequest, lim ChartLimits, w io.Writer) {
	chrt, err := loadChart(req.Path)
	if err != nil {
		return
	}
	type tmpl struct {
		name string
		f    *chart.File
	}
	var all []tmpl
	var walk func(c *chart.Chart, prefix string)
	walk = func(c *chart.Chart, prefix string) {
		for _, f := range c.Templates {
			if !strings.HasPrefix(path.Base(f.Name), "_") {
				all = append(all, tmpl{prefix + f.Name, f})
			}
		}
		for _, d := range c.Dependencies() {
			walk(d, prefix+"charts/"+d.Name()+"/")
		}
	}
	walk(chrt, chrt.Name()+"/")
	slices.SortFunc(all, func(a, b tmpl) int { return strings.Compare(a.name, b.name) })
	for _, t := range all {
		vals, err := mergeValues(req.Opts)
		if err != nil {
			return
		}
		fmt.Fprintf(w, "%s%s\n", diagnosePrefix, t.name)
		// No time limit of its own: the parent's ends the process
		// while it is still in the template that hit it.
		_, _, _ = template(onlyTemplate(chrt, t.f), vals, req.Opts, lim)
	}
}

// onlyTemplate is a copy of c and its dependencies holding the partials
// (templates whose name starts with '_') and keep, no other template.
func onlyTemplate(c *chart.Chart, keep *chart.File) *chart.Chart {
	cp := *c
	cp.Templates = nil
	for _, f := range c.Templates {
		if f == keep || strings.HasPrefix(path.Base(f.Name), "_") {
			cp.Templates = append(cp.Templates, f)
		}
	}
	var deps []*chart.Chart
	for _, d := range c.Dependencies() {
		deps = append(deps, onlyTemplate(d, keep))
	}
	cp.SetDependencies(deps...)
	return &cp
}
