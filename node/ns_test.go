package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Addresses inside the suite's network namespace. They exist nowhere else:
// the host's routes, addresses and ports are never touched.
const (
	nodeIP      = "10.213.0.1" // the veth end holding the node's address and default route
	nodeCIDR    = "10.213.0.1/24"
	gatewayIP   = "10.213.0.2" // the other end of the veth pair
	podSubnet   = "10.214.0.0/24"
	serviceCIDR = "10.215.0.0/24"
	nodeName    = "stowage-node"
)

// sysctls are the /proc/sys values the kubelet checks and would otherwise
// write host-wide (its kernel tunables). Inside the mount namespace a file
// holding each value is bind-mounted over the entry, so the host's values
// never change.
var sysctls = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// proc is a process the suite started, stopped by PID at teardown.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string // file holding its stdout and stderr
}

// namespace is the private network and mount namespace the suite runs in,
// held open by one process (unshare ... sleep), with every process the suite
// started inside it.
type namespace struct {
	holder *exec.Cmd
	pid    int
	state  string // private state directory on the host's disk
	cgroup string // name of the suite's cgroups: "<cgroup>" for the pods (kubelet cgroupRoot), "<cgroup>-daemons" for the daemons
	procs  []*proc
	host   hostSnapshot // hostPaths before the suite started anything
}

// newNamespace creates the namespace and everything inside it that the
// daemons need (see setup), registering its removal with t.Cleanup; a
// failed setup removes what was made.
func newNamespace(t *testing.T) *namespace {
	t.Helper()
	sweepStale(t)
	state, err := os.MkdirTemp("", "stowage-node-")
	if err != nil {
		t.Fatal(err)
	}
	n := &namespace{state: state, cgroup: fmt.Sprintf("stowage-node-%d", os.Getpid()), host: snapshotHost()}
	t.Cleanup(func() { n.teardown(t) })

	n.holder = exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--", "sleep", "infinity")
	n.holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.holder.Start(); err != nil {
		t.Fatalf("starting the namespace holder (unshare): %v", err)
	}
	n.pid = n.holder.Process.Pid
	if err := n.waitHolder(); err != nil {
		t.Fatal(err)
	}
	if err := n.setup(); err != nil {
		t.Fatalf("setting up the namespace: %v", err)
	}
	return n
}

// waitHolder waits (at most 10 s) until the holder runs sleep in namespaces
// other than this process's.
func (n *namespace) waitHolder() error {
	self, _ := os.Readlink("/proc/self/ns/net")
	selfMnt, _ := os.Readlink("/proc/self/ns/mnt")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		net, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", n.pid))
		mnt, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", n.pid))
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n.pid))
		if net != "" && net != self && mnt != "" && mnt != selfMnt && strings.TrimSpace(string(comm)) == "sleep" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the namespace holder (pid %d) did not enter its namespaces within 10s", n.pid)
}

// setup prepares the namespace: lo and a veth pair with the node's address
// and a default route; tmpfs over /run, /var/lib and /var/log (so the paths
// containerd, libcni and the kubelet hard-code stay private); the sysctl
// files; and the suite's cgroups in every cgroup v1 hierarchy.
func (n *namespace) setup() error {
	var script strings.Builder
	fmt.Fprintf(&script, `set -eu
ip link set lo up
ip link add stowage0 type veth peer name stowage1
ip addr add %s dev stowage0
ip link set stowage0 up
ip link set stowage1 up
ip route add default via %s dev stowage0
for d in /run /var/lib /var/log; do mount -t tmpfs -o mode=0755,size=256m stowage-node "$d"; done
mkdir -p /run/containerd /run/netns /var/lib/cni /var/lib/kubelet /var/log/containers
`, nodeCIDR, gatewayIP)
	keys := make([]string, 0, len(sysctls))
	for k := range sysctls {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sysDir := filepath.Join(n.state, "sysctl")
	if err := os.MkdirAll(sysDir, 0o755); err != nil {
		return err
	}
	for _, k := range keys {
		f := filepath.Join(sysDir, strings.ReplaceAll(k, "/", "."))
		if err := os.WriteFile(f, []byte(sysctls[k]+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&script, "mount --bind %s /proc/sys/%s\n", f, k)
	}
	if out, err := n.command("sh", "-c", script.String()).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return n.makeCgroups()
}

// cgroupHierarchies returns the mounted cgroup v1 hierarchies under
// /sys/fs/cgroup (cpu, memory, pids, systemd, ...), or nil on cgroup v2.
func cgroupHierarchies() []string {
	var hs []string
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "unified" {
			continue
		}
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			hs = append(hs, p)
		}
	}
	return hs
}

