package imageset

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/workload"
)

// Bounds of FromChart.
const (
	// MaxChartBytes bounds a chart: the .tgz file, or the regular files of
	// a chart directory together (20 MiB). Helm's loader bounds a .tgz's
	// decompressed size on its own (100 MiB, 5 MiB a file).
	MaxChartBytes = 20 << 20
	// MaxChartFiles bounds the files of a chart directory.
	MaxChartFiles = 10000
	// MaxValuesBytes bounds each --values file (4 MiB).
	MaxValuesBytes = 4 << 20
	// MaxRenderedBytes bounds the manifests a chart renders to (64 MiB).
	MaxRenderedBytes = 64 << 20
)

// ChartLimits bound rendering one chart: only the operator sets them
// (images from-chart's --chart-timeout, --max-chart-memory and
// --max-chart-objects), never the chart or its values.
type ChartLimits struct {
	// Time bounds rendering the chart's templates and reading the
	// rendered objects.
	Time time.Duration
	// Memory bounds the heap bytes rendering may take: in a child
	// process (ChartOptions.Child) the child's heap watch and its address
	// space (this plus isolate.Overhead); in this process only the
	// rendering's own check of the rendered size.
	Memory int64
	// Objects bounds the objects (YAML documents) the templates render.
	Objects int
}

// DefaultChartLimits are the limits of a zero ChartLimits field: one
// minute, 1 GiB of heap, 10,000 objects, each far above a large real
// chart (the GPU Operator renders about 60 objects in 40 MB) and below
// what exhausts a repo server (a template doubling a string took 24 GB).
var DefaultChartLimits = ChartLimits{Time: time.Minute, Memory: 1 << 30, Objects: 10000}

// orDefault is l with its zero fields DefaultChartLimits'.
func (l ChartLimits) orDefault() ChartLimits {
	d := DefaultChartLimits
	if l.Time > 0 {
		d.Time = l.Time
	}
	if l.Memory > 0 {
		d.Memory = l.Memory
	}
	if l.Objects > 0 {
		d.Objects = l.Objects
	}
	return d
}

// workloadKinds are the kinds whose images FromChart refuses when they do
// not parse; pod templates of other kinds count when theirs parse
// (workload.EachImage's shape rule).
var workloadKinds = []string{"CronJob", "DaemonSet", "Deployment", "Job", "Pod", "ReplicaSet", "ReplicationController", "StatefulSet"}

// ChartOptions are the values FromChart renders a chart with, as helm
// template takes them.
type ChartOptions struct {
	// ValueFiles are values files, later ones override earlier ones
	// (helm's --values); each a local file of at most MaxValuesBytes, or
	// Stdin ("-"): the values in StdinValues.
	ValueFiles []string
	// StdinValues are the values the file "-" of ValueFiles stands for,
	// read by the caller from standard input (at most MaxValuesBytes).
	StdinValues []byte `json:",omitempty"`
	// Set are key=value overrides (helm's --set), applied after the files.
	Set []string
	// Limits bound the rendering; zero fields are DefaultChartLimits'.
	Limits ChartLimits `json:"-"`
	// Child, when set, is the executable (normally os.Executable()) the
	// chart is rendered in, as a child process run with the one argument
	// ChartChildArg (see ServeChartChild): a template that asks for more
	// memory or time than Limits allow ends the child, not this process.
	// "" renders in this process, with the time limit only.
	Child string `json:"-"`
	// APIVersions are added to the API versions the templates see in
	// .Capabilities.APIVersions (helm template's --api-versions: a group
	// version "resource.k8s.io/v1beta1" or a version and kind
	// "resource.k8s.io/v1beta1/ResourceClaim"), so that a chart that
	// requires an API renders.
	APIVersions []string
	// KubeVersion is the Kubernetes version the templates see in
	// .Capabilities.KubeVersion and the chart's kubeVersion is checked
	// against (helm template's --kube-version, "v1.33.0"); "" is Helm's
	// default.
	KubeVersion string
}

