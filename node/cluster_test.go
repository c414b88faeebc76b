package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// requireEnv turns a missing part from a skip into a failure (.ci/run sets it).
const requireEnv = "STOWAGE_REQUIRE_NODE"

// apiServer is the API server's address inside the namespace.
const apiServer = "https://127.0.0.1:6443"

// cluster is the running single-node cluster and clients for it.
type cluster struct {
	ns         *namespace
	pki        *pki
	kube       string // folder of the Kubernetes binaries
	kubeconfig string // the admin kubeconfig (for kubectl and stowage inside the namespace)
	client     kubernetes.Interface
	containerd *proc
	ctr        string // the ctr matching the running containerd
	// startToReady is the time from creating the namespace to the node's
	// Ready condition.
	startToReady time.Duration
	// kubeletStarted is when the kubelet was started: its image garbage
	// collection runs then and every 5 minutes after (ImageGCPeriod).
	kubeletStarted time.Time
	kubelet        *proc
}

// kubeDir is where hack/kube-apiserver/build.sh --node puts the binaries.
func kubeDir() string {
	if d := os.Getenv("STOWAGE_KUBE_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("STOWAGE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "stowage")
	}
	return filepath.Join(cache, "kube-v1.37.2")
}

// requireParts runs parts.sh: with a part missing the test is skipped with
// its one line, or fails when STOWAGE_REQUIRE_NODE is set.
func requireParts(t *testing.T) {
	t.Helper()
	out, err := exec.Command("bash", "parts.sh").CombinedOutput()
	if err == nil {
		return
	}
	msg := strings.TrimSpace(string(out))
	if msg == "" {
		msg = err.Error()
	}
	if os.Getenv(requireEnv) != "" {
		t.Fatalf("%s is set, but the real-node suite cannot run: %s", requireEnv, msg)
	}
	t.Skipf("real-node suite skipped: %s (set %s=1 to make this a failure)", msg, requireEnv)
}

// startCluster creates the namespace and starts etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd and the kubelet in
// it, and waits until the node is Ready. Everything is stopped and removed
// when t ends, whatever its outcome.
func startCluster(t *testing.T, sandboxImage string, registries []string) *cluster {
	t.Helper()
	start := time.Now()
	c := startClusterIn(t, newNamespace(t), sandboxImage, registries)
	c.startToReady = time.Since(start)
	return c
}

// startClusterIn starts the cluster as startCluster does, in a namespace
// the caller made (and removes when t ends); startToReady counts from this
// call.
func startClusterIn(t *testing.T, ns *namespace, sandboxImage string, registries []string) *cluster {
	t.Helper()
	return startClusterWith(t, ns, sandboxImage, registries, clusterOptions{})
}

// clusterOptions are what a test may change in the cluster startClusterIn
// starts. The zero value is the suite's usual cluster: Debian's containerd
// 1.6 and no feature gates.
type clusterOptions struct {
	// containerd2 is the folder of containerd 2's containerd,
	// containerd-shim-runc-v2 and ctr (hack/containerd/build.sh); empty
	// for Debian's containerd on PATH.
	containerd2 string
	// featureGates are set on kube-apiserver and the kubelet.
	featureGates map[string]bool
	// kubelet, when set, changes the suite's KubeletConfiguration before
	// the kubelet starts (registerWithTaints, image garbage collection,
	// parallel image pulls).
	kubelet func(*kubeletv1beta1.KubeletConfiguration)
	// serviceAPI lets pods reach the API server through the kubernetes
	// Service (KUBERNETES_SERVICE_HOST, the ClusterIP apiServiceIP, port
	// 443), as kube-proxy lets them in a cluster: the API server listens
	// on every address of the namespace (loopback and the node's, nothing
	// outside it) and a DNAT rule in the namespace's own netfilter table
	// sends apiServiceIP:443 to nodeIP:6443. The suite runs no kube-proxy;
	// a pod that talks to the API server (the startup helper) needs this.
	serviceAPI bool
}

// apiServiceIP is the ClusterIP of the kubernetes Service: the first
// address of serviceCIDR.
const apiServiceIP = "10.215.0.1"