// trackHierarchy is where the suite finds every process it started, however
// it was started (containerd's shims detach from their process group):
// the pids hierarchy on cgroup v1, the unified one on v2.
func trackHierarchy() string {
	if _, err := os.Stat("/sys/fs/cgroup/pids/cgroup.procs"); err == nil {
		return "/sys/fs/cgroup/pids"
	}
	return "/sys/fs/cgroup"
}

// makeCgroups creates the kubelet's cgroupRoot in every hierarchy (cpuset
// needs cpus and mems copied from its parent) and the daemons' cgroup in
// the tracking hierarchy.
func (n *namespace) makeCgroups() error {
	hs := cgroupHierarchies()
	if len(hs) == 0 {
		hs = []string{"/sys/fs/cgroup"}
	}
	for _, h := range hs {
		p := filepath.Join(h, n.cgroup)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(p, f), b, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(p, f), err)
				}
			}
		}
	}
	return os.MkdirAll(filepath.Join(trackHierarchy(), n.cgroup+"-daemons"), 0o755)
}

// command returns a command that runs name inside the namespace (nsenter
// into its network and mount namespaces), in its own process group.
func (n *namespace) command(name string, args ...string) *exec.Cmd {
	full := append([]string{"-t", strconv.Itoa(n.pid), "-n", "-m", "--", name}, args...)
	cmd := exec.Command("nsenter", full...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = n.state
	return cmd
}

// run runs a short client command inside the namespace (at most 2 minutes)
// and returns its stdout; a failure or a non-zero exit fails the test,
// showing stderr.
func (n *namespace) run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	out, errOut, err := n.output(env, 2*time.Minute, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, errOut)
	}
	return out
}

// output runs a command inside the namespace for at most timeout and
// returns its stdout and stderr.
func (n *namespace) output(env []string, timeout time.Duration, name string, args ...string) (string, string, error) {
	cmd := n.command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return stdout.String(), stderr.String(), err
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return stdout.String(), stderr.String(), fmt.Errorf("still running after %v: killed", timeout)
	}
}

// start runs a daemon inside the namespace, its output in a log file of the
// state directory. The daemon joins the suite's daemons cgroup before it
// starts (a shell writes its own PID there, then execs nsenter), so that
// everything it spawns, detached or not, is found at teardown.
func (n *namespace) start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(n.state, "log", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	procs := filepath.Join(trackHierarchy(), n.cgroup+"-daemons", "cgroup.procs")
	sh := append([]string{"-c", `echo $$ > "$0" && exec nsenter -t "$1" -n -m -- "${@:2}"`, procs, strconv.Itoa(n.pid)}, args...)
	cmd := exec.Command("bash", sh...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = n.state
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); close(p.done) }()
	n.procs = append(n.procs, p)
	return p
}

