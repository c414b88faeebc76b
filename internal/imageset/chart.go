package imageset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/release"
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
	// RenderTimeout bounds rendering a chart.
	RenderTimeout = time.Minute
)

// workloadKinds are the kinds whose pod templates FromChart reads.
var workloadKinds = []string{"CronJob", "DaemonSet", "Deployment", "Job", "Pod", "ReplicaSet", "ReplicationController", "StatefulSet"}

// ChartOptions are the values FromChart renders a chart with, as helm
// template takes them.
type ChartOptions struct {
	// ValueFiles are values files, later ones override earlier ones
	// (helm's --values); each a local file of at most MaxValuesBytes.
	ValueFiles []string
	// Set are key=value overrides (helm's --set), applied after the files.
	Set []string
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
// Errors name the chart, the object and the field.
func FromChart(path string, o ChartOptions) (Set, string, error) {
	if err := checkChartSize(path); err != nil {
		return nil, "", err
	}
	chrt, err := loader.Load(path)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", path, err)
	}
	if deps := chrt.Metadata.Dependencies; len(deps) > 0 {
		if err := action.CheckDependencies(chrt, deps); err != nil {
			return nil, "", fmt.Errorf("chart %s: %w (stowage never fetches a chart: run helm dependency build first)", path, err)
		}
	}
	for _, f := range o.ValueFiles {
		if err := checkFileSize(f, MaxValuesBytes, "a values file"); err != nil {
			return nil, "", err
		}
	}
	vals, err := (&values.Options{ValueFiles: o.ValueFiles, Values: o.Set}).MergeValues(getter.Providers{})
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: values: %w", path, err)
	}
	coalesced, err := chartutil.CoalesceValues(chrt, deepCopy(vals))
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: values: %w", path, err)
	}
	manifest, err := render(chrt.Name(), func(install *action.Install) (string, error) {
		rel, err := install.RunWithContext(context.Background(), chrt, vals)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		b.WriteString(rel.Manifest)
		for _, h := range rel.Hooks {
			if slices.ContainsFunc(h.Events, func(e release.HookEvent) bool { return strings.HasPrefix(string(e), "test") }) {
				continue
			}
			b.WriteString("\n---\n")
			b.WriteString(h.Manifest)
		}
		return b.String(), nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: rendering: %w", path, err)
	}
	if len(manifest) > MaxRenderedBytes {
		return nil, "", fmt.Errorf("chart %s: renders to %d bytes, more than %d, the limit", path, len(manifest), MaxRenderedBytes)
	}
	items, err := (&kio.ByteReader{Reader: strings.NewReader(manifest), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: the rendered manifests: %w", path, err)
	}
	var refs []imageref.Ref
	var errs []error
	var workloads []*yaml.RNode
	for _, it := range items {
		if slices.Contains(workloadKinds, it.GetKind()) {
			workloads = append(workloads, it)
		}
	}
	workload.EachImage(workloads, func(item, img *yaml.RNode, field string) {
		if workload.ImageVolume(field) {
			// An image volume's artifact is not run; listing it as an
			// image would have render run it as a container.
			return
		}
		s := yaml.GetValue(img)
		r, err := imageref.Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("chart %s: %s %s %s: %w", path, item.GetKind(), objectName(item), field, err))
			return
		}
		refs = append(refs, r)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	strs, maps := usedInManifests(items)
	for _, vi := range ValueImages(coalesced) {
		if vi.Fields["tag"] == "" && vi.Fields["version"] == "" && vi.Fields["digest"] == "" {
			continue // "nginx" alone would match any scalar; a workload names it anyway
		}
		if !strs[vi.Reference] && !slices.ContainsFunc(maps, func(m map[string]string) bool { return subset(vi.Fields, m) }) {
			continue
		}
		r, err := imageref.Parse(vi.Reference)
		if err != nil {
			return nil, "", fmt.Errorf("chart %s: values %s: %w", path, vi.Path, err)
		}
		refs = append(refs, r)
	}
	if len(refs) == 0 {
		return nil, "", fmt.Errorf("chart %s: its rendered workloads run no image", path)
	}
	set, err := Build(refs)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", path, err)
	}
	return set, "chart " + chrt.Name() + " " + chrt.Metadata.Version, nil
}

// render runs run with a client-only, dry-run Install of release name,
// in the "default" namespace, and gives up after RenderTimeout (Helm's
// template engine takes no context; the rendering goroutine is then left
// to finish on its own).
func render(name string, run func(*action.Install) (string, error)) (string, error) {
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = name
	install.Namespace = "default"
	install.DisableOpenAPIValidation = true
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := run(install)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(RenderTimeout):
		return "", fmt.Errorf("not done after %s", RenderTimeout)
	}
}

func objectName(n *yaml.RNode) string {
	if ns := n.GetNamespace(); ns != "" {
		return ns + "/" + n.GetName()
	}
	return n.GetName()
}

// checkChartSize refuses a chart larger than MaxChartBytes, or a chart
// directory of more than MaxChartFiles files.
func checkChartSize(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	if !fi.IsDir() {
		return checkFileSize(path, MaxChartBytes, "a chart archive")
	}
	var total int64
	files := 0
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		files++
		if total > MaxChartBytes {
			return fmt.Errorf("larger than %d bytes, the limit of a chart", MaxChartBytes)
		}
		if files > MaxChartFiles {
			return fmt.Errorf("more than %d files, the limit of a chart", MaxChartFiles)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	return nil
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

// usedInManifests collects every string scalar of the rendered objects,
// and every mapping's string fields named as ValueImages names them.
func usedInManifests(items []*yaml.RNode) (map[string]bool, []map[string]string) {
	strs := map[string]bool{}
	var maps []map[string]string
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 100 {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode:
			strs[n.Value] = true
		case yaml.MappingNode:
			m := map[string]string{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.ScalarNode && slices.Contains(imageFields, k.Value) {
					m[k.Value] = v.Value
				}
				walk(v, depth+1)
			}
			if len(m) > 0 {
				maps = append(maps, m)
			}
		case yaml.SequenceNode, yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, depth+1)
			}
		}
	}
	for _, it := range items {
		walk(it.YNode(), 0)
	}
	return strs, maps
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
// alone or "repository" alone is the path. A map with "enabled: false"
// describes a component switched off and is left out. A map whose "image" is itself a
// map is not one (its child is found instead).
func ValueImages(vals map[string]any) []ValueImage {
	var out []ValueImage
	var walk func(path string, m map[string]any, depth int)
	walk = func(path string, m map[string]any, depth int) {
		if depth > 100 {
			return
		}
		fields := map[string]string{}
		for _, k := range imageFields {
			if s, ok := m[k].(string); ok && s != "" {
				fields[k] = s
			}
		}
		if (fields["repository"] != "" || fields["image"] != "") && m["enabled"] != false {
			var parts []string
			for _, k := range []string{"registry", "repository", "image"} {
				if fields[k] != "" {
					parts = append(parts, strings.Trim(fields[k], "/"))
				}
			}
			ref := strings.Join(parts, "/")
			if t := fields["tag"]; t != "" {
				ref += ":" + t
			} else if v := fields["version"]; v != "" {
				ref += ":" + v
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

// deepCopy copies the maps of a values tree, so that coalescing leaves
// the values given to the install alone.
func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if c, ok := v.(map[string]any); ok {
			out[k] = deepCopy(c)
		} else {
			out[k] = v
		}
	}
	return out
}