// gateFlag is the --feature-gates value of gates, sorted ("" for none).
func gateFlag(gates map[string]bool) string {
	var parts []string
	for k, v := range gates {
		parts = append(parts, fmt.Sprintf("%s=%t", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// startClusterWith is startClusterIn with opts.
func startClusterWith(t *testing.T, ns *namespace, sandboxImage string, registries []string, opts clusterOptions) *cluster {
	t.Helper()
	start := time.Now()
	c := &cluster{ns: ns, kube: kubeDir(), ctr: "ctr"}
	if opts.containerd2 != "" {
		c.ctr = filepath.Join(opts.containerd2, "ctr")
	}
	p, err := newPKI(filepath.Join(ns.state, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	c.pki = p
	loopback := net.ParseIP("127.0.0.1")
	certs := []struct {
		name, cn string
		orgs     []string
		ips      []net.IP
		dns      []string
	}{
		{"apiserver", "kube-apiserver", nil, []net.IP{loopback, net.ParseIP(nodeIP), net.ParseIP(apiServiceIP)},
			[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{"admin", "stowage-node-admin", []string{"system:masters"}, nil, nil},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil},
		{"kubelet", "system:node:" + nodeName, []string{"system:nodes"}, nil, nil},
		{"controller-manager", "system:kube-controller-manager", nil, nil, nil},
		{"scheduler", "system:kube-scheduler", nil, nil, nil},
	}
	for _, ct := range certs {
		if err := p.issue(ct.name, ct.cn, ct.orgs, ct.ips, ct.dns); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfigs := map[string]string{}
	for _, user := range []string{"admin", "kubelet", "controller-manager", "scheduler"} {
		path := filepath.Join(ns.state, user+".kubeconfig")
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["node"] = &clientcmdapi.Cluster{Server: apiServer, CertificateAuthority: p.path("ca.crt")}
		cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: p.path(user + ".crt"), ClientKey: p.path(user + ".key")}
		cfg.Contexts["node"] = &clientcmdapi.Context{Cluster: "node", AuthInfo: user}
		cfg.CurrentContext = "node"
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		kubeconfigs[user] = path
	}
	c.kubeconfig = kubeconfigs["admin"]

	etcd := ns.start(t, "etcd", "etcd", "--name", "node", "--data-dir", filepath.Join(ns.state, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "node=http://127.0.0.1:2380", "--logger", "zap")

	var gates []string
	if f := gateFlag(opts.featureGates); f != "" {
		gates = []string{"--feature-gates", f}
	}
	bind := "127.0.0.1"
	if opts.serviceAPI {
		bind = "0.0.0.0"
		ns.run(t, nil, "iptables", "-t", "nat", "-A", "PREROUTING", "-d", apiServiceIP+"/32", "-p", "tcp", "--dport", "443",
			"-j", "DNAT", "--to-destination", nodeIP+":6443")
	}
	apiserver := ns.start(t, "kube-apiserver", append([]string{filepath.Join(c.kube, "kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:2379",
		"--bind-address", bind, "--secure-port", "6443",
		// A loopback advertise address needs the endpoint reconciler off.
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--tls-cert-file", p.path("apiserver.crt"), "--tls-private-key-file", p.path("apiserver.key"),
		"--client-ca-file", p.path("ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", p.path("sa.pub"), "--service-account-signing-key-file", p.path("sa.key"),
		"--service-cluster-ip-range", serviceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--kubelet-client-certificate", p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key", p.path("apiserver-kubelet-client.key"),
		// kubectl logs through the node's IP, no DNS needed.
		"--kubelet-preferred-address-types", "InternalIP",
		// Default /var/run/kubernetes (unused with the certificate above).
		"--cert-dir", filepath.Join(ns.state, "apiserver-certs")}, gates...)...)

	cfg := &rest.Config{
		Host:            apiServer,
		TLSClientConfig: rest.TLSClientConfig{CAFile: p.path("ca.crt"), CertFile: p.path("admin.crt"), KeyFile: p.path("admin.key")},
		Dial:            ns.dial,
		QPS:             50,
		Burst:           100,
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.client = client
	waitFor(t, 2*time.Minute, "kube-apiserver /readyz", func() (bool, string) {
		if apiserver.exited() || etcd.exited() {
			t.Fatalf("kube-apiserver or etcd exited:\n%s\n%s", apiserver.tail(20), etcd.tail(20))
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil, fmt.Sprintf("%v %s", err, body)
	})

	ns.start(t, "kube-controller-manager", filepath.Join(c.kube, "kube-controller-manager"),
		"--kubeconfig", kubeconfigs["controller-manager"],
		"--authentication-kubeconfig", kubeconfigs["controller-manager"],
		"--authorization-kubeconfig", kubeconfigs["controller-manager"],
		"--authentication-skip-lookup",
		"--controllers", "*", "--leader-elect=false",
		"--service-account-private-key-file", p.path("sa.key"), "--root-ca-file", p.path("ca.crt"),
		"--use-service-account-credentials",
		// Created on start; the default /usr/libexec/kubernetes/... is
		// on the host's disk, outside every tmpfs of the namespace.
		"--flex-volume-plugin-dir", volumePluginDir(ns),
		"--bind-address", "127.0.0.1")
	ns.start(t, "kube-scheduler", filepath.Join(c.kube, "kube-scheduler"),
		"--kubeconfig", kubeconfigs["scheduler"],
		"--authentication-kubeconfig", kubeconfigs["scheduler"],
		"--authorization-kubeconfig", kubeconfigs["scheduler"],
		"--authentication-skip-lookup",
		"--leader-elect=false", "--bind-address", "127.0.0.1")

	if opts.containerd2 != "" {
		c.startContainerd2(t, opts.containerd2, sandboxImage, registries)
	} else {
		c.startContainerd(t, sandboxImage, registries)
	}
	c.startKubelet(t, kubeconfigs["kubelet"], opts)

	waitFor(t, 3*time.Minute, "node "+nodeName+" Ready", func() (bool, string) {
		node, err := client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, cond.Reason + ": " + cond.Message
			}
		}
		return false, "no Ready condition"
	})
	c.startToReady = time.Since(start)
	return c
}

// startContainerd writes containerd's config and starts it: the CRI with
// restrict_oom_score_adj (the VM lacks CAP_SYS_RESOURCE for the sandbox's
// -998), runc with cgroupfs, the CNI bridge network, and a certs.d folder
// with a hosts.toml per plain-HTTP registry.
func (c *cluster) startContainerd(t *testing.T, sandboxImage string, registries []string) {
	t.Helper()
	ns := c.ns
	certsD, cniBin, cniConf := c.runtimeFiles(t, registries)
	config := fmt.Sprintf(`version = 2
root = %q
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, filepath.Join(ns.state, "containerd"), filepath.Join(ns.state, "containerd-opt"), sandboxImage, cniBin, cniConf, certsD)
	c.runContainerd(t, "containerd", config)
}

// startContainerd2 starts containerd 2 from dir (hack/containerd/build.sh)
// with the same settings in its configuration version 3 (the CRI split
// into the io.containerd.cri.v1.images and io.containerd.cri.v1.runtime
// plugins; the sandbox image is a pinned image), its own runc shim named
// by runtime_path (the shim is otherwise looked up on PATH first, where
// Debian's containerd 1.6 has one) and Debian's runc from PATH. The host
// paths containerd 2 adds to 1.6's stay off the host: NRI is off (it
// would listen on /var/run/nri and read /etc/nri and /opt/nri), and the
// image verifiers' folder (default /opt/containerd/image-verifier/bin) is
// an empty one of the suite's. Image volumes are mounted under the CRI's
// state folder, in /run.
func (c *cluster) startContainerd2(t *testing.T, dir, sandboxImage string, registries []string) {
	t.Helper()
	ns := c.ns
	certsD, cniBin, cniConf := c.runtimeFiles(t, registries)
	config := fmt.Sprintf(`version = 3
root = %q
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins.'io.containerd.internal.v1.opt']
  path = %q

[plugins.'io.containerd.image-verifier.v1.bindir']
  bin_dir = %q

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = %q
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
`, filepath.Join(ns.state, "containerd"), filepath.Join(ns.state, "containerd-opt"), filepath.Join(ns.state, "image-verifiers"),
		sandboxImage, certsD, filepath.Join(dir, "containerd-shim-runc-v2"), cniBin, cniConf)
	c.runContainerd(t, filepath.Join(dir, "containerd"), config)
}

// runContainerd writes config and starts the containerd binary with it,
// waiting (at most a minute) until ctr reaches it.
func (c *cluster) runContainerd(t *testing.T, binary, config string) {
	t.Helper()
	ns := c.ns
	path := filepath.Join(ns.state, "containerd.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	c.containerd = ns.start(t, "containerd", binary, "--config", path)
	waitFor(t, time.Minute, "containerd", func() (bool, string) {
		if c.containerd.exited() {
			t.Fatalf("containerd exited:\n%s", c.containerd.tail(20))
		}
		out, errOut, err := ns.output(nil, 10*time.Second, c.ctr, "--address", "/run/containerd/containerd.sock", "version")
		return err == nil, out + errOut
	})
}

// runtimeFiles writes what both containerd versions read: a certs.d
// folder with a hosts.toml per plain-HTTP registry and the CNI bridge
// network's conflist. It returns the certs.d folder, the CNI plugins'
// folder and the conflist's folder.
func (c *cluster) runtimeFiles(t *testing.T, registries []string) (certsD, cniBin, cniConf string) {
	t.Helper()
	ns := c.ns
	certsD = filepath.Join(ns.state, "certs.d")
	for _, host := range registries {
		dir := filepath.Join(certsD, host)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+host, "http://"+host)
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cniConf = filepath.Join(ns.state, "cni")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		t.Fatal(err)
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "stowage-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
    }
  ]
}
`, podSubnet)
	if err := os.WriteFile(filepath.Join(cniConf, "10-stowage-node.conflist"), []byte(conflist), 0o644); err != nil {
		t.Fatal(err)
	}
	cniBin = os.Getenv("STOWAGE_CNI_DIR")
	if cniBin == "" {
		cniBin = "/usr/lib/cni"
	}
	return certsD, cniBin, cniConf
}

// startKubelet writes the KubeletConfiguration and starts the kubelet with
// directories of its own under the state folder: cgroup v1 allowed
// (failCgroupV1: false), cgroupfs with the suite's cgroupRoot, image
// garbage collection and disk eviction out of the way, so no image the test
// counts on is removed behind its back (unless opts.kubelet changes that).
func (c *cluster) startKubelet(t *testing.T, kubeconfig string, opts clusterOptions) {
	t.Helper()
	ns := c.ns
	root := filepath.Join(ns.state, "kubelet")
	f, tr := false, true
	high, low := int32(100), int32(99)
	healthz := int32(0)
	resolv := ""
	kc := kubeletv1beta1.KubeletConfiguration{
		TypeMeta:     metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		FailCgroupV1: &f,
		CgroupDriver: "cgroupfs",
		CgroupRoot:   "/" + ns.cgroup,
		Address:      nodeIP,
		ReadOnlyPort: 0,
		HealthzPort:  &healthz,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: c.pki.path("ca.crt")},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &f},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &f},
		},
		Authorization:               kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow},
		ContainerRuntimeEndpoint:    "unix:///run/containerd/containerd.sock",
		PodLogsDir:                  filepath.Join(ns.state, "pod-logs"),
		VolumePluginDir:             volumePluginDir(ns),
		ResolverConfig:              &resolv,
		FailSwapOn:                  &f,
		ImageGCHighThresholdPercent: &high,
		ImageGCLowThresholdPercent:  &low,
		EvictionHard:                map[string]string{"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
		RegisterNode:                &tr,
		FeatureGates:                opts.featureGates,
	}
	if opts.kubelet != nil {
		opts.kubelet(&kc)
	}
	b, err := yaml.Marshal(kc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ns.state, "kubelet.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.kubeletStarted = time.Now()
	c.kubelet = ns.start(t, "kubelet", filepath.Join(c.kube, "kubelet"),
		"--config", path, "--kubeconfig", kubeconfig,
		"--root-dir", root, "--cert-dir", filepath.Join(ns.state, "kubelet-pki"),
		"--hostname-override", nodeName, "--node-ip", nodeIP)
}

// volumePluginDir is the flex-volume plugin directory of the kubelet and
// kube-controller-manager, in the state directory (both default to
// /usr/libexec/kubernetes/kubelet-plugins/volume/exec on the host).
func volumePluginDir(ns *namespace) string { return filepath.Join(ns.state, "volume-plugins") }

// ctrImages returns the image names containerd's k8s.io namespace holds
// (`ctr -n k8s.io images ls -q` inside the namespace): references by tag
// and by digest, and the sha256:… IDs of the CRI.
func (c *cluster) ctrImages(t *testing.T) map[string]bool {
	t.Helper()
	out := c.ns.run(t, nil, c.ctr, "--address", "/run/containerd/containerd.sock", "-n", "k8s.io", "images", "ls", "-q")
	got := map[string]bool{}
	for _, l := range strings.Fields(out) {
		got[l] = true
	}
	return got
}

// kubectl runs the v1.37.2 kubectl inside the namespace with the admin
// kubeconfig and returns its stdout.
func (c *cluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return c.ns.run(t, nil, filepath.Join(c.kube, "kubectl"), append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
}

// waitFor polls cond every 250 ms until it holds, failing the test after
// limit with what cond last said.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v; last: %s", what, limit, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