// FromChart renders the Helm chart at path (a chart directory or a .tgz)
// offline with Helm's SDK, as `helm template` does (client only, a dry
// run, no repository or cluster contacted; dependencies must be in the
// chart's charts/ already), and returns the image set of what its
// workloads would run, with the chart's "name version" for the file's
// comment:
//
//   - every container, init container and ephemeral container image of
//     every Pod, Deployment, StatefulSet, DaemonSet, Job, CronJob,
//     ReplicaSet and ReplicationController rendered, hooks included (test
//     hooks not: they run only on helm test);
//   - every image the chart's values describe as a map (ValueImages) that
//     the rendered manifests use: the reference it composes to appears
//     as a string in a rendered object, or a rendered object holds a map
//     with the same fields (an operator's custom resource carrying the
//     values on, as the GPU Operator's ClusterPolicy carries driver,
//     toolkit and devicePlugin); only maps that name a tag, version or
//     digest count, since a bare repository would match any string.
//
// Errors name the chart, the object and the field; a limit hit (see
// ChartLimits) names the chart and the template that hit it.
func FromChart(path string, o ChartOptions) (Set, string, error) {
	lim := o.Limits.orDefault()
	if o.Child != "" {
		return fromChartChild(path, o, lim)
	}
	return fromChart(path, o, lim)
}

// fromChart is FromChart in this process.
func fromChart(path string, o ChartOptions, lim ChartLimits) (Set, string, error) {
	chrt, err := loadChart(path)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", path, err)
	}
	if err := checkDependencies(chrt); err != nil {
		return nil, "", fmt.Errorf("chart %s: %w (stowage never fetches a chart: run helm dependency build first)", path, err)
	}
	for _, f := range o.ValueFiles {
		if f == Stdin {
			if len(o.StdinValues) > MaxValuesBytes {
				return nil, "", fmt.Errorf("%s: larger than %d bytes, the limit of a values file", f, MaxValuesBytes)
			}
			continue
		}
		if err := checkFileSize(f, MaxValuesBytes, "a values file"); err != nil {
			return nil, "", err
		}
	}
	vals, err := mergeValues(o)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: values: %w", path, err)
	}
	// coalesced are the values the templates saw: Helm coalesces (and
	// warns about what it drops) once, as helm template does.
	var coalesced map[string]any
	manifest, err := render(lim.Time, func() (string, error) {
		out, v, err := template(chrt, vals, o, lim)
		coalesced = v
		return out, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: rendering: %w", path, err)
	}
	items, err := (&kio.ByteReader{Reader: strings.NewReader(manifest), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: the rendered manifests: %w", path, err)
	}
	var refs []imageref.Ref
	var errs []error
	from := map[string][]string{} // lock key -> where the chart names it
	byTemplate := map[string]bool{}
	workload.EachImage(items, func(item, img *yaml.RNode, field string) {
		if workload.ImageVolume(field) {
			// An image volume's artifact is not run; listing it as an
			// image would have render run it as a container.
			return
		}
		s := yaml.GetValue(img)
		r, err := imageref.Parse(s)
		switch {
		case err != nil && !slices.Contains(workloadKinds, item.GetKind()):
			return // found by shape in another kind: not an image after all
		case err != nil:
			errs = append(errs, fmt.Errorf("chart %s: %s %s %s: %w", path, item.GetKind(), objectName(item), field, err))
			return
		}
		refs = append(refs, r)
		from[r.Key()] = append(from[r.Key()], item.GetKind()+" "+objectName(item)+" "+field)
		byTemplate[r.Key()] = true
	})
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	strs, maps := usedInManifests(items)
	osSuffix := map[string]bool{}
	notes := map[string]string{}
	for _, vi := range ValueImages(coalesced) {
		if vi.Fields["tag"] == "" && vi.Fields["version"] == "" && vi.Fields["digest"] == "" {
			continue // "nginx" alone would match any scalar; a workload names it anyway
		}
		carrier, ok := strs[vi.Reference]
		if !ok {
			i := slices.IndexFunc(maps, func(m usedMap) bool { return subset(vi.Fields, m.fields) })
			if i < 0 {
				continue
			}
			carrier = maps[i].object
		}
		r, err := imageref.Parse(vi.Reference)
		if err != nil {
			return nil, "", fmt.Errorf("chart %s: values %s: %w", path, vi.Path, err)
		}
		refs = append(refs, r)
		from[r.Key()] = append(from[r.Key()], "values "+vi.Path+", carried by "+carrier)
		if n := numberSpelling(chrt, o, vi); n != "" {
			notes[r.Key()] = n
		}
		if runtimeOSSuffix(vi, carrier) {
			osSuffix[r.Key()] = true
		}
	}
	if len(refs) == 0 {
		return nil, "", fmt.Errorf("chart %s: its rendered workloads run no image", path)
	}
	set, err := Build(refs)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", path, err)
	}
	for i := range set {
		r, err := imageref.Parse(set[i].Reference)
		if err != nil {
			continue
		}
		k := r.Key()
		set[i].From, set[i].Heuristic = from[k], !byTemplate[k]
		set[i].Note = notes[k]
		if osSuffix[k] {
			set[i].OSSuffix = true
			if set[i].Note != "" {
				set[i].Note += "; "
			}
			set[i].Note += "the GPU Operator completes this tag at run time with the node's OS (" + r.Tag + "-ubuntu22.04, " + r.Tag + "-rhel9.4, ...): nodes pull those, not this; list each OS with --per-node-label LABEL=OS:FILE (OS as the suffix is spelled, ubuntu22.04)"
		}
	}
	return set, "chart " + chrt.Name() + " " + chrt.Metadata.Version, nil
}

