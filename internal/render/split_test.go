package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/configgen"
	"github.com/stowage/stowage/internal/testing/kubecheck"
	"github.com/stowage/stowage/internal/testing/offlineimage"
	"github.com/stowage/stowage/schema"
)

// catalogueConfig is a config with one puller "big" in namespace "lab"
// pulling the catalogue images app-000, app-001, … of registry.lab.internal
// (n of them, plus the names in more), each keyed by its repository's
// name, plus extra CUE appended as is.
func catalogueConfig(t *testing.T, n int, more []string, extra string) *v1alpha1.Config {
	t.Helper()
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("app-%03d", i))
	}
	names = append(names, more...)
	var b strings.Builder
	var keys []string
	for _, name := range names {
		fmt.Fprintf(&b, "images: %q: reference: \"registry.lab.internal:5000/team/%s:v1\"\n", name, name)
		keys = append(keys, fmt.Sprintf("%q", name))
	}
	fmt.Fprintf(&b, "profiles: p: pullers: [{name: \"big\", namespace: \"lab\", images: [%s]}]\n", strings.Join(keys, ", "))
	b.WriteString(extra)
	return loadConfig(t, "cfg/config.cue", b.String())
}

// partsOf returns, per DaemonSet name, the images its pulled init
// containers pin, in pod order.
func partsOf(objs []Object) map[string][]string {
	out := map[string][]string{}
	for _, ds := range daemonSets(objs) {
		for _, c := range pulled(ds) {
			out[ds.Name] = append(out[ds.Name], c.Image)
		}
	}
	return out
}

// TestSplitAtLimit: a node group of up to MaxImagesPerDaemonSet images is
// one DaemonSet under its usual name; one image more splits it into parts
// named <name>-1, <name>-2, the first full, every image in exactly one part,
// in lock key order, with the records ConfigMap still listing them all.
func TestSplitAtLimit(t *testing.T) {
	max := MaxImagesPerDaemonSet
	for _, tc := range []struct {
		images int
		want   map[string]int // DaemonSet name -> images
	}{
		{1, map[string]int{"big": 1}},
		{max, map[string]int{"big": max}},
		{max + 1, map[string]int{"big-1": max, "big-2": 1}},
		{60, map[string]int{"big-1": max, "big-2": 60 - max}},
		{2*max + 1, map[string]int{"big-1": max, "big-2": max, "big-3": 1}},
	} {
		t.Run(fmt.Sprint(tc.images), func(t *testing.T) {
			cfg := catalogueConfig(t, tc.images, nil, "")
			objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
			parts := partsOf(objs)
			got := map[string]int{}
			var all []string
			for _, name := range slices.Sorted(maps.Keys(parts)) {
				got[name] = len(parts[name])
				all = append(all, parts[name]...)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("DaemonSets (name: images) = %v, want %v", got, tc.want)
			}
			if !slices.IsSorted(all) {
				t.Errorf("parts do not hold the images in order:\n%s", strings.Join(all, "\n"))
			}
			if len(slices.Compact(slices.Clone(all))) != tc.images {
				t.Errorf("%d images across the parts, %d distinct; want %d each", len(all), len(slices.Compact(slices.Clone(all))), tc.images)
			}
			records := strings.Fields(configMap(t, objs, "big-records").Data["images.list"])
			if !slices.Equal(records, all) {
				t.Errorf("records list %d images, the DaemonSets pull %d", len(records), len(all))
			}
			hashes := map[string]string{}
			for _, ds := range daemonSets(objs) {
				h := ds.Spec.Template.Annotations[AnnotationImagesHash]
				if other, dup := hashes[h]; dup {
					t.Errorf("%s and %s share the images-hash %s", other, ds.Name, h)
				}
				hashes[h] = ds.Name
				if ds.Labels[LabelInstance] != ds.Name || ds.Spec.Selector.MatchLabels[LabelInstance] != ds.Name {
					t.Errorf("%s: instance label %q, selector %q; want the DaemonSet's own name",
						ds.Name, ds.Labels[LabelInstance], ds.Spec.Selector.MatchLabels[LabelInstance])
				}
			}
		})
	}
}

