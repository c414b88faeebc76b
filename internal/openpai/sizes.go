package openpai

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// observation is one line of the `docker images` listing in microsoft/pai
// issue #5381 ("Mandatory Service", OpenPAI v1.5.0, 2021-03-16): image
// name as docker printed it (no tag, no docker.io/), image ID, size as
// docker printed it, and the nodes it was seen on.
type observation struct {
	name  string
	id    string
	size  string
	nodes string
}

// observations5381 is the listing of issue #5381, dev-box, master and
// worker together. An image seen on several nodes has the same ID and size
// on each.
var observations5381 = []observation{
	{"openpai/dev-box", "27910a99b233", "3.02GB", "devbox"},
	{"gcr.io/google-containers/pause", "da86e6ba6ca1", "742kB", "master,worker"},
	{"gcr.io/google_containers/pause-amd64", "da86e6ba6ca1", "742kB", "master,worker"},
	{"busybox", "1c35c4412082", "1.22MB", "master"},
	{"openpai/log-manager-cleaner", "66d704127f79", "9.54MB", "master,worker"},
	{"rocm/k8s-device-plugin", "0b7eeeeb7a9e", "21.2MB", "master,worker"},
	{"openpai/node-exporter", "e5a616e4b9cf", "22.9MB", "master,worker"},
	{"prom/alertmanager", "90f439897fb1", "36.1MB", "master"},
	{"quay.io/coreos/etcd", "28c771d7cfbf", "40.6MB", "master"},
	{"coredns/coredns", "680bc53e5985", "42.2MB", "master,worker"},
	{"calico/kube-controllers", "283860d96794", "46.8MB", "master,worker"},
	{"gcr.io/google-containers/cluster-proportional-autoscaler-amd64", "dfe4432cd2e2", "47.7MB", "master"},
	{"k8s.gcr.io/cluster-proportional-autoscaler-amd64", "dfe4432cd2e2", "47.7MB", "master"},
	{"openpai/watchdog", "a4d224a32ba5", "48.6MB", "master"},
	{"frameworkcontroller/frameworkcontroller", "e1cd8f190802", "53.1MB", "master"},
	{"hivedscheduler/hivedscheduler", "1610bb411c22", "55.6MB", "master"},
	{"everpeace/k8s-host-device-plugin", "abbb30c1f3e6", "63.2MB", "master,worker"},
	{"nvidia/k8s-device-plugin", "75b52b7d5662", "64.1MB", "master,worker"},
	{"openpai/kube-scheduler", "ee18f350636d", "81.6MB", "master"},
	{"gcr.io/google-containers/kube-proxy", "3b8ffbdbcca3", "82.8MB", "master,worker"},
	{"gcr.io/google-containers/kube-scheduler", "133a50b2b327", "83.6MB", "master,worker"},
	{"certbot/certbot", "7e91e27a5806", "96.1MB", "master"},
	{"nvidia/cuda", "05fcda0d8e42", "105MB", "worker"},
	{"nginx", "53f3fd8007f7", "109MB", "master,worker"},
	{"openpai/prometheus", "c8ecf7c719c1", "112MB", "master"},
	{"openpai/kubernetes-dashboard-amd64", "f9aed6605b81", "122MB", "master"},
	{"nvidia/cuda", "2ec708416bb8", "122MB", "worker"},
	{"openpai/internal-storage-delete", "68adc2c4c12a", "124MB", "master,worker"},
	{"openpai/internal-storage-create", "ebf5db7b0d17", "124MB", "master"},
	{"nginx", "9beeba249f3e", "127MB", "master,worker"},
	{"calico/cni", "1a6ade52d471", "135MB", "master,worker"},
	{"gcr.io/google-containers/kube-controller-manager", "01aec835c89f", "151MB", "master,worker"},
	{"calico/node", "bf4ff15c9db0", "156MB", "master,worker"},
	{"gcr.io/google-containers/kube-apiserver", "48db9392345b", "160MB", "master,worker"},
	{"openpai/postgresql-init-client", "3e52f79771fe", "178MB", "master"},
	{"nvcr.io/nvidia/k8s-device-plugin", "254aee69546f", "190MB", "master,worker"},
	{"openpai/fluentd", "ec628cda46f9", "279MB", "master"},
	{"openpai/grafana", "aa4e2272202e", "285MB", "master"},
	{"openpai/log-manager-nginx", "a8cba86132ee", "322MB", "master,worker"},
	{"openpai/openpai-runtime", "a31215877a99", "333MB", "worker"},
	{"openpai/postgresql", "ec61ce630b02", "348MB", "master"},
	{"openpai/marketplace-db", "f88dfa384cc4", "348MB", "master"},
	{"openpai/pylon", "593787c79bd6", "709MB", "master"},
	{"openpai/cleaning-image", "59992b19b6de", "974MB", "master,worker"},
	{"openpai/marketplace-restserver", "2afda31b1aa7", "1GB", "master"},
	{"openpai/database-controller", "038b3d496ee0", "1.06GB", "master"},
	{"openpai/job-exporter", "612d5d77cf09", "1.07GB", "master,worker"},
	{"openpai/rest-server", "a5ef25a4ced7", "1.08GB", "master"},
	{"openpai/marketplace-webportal", "1bdd19146cb0", "1.19GB", "master"},
	{"openpai/webportal", "b0f4cb231332", "1.76GB", "master"},
}