// template renders chrt with the user's values vals as `helm template`
// does (helm v3's action.Install with ClientOnly and DryRun, whose steps
// these are, without the packages for clusters, registries and plugins
// that action links into every command's start-up): dependencies
// enabled and their values merged (chartutil.ProcessDependenciesWithMerge),
// the release values of a first install of release chrt.Name() in the
// "default" namespace against Helm's default capabilities with o's
// KubeVersion and APIVersions (helm template's --kube-version and
// --api-versions), the values
// checked against the chart's values.schema.json, the templates rendered
// without a cluster (engine.Engine, no lookup) and sorted into manifests
// and hooks (releaseutil.SortManifests, install order), NOTES.txt left
// out. It returns the manifests, then every hook's but the test hooks'
// (they run only on helm test), as one YAML stream, and the coalesced
// values the templates saw (.Values). vals is changed.
//
// Before the manifests are split, the rendered files together must be at
// most MaxRenderedBytes, and their objects at most lim.Objects; the error
// names the template rendering the most.
func template(chrt *chart.Chart, vals map[string]any, o ChartOptions, lim ChartLimits) (string, map[string]any, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	if o.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(o.KubeVersion)
		if err != nil {
			return "", nil, fmt.Errorf("--kube-version %q: %w", o.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, o.APIVersions...)
	if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
		return "", nil, err
	}
	if kv := chrt.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return "", nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.String())
	}
	opts := chartutil.ReleaseOptions{Name: chrt.Name(), Namespace: "default", Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals, opts, caps, false)
	if err != nil {
		return "", nil, err
	}
	files, err := (&engine.Engine{}).Render(chrt, top)
	if err != nil {
		return "", nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	if err := checkRendered(files, lim); err != nil {
		return "", nil, err
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	for _, h := range hooks {
		if slices.ContainsFunc(h.Events, func(e release.HookEvent) bool { return strings.HasPrefix(string(e), "test") }) {
			continue
		}
		b.WriteString("\n---\n")
		b.WriteString(h.Manifest)
	}
	values, _ := top["Values"].(chartutil.Values)
	return b.String(), values, nil
}

// checkDependencies refuses a chart whose Chart.yaml names a dependency
// that is not in its charts/ directory (helm's action.CheckDependencies).
func checkDependencies(chrt *chart.Chart) error {
	var missing []string
	for _, r := range chrt.Metadata.Dependencies {
		if !slices.ContainsFunc(chrt.Dependencies(), func(d *chart.Chart) bool { return d.Name() == r.Name }) {
			missing = append(missing, r.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s", strings.Join(missing, ", "))
	}
	return nil
}

// Stdin is the file name that stands for standard input: as a values
// file (ChartOptions.StdinValues) and as an image list (ReadListFrom).
const Stdin = "-"

// readValues is the content of the values file f: o.StdinValues for
// Stdin, else the file's.
func readValues(o ChartOptions, f string) ([]byte, error) {
	if f == Stdin {
		return o.StdinValues, nil
	}
	return os.ReadFile(f)
}

// mergeValues is the user's values as helm's --values and --set give
// them (helm v3's pkg/cli/values Options.MergeValues, local files only):
// each values file read (chartutil.ReadValues) and merged over the ones
// before it, a map into a map key by key and anything else replacing,
// then each --set applied in order (strvals.ParseInto). Errors name the
// file or the --set.
func mergeValues(o ChartOptions) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range o.ValueFiles {
		data, err := readValues(o, f)
		if err != nil {
			return nil, err
		}
		vals, err := chartutil.ReadValues(data)
		if err != nil {
			return nil, fmt.Errorf("failed to parse %s: %w", f, err)
		}
		base = mergeMaps(base, vals)
	}
	for _, s := range o.Set {
		if err := strvals.ParseInto(s, base); err != nil {
			return nil, fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	return base, nil
}

// mergeMaps returns a with b merged over it: where both hold a map at a
// key the maps are merged, else b's value wins.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// checkRendered refuses rendered files (template name -> output) of more
// than MaxRenderedBytes together, or of more than lim.Objects YAML
// documents that are not empty, naming the template with the most.
func checkRendered(files map[string]string, lim ChartLimits) error {
	var bytes, objects int
	var big, many string
	count := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := files[name]
		bytes += len(f)
		if big == "" || len(f) > len(files[big]) {
			big = name
		}
		count[name] = len(releaseutil.SplitManifests(f))
		objects += count[name]
		if many == "" || count[name] > count[many] {
			many = name
		}
	}
	if bytes > MaxRenderedBytes {
		return fmt.Errorf("template %s: the templates render %d bytes together (this one %d), more than %d, the limit of a chart", big, bytes, len(files[big]), MaxRenderedBytes)
	}
	if objects > lim.Objects {
		return fmt.Errorf("template %s: the templates render %d objects together (this one %d), more than %d, the limit of a chart (raise it with --max-chart-objects)", many, objects, count[many], lim.Objects)
	}
	return nil
}

// render runs run and gives up after limit (Helm's template engine takes
// no context; the rendering goroutine is then left to finish on its own,
// which ChartOptions.Child bounds).
func render(limit time.Duration, run func() (string, error)) (string, error) {
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := run()
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(limit):
		return "", fmt.Errorf("took more than %v, the limit of a chart (raise it with --chart-timeout)", limit)
	}
}

func objectName(n *yaml.RNode) string {
	if ns := n.GetNamespace(); ns != "" {
		return ns + "/" + n.GetName()
	}
	return n.GetName()
}

func checkFileSize(path string, max int64, what string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > max {
		return fmt.Errorf("%s: larger than %d bytes, the limit of %s", path, max, what)
	}
	return nil
}

// numberSpelling says, for an image map whose tag or version is a YAML
// number written otherwise than Helm prints it (`tag: 1.10` printed 1.1,
// `version: 1e3`), what the chart deploys and how to get what was written;
// "" otherwise. The spelling is read from the last values file that sets
// the field (the --values files, then the chart's values.yaml), with
// kyaml, each file already bounded.
func numberSpelling(chrt *chart.Chart, o ChartOptions, vi ValueImage) string {
	field := "tag"
	if vi.Fields["tag"] == "" {
		field = "version"
	}
	printed := vi.Fields[field]
	if printed == "" {
		return ""
	}
	var sources [][]byte
	for i := len(o.ValueFiles) - 1; i >= 0; i-- {
		if b, err := readValues(o, o.ValueFiles[i]); err == nil {
			sources = append(sources, b)
		}
	}
	for _, f := range chrt.Raw {
		if f.Name == chartutil.ValuesfileName {
			sources = append(sources, f.Data)
		}
	}
	keys := append(strings.Split(vi.Path, "."), field)
	for _, b := range sources {
		doc, err := yaml.Parse(string(b))
		if err != nil {
			continue
		}
		n, err := doc.Pipe(yaml.Lookup(keys...))
		if err != nil || n == nil {
			continue
		}
		y := n.YNode()
		if y.Kind != yaml.ScalarNode || y.ShortTag() != yaml.NodeTagFloat && y.ShortTag() != yaml.NodeTagInt || y.Value == printed {
			return ""
		}
		return fmt.Sprintf("values %s.%s is written %s, a YAML number Helm prints as %s: the chart deploys :%s; quote it (%q) if %s is the tag meant", vi.Path, field, y.Value, printed, printed, y.Value, y.Value)
	}
	return ""
}

// usedMap is a mapping of a rendered object with its image fields
// (imageFields) that are scalars, and the object ("Kind name").
type usedMap struct {
	fields map[string]string
	object string
}

// usedInManifests collects every scalar of the rendered objects, with the
// first object ("Kind name") holding it, and every mapping's scalar fields
// named as ValueImages names them.
func usedInManifests(items []*yaml.RNode) (map[string]string, []usedMap) {
	strs := map[string]string{}
	var maps []usedMap
	var walk func(n *yaml.Node, obj string, depth int)
	walk = func(n *yaml.Node, obj string, depth int) {
		if n == nil || depth > 100 {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode:
			if _, ok := strs[n.Value]; !ok {
				strs[n.Value] = obj
			}
		case yaml.MappingNode:
			m := map[string]string{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.ScalarNode && slices.Contains(imageFields, k.Value) {
					m[k.Value] = v.Value
				}
				walk(v, obj, depth+1)
			}
			if len(m) > 0 {
				maps = append(maps, usedMap{m, obj})
			}
		case yaml.SequenceNode, yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, obj, depth+1)
			}
		}
	}
	for _, it := range items {
		walk(it.YNode(), it.GetKind()+" "+objectName(it), 0)
	}
	return strs, maps
}

