package node

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostPaths are the host paths the suite's daemons write by default: each
// one is pointed into the suite's state directory by a flag or config field
// (cluster_test.go), or lies under a tmpfs the suite mounts inside its own
// mount namespace (/run, /var/lib, /var/log). A private mount namespace
// alone does not keep a directory off the host: it shares the host's file
// systems, so a daemon creating /usr/libexec/kubernetes/... there creates it
// on the host. The suite snapshots every path here before it starts
// anything and compares after its teardown (existence, and the listing of
// what is under it), failing the test on any change.
//
// The defaults, daemon by daemon (read in their flags and config types):
// kube-controller-manager --flex-volume-plugin-dir
// /usr/libexec/kubernetes/kubelet-plugins/volume/exec; kubelet --root-dir
// /var/lib/kubelet (plugins, plugins_registry, pod-resources, pods,
// seccomp, checkpoints beneath it), volumePluginDir the same
// /usr/libexec/kubernetes/..., podLogsDir /var/log/pods, the fixed
// /var/log/containers and /var/lib/kubelet/device-plugins, static pods and
// credential providers under /etc/kubernetes; kube-apiserver --cert-dir
// /var/run/kubernetes; containerd root /var/lib/containerd, state
// /run/containerd, the opt plugin /opt/containerd, registry hosts
// /etc/containerd/certs.d, NRI /etc/nri and /opt/nri; the CRI's CNI
// conf_dir /etc/cni/net.d and bin_dir /opt/cni/bin, libcni's cache
// /var/lib/cni, netns files /run/netns; runc /run/runc; etcd's data dir
// (./default.etcd, or /var/lib/etcd for Debian's service); docker-registry
// /var/lib/docker-registry.
var hostPaths = []string{
	"/usr/libexec/kubernetes",
	"/var/lib/kubelet",
	"/var/lib/containerd",
	"/var/lib/cni",
	"/var/lib/etcd",
	"/var/lib/docker-registry",
	"/var/log/containers",
	"/var/log/pods",
	"/var/run/kubernetes",
	"/run/containerd",
	"/run/netns",
	"/run/runc",
	"/etc/kubernetes",
	"/etc/containerd",
	"/etc/cni",
	"/etc/nri",
	"/opt/cni",
	"/opt/containerd",
	"/opt/nri",
}

// maxListing bounds the entries listed under one host path.
const maxListing = 20000

// hostSnapshot is what each host path held: "absent", or one line per entry
// under it (its path relative to it and its type).
type hostSnapshot map[string][]string

// snapshotHost reads every path of hostPaths (see snapshot).
func snapshotHost() hostSnapshot { return snapshot(hostPaths) }

// snapshot reads every path of paths. It follows a symbolic link only at
// the path itself (/var/run is one), never below it, and lists at most
// maxListing entries under each path.
func snapshot(paths []string) hostSnapshot {
	s := hostSnapshot{}
	for _, p := range paths {
		s[p] = listHostPath(p)
	}
	return s
}

// paths returns the paths of s, sorted.
func (s hostSnapshot) paths() []string {
	out := make([]string, 0, len(s))
	for p := range s {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func listHostPath(root string) []string {
	fi, err := os.Stat(root)
	if err != nil {
		if os.IsNotExist(err) {
			return []string{"absent"}
		}
		return []string{"unreadable: " + err.Error()}
	}
	if !fi.IsDir() {
		return []string{"not a directory: " + fi.Mode().Type().String()}
	}
	var out []string
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return []string{"unreadable: " + err.Error()}
	}
	filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		if len(out) >= maxListing {
			return fs.SkipAll
		}
		rel, _ := filepath.Rel(real, path)
		if err != nil {
			out = append(out, rel+" unreadable")
			return nil
		}
		out = append(out, rel+" "+d.Type().String())
		return nil
	})
	if len(out) >= maxListing {
		out = append(out, fmt.Sprintf("… more than %d entries", maxListing))
	}
	slices.Sort(out)
	return out
}

// changes returns what differs from before in after, one line per path:
// created, removed, or the entries added and removed under it.
func (before hostSnapshot) changes(after hostSnapshot) []string {
	var out []string
	for _, p := range before.paths() {
		b, a := before[p], after[p]
		if slices.Equal(a, b) {
			continue
		}
		switch {
		case slices.Equal(b, []string{"absent"}):
			out = append(out, fmt.Sprintf("%s was created (%s)", p, summarize(a)))
		case slices.Equal(a, []string{"absent"}):
			out = append(out, p+" was removed")
		default:
			added, removed := diffLines(b, a)
			out = append(out, fmt.Sprintf("%s changed: added %s; removed %s", p, summarize(added), summarize(removed)))
		}
	}
	return out
}

// created returns the paths that before says were absent and that exist in
// after.
func (before hostSnapshot) created(after hostSnapshot) []string {
	var out []string
	for _, p := range before.paths() {
		if slices.Equal(before[p], []string{"absent"}) && !slices.Equal(after[p], []string{"absent"}) {
			out = append(out, p)
		}
	}
	return out
}

// diffLines returns the lines of a not in b and of b not in a; both are
// sorted.
func diffLines(b, a []string) (added, removed []string) {
	inB := map[string]bool{}
	for _, l := range b {
		inB[l] = true
	}
	inA := map[string]bool{}
	for _, l := range a {
		inA[l] = true
		if !inB[l] {
			added = append(added, l)
		}
	}
	for _, l := range b {
		if !inA[l] {
			removed = append(removed, l)
		}
	}
	return added, removed
}

// summarize lists at most five entries, for messages.
func summarize(lines []string) string {
	if len(lines) == 0 {
		return "nothing"
	}
	if len(lines) > 5 {
		return strings.Join(lines[:5], ", ") + fmt.Sprintf(" and %d more", len(lines)-5)
	}
	return strings.Join(lines, ", ")
}

// TestHostSnapshot checks the comparison teardown relies on, on a
// temporary directory: an unchanged tree has no changes, a path created,
// an entry added below an existing path and a path removed are each
// reported, and only the created path is offered for removal.
func TestHostSnapshot(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	gone := filepath.Join(dir, "gone")
	fresh := filepath.Join(dir, "fresh")
	for _, d := range []string{filepath.Join(existing, "plugins"), gone} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{existing, gone, fresh}
	before := snapshot(paths)
	if c := before.changes(snapshot(paths)); len(c) != 0 {
		t.Fatalf("an unchanged tree has changes: %v", c)
	}
	if err := os.MkdirAll(filepath.Join(fresh, "kubelet-plugins", "volume", "exec"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(existing, "plugins", "sock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	after := snapshot(paths)
	got := before.changes(after)
	want := []string{
		existing + " changed: added plugins/sock ----------; removed nothing",
		fresh + " was created (. d---------, kubelet-plugins d---------, kubelet-plugins/volume d---------, kubelet-plugins/volume/exec d---------)",
		gone + " was removed",
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := before.created(after); !slices.Equal(c, []string{fresh}) {
		t.Errorf("created: %v, want [%s]", c, fresh)
	}
}