// TestSplitPartSize: a full part of long references stays far below the
// sizes that bind a DaemonSet — 256 KiB of annotations for client-side
// apply's last-applied copy, 1.5 MiB for etcd — so the limit is about pod
// start-up, not size.
func TestSplitPartSize(t *testing.T) {
	var b strings.Builder
	var keys []string
	for i := range MaxImagesPerDaemonSet {
		repo := strings.Repeat(fmt.Sprintf("segment-%03d/", i), 12) + "application"
		fmt.Fprintf(&b, "images: \"i%d\": reference: \"registry.with.a.long.name.lab.internal:5000/%s:v1.2.3-build.4567\"\n", i, repo)
		keys = append(keys, fmt.Sprintf(`"i%d"`, i))
	}
	fmt.Fprintf(&b, "profiles: p: pullers: [{name: %q, namespace: \"lab\", images: [%s]}]\n",
		strings.Repeat("x", schema.MaxPullerName), strings.Join(keys, ", "))
	cfg := loadConfig(t, "cfg/config.cue", b.String())
	objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	dss := daemonSets(objs)
	if len(dss) != 1 {
		t.Fatalf("%d DaemonSets, want 1", len(dss))
	}
	j, err := json.Marshal(dss[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a DaemonSet of %d images of %d-character references: %d bytes of JSON",
		MaxImagesPerDaemonSet, len(pulled(dss[0])[0].Image), len(j))
	if len(j) > 128<<10 {
		t.Errorf("a full part is %d bytes of JSON, more than half the 256 KiB client-side apply allows", len(j))
	}
}

// TestSplitBumpTouchesOnePart: a new digest for one image of a split group
// changes that part's DaemonSet and the records, and leaves the other parts
// byte for byte as they were.
func TestSplitBumpTouchesOnePart(t *testing.T) {
	cfg := catalogueConfig(t, 60, nil, "")
	l := lockFor(t, cfg, "")
	before := mustRender(t, Input{Config: cfg, Lock: l})

	bumped := &lock.Lock{Entries: slices.Clone(l.Entries)}
	e, ok := bumped.Lookup("registry.lab.internal:5000/team/app-045:v1")
	if !ok {
		t.Fatal("no lock entry for app-045")
	}
	next, err := offlineimage.Entry("registry.lab.internal:5000/team/app-045:v2")
	if err != nil {
		t.Fatal(err)
	}
	e.Digest, e.Kind, e.Platforms, e.Size = next.Digest, next.Kind, next.Platforms, next.Size
	bumped.Put(e)
	after := mustRender(t, Input{Config: cfg, Lock: bumped})

	if got, want := changedObjects(t, before, after), "ConfigMap lab/big-records, DaemonSet lab/big-2"; got != want {
		t.Errorf("changed objects: %s; want %s", got, want)
	}
}

// TestSplitAddImage: an image added to a split group changes the part it
// sorts into and the parts after it, never the parts before it.
func TestSplitAddImage(t *testing.T) {
	cfg := catalogueConfig(t, 60, nil, "")
	before := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	// app-040a sorts into the second part.
	more := catalogueConfig(t, 60, []string{"app-040a"}, "")
	after := mustRender(t, Input{Config: more, Lock: lockFor(t, more, "")})
	if got, want := changedObjects(t, before, after), "ConfigMap lab/big-records, DaemonSet lab/big-2"; got != want {
		t.Errorf("changed objects: %s; want %s", got, want)
	}
}

// changedObjects lists "Kind namespace/name" of the objects whose encoding
// differs between two renders of the same object set, sorted and joined.
func changedObjects(t *testing.T, before, after []Object) string {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%d objects before, %d after", len(before), len(after))
	}
	var changed []string
	for i := range before {
		if before[i].FileName() != after[i].FileName() {
			t.Fatalf("object %d: %s before, %s after", i, before[i].FileName(), after[i].FileName())
		}
		if string(encode(t, before[i:i+1])) != string(encode(t, after[i:i+1])) {
			changed = append(changed, before[i].Kind+" "+before[i].Namespace+"/"+before[i].Name)
		}
	}
	return strings.Join(changed, ", ")
}