// observedBytes maps an image name to its observed size in bytes. Names
// listed with two different images (nginx, nvidia/cuda: two tags each) are
// left out, since the listing does not say which tag is which. It is
// built on first use, not at start-up.
var observedBytes = sync.OnceValue(func() map[string]int64 {
	sizes := map[string]int64{}
	ambiguous := map[string]bool{}
	for _, o := range observations5381 {
		n, err := parseDockerSize(o.size)
		if err != nil {
			panic(fmt.Sprintf("openpai: issue #5381 size of %s: %v", o.name, err))
		}
		if old, ok := sizes[o.name]; ok && old != n {
			ambiguous[o.name] = true
		}
		sizes[o.name] = n
	}
	for n := range ambiguous {
		delete(sizes, n)
	}
	return sizes
})

// parseDockerSize converts a size as `docker images` prints it (decimal
// units of github.com/docker/go-units HumanSize: B, kB, MB, GB, TB) to
// bytes, exactly: "742kB" is 742000, "1.06GB" is 1060000000.
func parseDockerSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		whole, frac, _ := strings.Cut(num, ".")
		w, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("size %q: %w", s, err)
		}
		n := w * u.mult
		if frac != "" {
			f, err := strconv.ParseInt(frac, 10, 64)
			if err != nil || f < 0 {
				return 0, fmt.Errorf("size %q: bad fraction", s)
			}
			div := int64(1)
			for range frac {
				div *= 10
			}
			if u.mult%div != 0 {
				return 0, fmt.Errorf("size %q: more decimals than the unit allows", s)
			}
			n += f * (u.mult / div)
		}
		return n, nil
	}
	return 0, fmt.Errorf("size %q: no unit (B, kB, MB, GB, TB)", s)
}

// ObservedSize returns the size in bytes observed for an OpenPAI image in
// microsoft/pai issue #5381, matched on the image name without registry
// prefix and tag (e.g. "openpai/rest-server" or third-party
// "frameworkcontroller/frameworkcontroller"). The argument may also be a
// full reference: a tag or digest is ignored, and so is a Docker Hub domain
// (docker.io/, index.docker.io/, registry-1.docker.io/) and "library/".
// Sizes are docker's decimal units (1.06GB = 1060000000). ok is false when
// the image was not observed, or observed as two different images (nginx,
// nvidia/cuda).
func ObservedSize(image string) (bytes int64, ok bool) {
	bytes, ok = observedBytes()[imageName(image)]
	return bytes, ok
}

// imageName strips a digest, a tag and a Docker Hub domain from ref, giving
// the name `docker images` prints in its REPOSITORY column.
func imageName(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	for _, hub := range []string{"docker.io/", "index.docker.io/", "registry-1.docker.io/"} {
		if rest, ok := strings.CutPrefix(name, hub); ok {
			name = rest
			break
		}
	}
	if rest, ok := strings.CutPrefix(name, "library/"); ok {
		name = rest
	}
	return name
}

// RoleBytes is the image volume of one node role, in bytes, as observed in
// issue #5381: Full for every service of the version, Reduced for the kept
// ones, Saved = Full - Reduced. UnknownFull and UnknownReduced count the
// images of each set that have no observed size (they add nothing to the
// byte counts).
type RoleBytes struct {
	Role                        Role
	Full, Reduced, Saved        int64
	UnknownFull, UnknownReduced int
}

// Bytes returns the image volume of p per role, for RoleMaster, RoleWorker
// and RoleAll in that order, using ObservedSize. It reads the service graph
// of p.Version (nil when that version is unsupported) and counts each
// distinct image once per role. OpenPAI-built images ("{prefix}<name>") are
// matched by their base name as "openpai/<name>", so the sizes still apply
// when p.Registry has another domain or namespace; third-party images are
// matched by their fixed reference.
func (p *Reduction) Bytes() []RoleBytes {
	g, err := Load(p.Version)
	if err != nil {
		return nil
	}
	full := roleBytes(imageUses(g, g.Names()))
	reduced := roleBytes(imageUses(g, p.Kept))
	var out []RoleBytes
	for _, r := range []Role{RoleMaster, RoleWorker, RoleAll} {
		out = append(out, RoleBytes{
			Role:           r,
			Full:           full[r].bytes,
			Reduced:        reduced[r].bytes,
			Saved:          full[r].bytes - reduced[r].bytes,
			UnknownFull:    full[r].unknown,
			UnknownReduced: reduced[r].unknown,
		})
	}
	return out
}

type byteCount struct {
	bytes   int64
	unknown int
}

// roleBytes sums the observed sizes of uses per role.
func roleBytes(uses []imageUse) map[Role]byteCount {
	out := map[Role]byteCount{}
	for _, u := range uses {
		c := out[u.role]
		if n, ok := templateSize(u.template); ok {
			c.bytes += n
		} else {
			c.unknown++
		}
		out[u.role] = c
	}
	return out
}

// templateSize returns the observed size of an image template:
// "{prefix}<name>:{tag}" as "openpai/<name>", anything else as written.
func templateSize(template string) (int64, bool) {
	if rest, ok := strings.CutPrefix(template, "{prefix}"); ok {
		return ObservedSize(DefaultNamespace + "/" + strings.TrimSuffix(rest, ":{tag}"))
	}
	return ObservedSize(template)
}