// stop ends p: SIGTERM to its process group, SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// exited reports whether p has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the last lines of p's log, for a failure message.
func (p *proc) tail(lines int) string {
	b, _ := os.ReadFile(p.log)
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// dial opens a connection from inside the namespace: the socket is created
// on an OS thread that joined the namespace's network namespace for the
// call, and a socket stays in the namespace it was made in. The thread goes
// back to the host's network namespace before it is handed back to the Go
// scheduler; if that fails it stays locked and ends with its goroutine (and
// a thread must not end lightly: Pdeathsig of the processes it started
// fires then). Used by client-go and ggcr in the test process, so they
// reach 127.0.0.1 of the namespace, not the host's.
func (n *namespace) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		host, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer unix.Close(host)
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", n.pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("setns into the suite's network namespace: %w", err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if unix.Setns(host, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// listen opens a TCP listener on addr inside the namespace's network
// namespace (as dial makes its sockets there), for a server the test
// process runs in the namespace (holdProxy). The caller closes it.
func (n *namespace) listen(addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		host, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer unix.Close(host)
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", n.pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("setns into the suite's network namespace: %w", err)}
			return
		}
		l, err := net.Listen("tcp", addr)
		if unix.Setns(host, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

// teardown stops every process the suite started, by PID: the daemons in
// reverse start order (SIGTERM to each process group, SIGKILL after a
// grace), then whatever is left in the suite's cgroups (containerd's shims,
// containers), then the holder, so the namespaces and every mount in them
// go away. Then the cgroups and the state directory are removed, and the
// host paths the daemons default to (hostPaths) must be as they were before
// the suite: any change fails the test, and a path the suite created is
// removed.
func (n *namespace) teardown(t *testing.T) {
	for i := len(n.procs) - 1; i >= 0; i-- {
		n.procs[i].stop(10 * time.Second)
	}
	if err := n.killCgroups(); err != nil {
		t.Errorf("teardown: %v", err)
	}
	if n.holder != nil && n.holder.Process != nil {
		syscall.Kill(-n.pid, syscall.SIGKILL)
		n.holder.Wait()
	}
	if err := removeCgroups(n.cgroup); err != nil {
		t.Errorf("teardown: %v", err)
	}
	if err := os.RemoveAll(n.state); err != nil {
		t.Errorf("teardown: removing %s: %v", n.state, err)
	}
	after := snapshotHost()
	changes := n.host.changes(after)
	for _, c := range changes {
		t.Errorf("teardown: the suite changed the host: %s", c)
	}
	if len(changes) == 0 {
		t.Logf("teardown: the %d host paths the daemons default to are as before the suite (%s)", len(hostPaths), strings.Join(hostPaths, " "))
	}
	for _, p := range n.host.created(after) {
		os.RemoveAll(p)
	}
}

// killCgroups kills every process in the suite's cgroups by PID until none
// is left (at most 30 s).
func (n *namespace) killCgroups() error {
	return killCgroupTree(filepath.Join(trackHierarchy(), n.cgroup), filepath.Join(trackHierarchy(), n.cgroup+"-daemons"))
}

// killCgroupTree SIGKILLs every PID listed in the cgroup.procs files under
// the roots until they are empty, for at most 30 s.
func killCgroupTree(roots ...string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pids []int
		for _, root := range roots {
			filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				b, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != os.Getpid() {
						pids = append(pids, pid)
					}
				}
				return nil
			})
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v are still in %v after 30s", pids, roots)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroups removes the suite's cgroups named name and name-daemons,
// deepest first, in every hierarchy.
func removeCgroups(name string) error {
	hs := cgroupHierarchies()
	if len(hs) == 0 {
		hs = []string{"/sys/fs/cgroup"}
	}
	var errs []error
	for _, h := range hs {
		for _, root := range []string{filepath.Join(h, name), filepath.Join(h, name+"-daemons")} {
			var dirs []string
			filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
					errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// sweepStale removes what an earlier run left when its test process was
// killed before its cleanup ran (go test -timeout, SIGKILL): every
// stowage-node-PID cgroup whose PID no longer runs has its processes killed
// by PID and is removed. The daemons themselves die with that process
// (Pdeathsig); containerd's shims and the containers do not.
func sweepStale(t *testing.T) {
	entries, _ := os.ReadDir(trackHierarchy())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "stowage-node-")
		if !ok || !e.IsDir() {
			continue
		}
		rest = strings.TrimSuffix(rest, "-daemons")
		pid, err := strconv.Atoi(rest)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // that run is still going
		}
		name := "stowage-node-" + rest
		t.Logf("removing the cgroups %s left by an earlier run", name)
		if err := killCgroupTree(filepath.Join(trackHierarchy(), name), filepath.Join(trackHierarchy(), name+"-daemons")); err != nil {
			t.Log(err)
		}
		if err := removeCgroups(name); err != nil {
			t.Log(err)
		}
	}
}