// osSuffixed matches a tag that names an operating system already
// ("550.54.15-ubuntu22.04", "-rhel9.4", "-rhcos4.15"), which the GPU
// Operator does not complete again.
var osSuffixed = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-(ubuntu|rhel|rhcos|centos|sles|ubi)[0-9.]*$`) })

// runtimeOSSuffix reports whether the operator that reads vi from carrier
// completes its tag at run time with the node's operating system: the
// NVIDIA GPU Operator's driver (values driver, carried by its
// ClusterPolicy or NVIDIADriver), whose version gains "-<os id><os version>" unless it
// names one already or is a digest (the operator's documentation on
// precompiled and per-OS driver images).
func runtimeOSSuffix(vi ValueImage, carrier string) bool {
	v := vi.Fields["version"]
	if vi.Fields["tag"] != "" {
		v = vi.Fields["tag"]
	}
	return vi.Path == "driver" && (strings.HasPrefix(carrier, "ClusterPolicy ") || strings.HasPrefix(carrier, "NVIDIADriver ")) && v != "" &&
		!strings.HasPrefix(v, "sha256:") && vi.Fields["digest"] == "" && !osSuffixed().MatchString(v)
}

// subset reports whether every field of want is in m with the same value.
func subset(want, m map[string]string) bool {
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return true
}

// imageFields are the fields of an image map in a chart's values.
var imageFields = []string{"registry", "repository", "image", "tag", "version", "digest"}

// ValueImage is an image a chart's values describe as a map.
type ValueImage struct {
	// Path is the map's path in the values, "driver" or "operator.image".
	Path string
	// Fields are the map's image fields (imageFields) that are strings.
	Fields map[string]string
	// Reference is the reference the fields compose to.
	Reference string
}

// ValueImages finds, sorted by path, the maps in a chart's values that
// describe an image: a non-empty string "repository" or "image", with
// optional "registry", "tag" or "version" (the GPU Operator's name for
// the tag) and "digest". They compose, as the common charts' templates
// do, to [registry/][repository/]image[:tag|:version][@digest]; "image"
// alone or "repository" alone is the path. A tag or version written as a
// YAML number (`version: 8`, `tag: 1.10`) is spelled as Helm's templates
// print it (fmt's %v of the number: 8, and 1.1 for 1.10, which is what
// the chart then deploys); one that is a digest (`version: sha256:…`, a
// form operators accept) composes to repository@digest. A map with
// "enabled: false" describes a component switched off and is left out,
// with every map under it (a section switched off as a whole). A map
// whose "image" is itself a map is not one (its child is found instead).
func ValueImages(vals map[string]any) []ValueImage {
	var out []ValueImage
	var walk func(path string, m map[string]any, depth int)
	walk = func(path string, m map[string]any, depth int) {
		if depth > 100 || m["enabled"] == false {
			return
		}
		fields := map[string]string{}
		for _, k := range imageFields {
			if s := scalarText(m[k], k == "tag" || k == "version"); s != "" {
				fields[k] = s
			}
		}
		if fields["repository"] != "" || fields["image"] != "" {
			var parts []string
			for _, k := range []string{"registry", "repository", "image"} {
				if fields[k] != "" {
					parts = append(parts, strings.Trim(fields[k], "/"))
				}
			}
			ref := strings.Join(parts, "/")
			t := fields["tag"]
			if t == "" {
				t = fields["version"]
			}
			switch {
			case strings.HasPrefix(t, "sha256:"):
				if fields["digest"] == "" {
					ref += "@" + t
				}
			case t != "":
				ref += ":" + t
			}
			if d := fields["digest"]; d != "" {
				ref += "@" + d
			}
			out = append(out, ValueImage{Path: path, Fields: fields, Reference: ref})
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if c, ok := m[k].(map[string]any); ok {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, c, depth+1)
			}
		}
	}
	walk("", vals, 0)
	return out
}

// scalarText is v as a template prints it when v is a string, or, with
// numbers set, a number (float64 from a values file, int64 from --set);
// "" for anything else.
func scalarText(v any, numbers bool) string {
	switch v := v.(type) {
	case string:
		return v
	case float64, float32, int, int64, json.Number:
		if numbers {
			return fmt.Sprint(v)
		}
	}
	return ""
}
