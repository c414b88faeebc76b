package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// panicChildEnv makes TestPanicChild run: it is the child half of
// TestTeardownAfterPanic, and skips otherwise.
const panicChildEnv = "STOWAGE_NODE_PANIC_CHILD"

// TestTeardownAfterPanic checks the suite's cleanup where it matters most:
// a test that panics with daemons, a containerd shim and a container
// running. It runs TestPanicChild in a child test process, which starts the
// namespace, containerd, a registry and a container (in the suite's cgroup,
// where the kubelet puts pods), writes down every PID and path, and
// panics. Afterwards none of those processes may run, the cgroups and the
// state folder must be gone, and the host paths the daemons default to
// (hostPaths) must be as they were before the child started.
func TestTeardownAfterPanic(t *testing.T) {
	requireParts(t)
	report := filepath.Join(t.TempDir(), "report")
	host := snapshotHost()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPanicChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), panicChildEnv+"="+report)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "deliberate panic with the namespace running") {
		t.Fatalf("the child test did not panic as planned (err %v):\n%s", err, out)
	}
	f, err := os.Open(report)
	if err != nil {
		t.Fatalf("the child wrote no report: %v\n%s", err, out)
	}
	defer f.Close()
	var pids []int
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, val, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "pid":
			pid, err := strconv.Atoi(val)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		case "path":
			paths = append(paths, val)
		}
	}
	if len(pids) < 5 || len(paths) < 2 {
		t.Fatalf("the report names %d processes and %d paths, want the holder, containerd, its shim, the container, the registry and the cgroups:\n%s", len(pids), len(paths), out)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d (%s) still runs after the child's panic", pid, comm(pid))
		}
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s still exists after the child's panic", p)
		}
	}
	for _, c := range host.changes(snapshotHost()) {
		t.Errorf("after the child's panic the host changed: %s", c)
	}
	if !t.Failed() {
		t.Logf("after a panic with %d processes running in the namespace: all stopped, %d paths removed, the %d host paths the daemons default to unchanged", len(pids), len(paths), len(hostPaths))
	}
}

// TestPanicChild is the child half of TestTeardownAfterPanic.
func TestPanicChild(t *testing.T) {
	report := os.Getenv(panicChildEnv)
	if report == "" {
		t.Skip("the child half of TestTeardownAfterPanic; runs only from there")
	}
	requireParts(t)
	ns := newNamespace(t)
	c := &cluster{ns: ns, ctr: "ctr"}
	c.startContainerd(t, pauseRef, []string{plainHost})
	startRegistry(t, ns, plainHost, "")
	bins := buildBinaries(t)
	p := &pusher{ns: ns}
	p.push(t, pauseRef, image(t, v1.Platform{OS: "linux", Architecture: "amd64"}, []string{"/pause"}, file{"pause", 0o555, readFile(t, bins.pause)}))
	ctr := []string{"--address", "/run/containerd/containerd.sock", "-n", "k8s.io"}
	ns.run(t, nil, "ctr", append(ctr, "images", "pull", "--plain-http", pauseRef)...)
	// In the suite's cgroup, as the kubelet's cgroupRoot puts every pod.
	ns.run(t, nil, "ctr", append(ctr, "run", "-d", "--cgroup", "/"+ns.cgroup+"/panic-probe", pauseRef, "panic-probe")...)

	var b strings.Builder
	for _, pr := range ns.procs {
		fmt.Fprintf(&b, "pid %d\n", pr.cmd.Process.Pid)
	}
	fmt.Fprintf(&b, "pid %d\n", ns.pid)
	waitFor(t, 30*time.Second, "the container's process", func() (bool, string) {
		procs, _ := os.ReadFile(filepath.Join(trackHierarchy(), ns.cgroup, "panic-probe", "cgroup.procs"))
		return len(strings.Fields(string(procs))) > 0, "none yet"
	})
	for _, cg := range []string{filepath.Join(ns.cgroup, "panic-probe"), ns.cgroup + "-daemons"} {
		procs, _ := os.ReadFile(filepath.Join(trackHierarchy(), cg, "cgroup.procs"))
		for _, f := range strings.Fields(string(procs)) {
			fmt.Fprintf(&b, "pid %s\n", f)
		}
	}
	for _, h := range cgroupHierarchies() {
		fmt.Fprintf(&b, "path %s\n", filepath.Join(h, ns.cgroup))
	}
	fmt.Fprintf(&b, "path %s\n", filepath.Join(trackHierarchy(), ns.cgroup+"-daemons"))
	fmt.Fprintf(&b, "path %s\n", ns.state)
	if err := os.WriteFile(report, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	panic("deliberate panic with the namespace running")
}

// alive reports whether pid runs (a zombie does not count: it has ended and
// waits only for its parent to read its status).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// comm returns the command name of pid, for messages.
func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