// TestSplitNames: part names stay DNS-1123 labels of at most 63 characters
// for the longest puller name and node-group suffix, and a node group whose
// suffix equals a part number of another group gets a distinct name.
func TestSplitNames(t *testing.T) {
	long := strings.Repeat("p", schema.MaxPullerName)
	for _, tc := range []struct{ base, want string }{
		{"big", "big-1"},
		{long, long + "-1"},
	} {
		if got := partName(tc.base, 1); got != tc.want {
			t.Errorf("partName(%q, 1) = %q, want %q", tc.base, got, tc.want)
		}
	}
	a, b := long+"-gpu-a1b2c3d4e", long+"-gpu-a1b2c3d4f"
	for _, n := range []int{1, 9, 10, 100} {
		na, nb := partName(a, n), partName(b, n)
		for _, name := range []string{na, nb} {
			if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
				t.Errorf("partName(…, %d) = %q: %s", n, name, strings.Join(msgs, "; "))
			}
		}
		if na == nb {
			t.Errorf("partName gives %q for two bases that differ in their last character", na)
		}
		if !strings.HasSuffix(na, fmt.Sprintf("-%d", n)) {
			t.Errorf("partName(…, %d) = %q does not end in the part number", n, na)
		}
	}

	// The environment "2" has its own node group, suffix "2": "big-2" is
	// already the second part of the puller's own group.
	cfg := catalogueConfig(t, MaxImagesPerDaemonSet+1, nil, `
environments: "2": {image: "registry.lab.internal:5000/team/gpu:v1", nodeSelector: gpu: "true"}
profiles: p: pullers: [{environments: ["2"]}]
`)
	objs := mustRender(t, Input{Config: cfg, Lock: lockFor(t, cfg, "")})
	seen := map[string]bool{}
	for _, ds := range daemonSets(objs) {
		if seen[ds.Name] {
			t.Errorf("two DaemonSets named %s", ds.Name)
		}
		seen[ds.Name] = true
		if msgs := validation.IsDNS1123Label(ds.Name); len(msgs) > 0 {
			t.Errorf("DaemonSet name %q: %s", ds.Name, strings.Join(msgs, "; "))
		}
	}
	if len(seen) != 3 {
		t.Errorf("DaemonSets %v, want three", slices.Sorted(maps.Keys(seen)))
	}
}

// TestLargeConfig renders the large-input case: 2,000 images across 50
// pullers in 20 namespaces (internal/testing/configgen). Every object passes the
// strict Kubernetes checks, each image is pulled by exactly one part of its
// puller, and no DaemonSet exceeds the limit.
func TestLargeConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "large")
	if err := configgen.Generate(2000, 40, dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.Load(dir, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Read(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	objs := mustRender(t, Input{Config: cfg, Lock: l})
	stream := encode(t, objs)
	t.Logf("rendered %d objects, %d bytes, in %v", len(objs), len(stream), time.Since(start))
	if err := kubecheck.CheckAll(stream); err != nil {
		t.Fatalf("the stream fails the Kubernetes checks: %v", err)
	}

	namespaces := map[string]bool{}
	pullers := map[string]bool{}
	images := map[string]int{}
	for _, ds := range daemonSets(objs) {
		namespaces[ds.Namespace] = true
		pullers[ds.Namespace+"/"+ds.Labels[LabelInstance][:len("puller-000")]] = true
		if n := len(pulled(ds)); n > MaxImagesPerDaemonSet {
			t.Errorf("%s/%s pulls %d images, more than %d", ds.Namespace, ds.Name, n, MaxImagesPerDaemonSet)
		}
		for _, c := range pulled(ds) {
			images[c.Image]++
		}
	}
	if len(namespaces) != 20 || len(pullers) != 50 {
		t.Errorf("%d namespaces and %d pullers, want 20 and 50", len(namespaces), len(pullers))
	}
	if len(images) != 2000 {
		t.Errorf("%d distinct images pulled, want 2000", len(images))
	}
	for im, n := range images {
		if n != 1 {
			t.Errorf("%s is pulled by %d DaemonSets, want 1", im, n)
		}
	}
	if dss := daemonSets(objs); len(dss) != 100 {
		t.Errorf("%d DaemonSets, want 100 (two parts of 32 and 8 for each puller of 40 images)", len(dss))
	}
}
