package kubecheck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// problems collects every *field.Error reachable from err: through the
// errors.Join of CheckAll, then each *Error's Unwrap.
func problems(err error) []*field.Error {
	if fe, ok := err.(*field.Error); ok {
		return []*field.Error{fe}
	}
	var out []*field.Error
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			out = append(out, problems(e)...)
		}
	}
	return out
}

// hasProblem reports whether err holds a problem of type typ at path.
func hasProblem(err error, path string, typ field.ErrorType) bool {
	for _, fe := range problems(err) {
		if fe.Field == path && fe.Type == typ {
			return true
		}
	}
	return false
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// podSpec renders a valid DaemonSet monitoring/agent around a pod spec
// written at column 0, so a case shows only the part it is about.
func podSpec(spec string) string {
	var b strings.Builder
	b.WriteString(`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: monitoring
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: agent
    spec:
`)
	for _, line := range strings.Split(strings.Trim(spec, "\n"), "\n") {
		b.WriteString("      " + line + "\n")
	}
	return b.String()
}

// agent is a valid container list for cases about other pod-spec fields.
const agent = `containers:
  - name: agent
    image: registry.example.com/agent:1.4.2
`

func TestCheckValidFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "valid", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	// What stowage renders for the examples: every DaemonSet, Secret and
	// ConfigMap kind it emits.
	for _, g := range []string{"openpai-offline/offline.yaml", "submarine-notebooks/notebooks.yaml", "gpu-platform/gpu.yaml"} {
		if err := CheckAll(readFixture(t, "../../../../golden/"+g)); err != nil {
			t.Errorf("CheckAll(golden/%s) = %v, want nil", g, err)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(doc); err != nil {
				t.Errorf("Check(%s) = %v, want nil", f, err)
			}
		})
	}
}

func TestCheckInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		doc   string
		field string
		typ   field.ErrorType
	}{
		// Decoding.
		{
			name:  "unknown field",
			doc:   podSpec(agent + "containerz:\n  - name: sidecar\n"),
			field: "spec.template.spec.containerz",
			typ:   field.ErrorTypeForbidden,
		},
		{
			name: "field names are case-sensitive",
			doc: podSpec(`containers:
  - name: agent
    Image: registry.example.com/agent:1.4.2
`),
			field: "spec.template.spec.containers[0].Image",
			typ:   field.ErrorTypeForbidden,
		},
		{
			name: "duplicate YAML key",
			doc: `apiVersion: v1
kind: ConfigMap
metadata:
  name: config
  name: config-2
`,
			field: "",
			typ:   field.ErrorTypeDuplicate,
		},
		{
			name:  "duplicate JSON field",
			doc:   `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "name": "b"}}`,
			field: "",
			typ:   field.ErrorTypeDuplicate,
		},
		{
			name:  "wrong value type",
			doc:   podSpec(agent) + "  minReadySeconds: soon\n",
			field: "",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "not YAML",
			doc:   "apiVersion: v1\nkind: [ConfigMap\n",
			field: "",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "unsupported kind",
			doc:   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: agent\n",
			field: "kind",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "unsupported apiVersion for a supported kind",
			doc:   "apiVersion: extensions/v1beta1\nkind: DaemonSet\nmetadata:\n  name: agent\n",
			field: "kind",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "missing apiVersion",
			doc:   "kind: ConfigMap\nmetadata:\n  name: config\n",
			field: "apiVersion",
			typ:   field.ErrorTypeRequired,
		},

		// Metadata (ValidateObjectMeta).
		{
			name:  "name not a DNS-1123 subdomain",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Agent_Config\n",
			field: "metadata.name",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "name missing",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: monitoring\n",
			field: "metadata.name",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "namespace not a DNS-1123 label",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  namespace: team.monitoring\n",
			field: "metadata.namespace",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "label value invalid",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  labels:\n    app: -agent-\n",
			field: "metadata.labels",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "label key invalid",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  labels:\n    a/b/c: x\n",
			field: "metadata.labels",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "annotation key invalid",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  annotations:\n    \"bad key\": x\n",
			field: "metadata.annotations",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name: "annotations larger than 256 KiB in total",
			doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  annotations:\n    big: " +
				strings.Repeat("x", 256*1024) + "\n",
			field: "metadata.annotations",
			typ:   field.ErrorTypeTooLong,
		},

		// DaemonSet spec (ValidateDaemonSetSpec).
		{
			name: "selector missing",
			doc: `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  template:
    metadata:
      labels:
        app: agent
    spec:
      containers:
        - name: agent
          image: registry.example.com/agent:1.4.2
`,
			field: "spec.selector",
			typ:   field.ErrorTypeRequired,
		},
		{
			name: "selector empty",
			doc: `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector: {}
  template:
    metadata:
      labels:
        app: agent
    spec:
      containers:
        - name: agent
          image: registry.example.com/agent:1.4.2
`,
			field: "spec.selector",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name: "selector does not match template labels",
			doc: `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: node-agent
    spec:
      containers:
        - name: agent
          image: registry.example.com/agent:1.4.2
`,
			field: "spec.template.metadata.labels",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name: "template label invalid",
			doc: `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: agent
        version: "1.4.2+build.7"
    spec:
      containers:
        - name: agent
          image: registry.example.com/agent:1.4.2
`,
			field: "spec.template.metadata.labels",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "maxUnavailable and maxSurge both zero",
			doc:   podSpec(agent) + "  updateStrategy:\n    rollingUpdate:\n      maxUnavailable: 0\n",
			field: "spec.updateStrategy.rollingUpdate.maxUnavailable",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "restartPolicy not Always",
			doc:   podSpec(agent + "restartPolicy: OnFailure\n"),
			field: "spec.template.spec.restartPolicy",
			typ:   field.ErrorTypeNotSupported,
		},

		// Containers.
		{
			name:  "no containers",
			doc:   podSpec("containers: []\n"),
			field: "spec.template.spec.containers",
			typ:   field.ErrorTypeRequired,
		},
		{
			name: "init container name not a DNS-1123 label",
			doc: podSpec(`initContainers:
  - name: setup
    image: busybox:1.36
  - name: Fetch_Config
    image: busybox:1.36
` + agent),
			field: "spec.template.spec.initContainers[1].name",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name: "duplicate container names",
			doc: podSpec(`containers:
  - name: agent
    image: registry.example.com/agent:1.4.2
  - name: agent
    image: registry.example.com/sidecar:2.0
`),
			field: "spec.template.spec.containers[1].name",
			typ:   field.ErrorTypeDuplicate,
		},
		{
			name: "container name duplicates an init container name",
			doc: podSpec(`initContainers:
  - name: agent
    image: busybox:1.36
` + agent),
			field: "spec.template.spec.containers[0].name",
			typ:   field.ErrorTypeDuplicate,
		},
		{
			name:  "image missing",
			doc:   podSpec("containers:\n  - name: agent\n"),
			field: "spec.template.spec.containers[0].image",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "image with whitespace",
			doc:   podSpec("containers:\n  - name: agent\n    image: \"registry.example.com/agent: 1.4.2\"\n"),
			field: "spec.template.spec.containers[0].image",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "imagePullPolicy unknown",
			doc:   podSpec(agent + "    imagePullPolicy: Sometimes\n"),
			field: "spec.template.spec.containers[0].imagePullPolicy",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "command set but empty",
			doc:   podSpec(agent + "    command: []\n"),
			field: "spec.template.spec.containers[0].command",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "command with empty executable",
			doc:   podSpec(agent + "    command: [\"\", \"--once\"]\n"),
			field: "spec.template.spec.containers[0].command[0]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "request above limit",
			doc:   podSpec(agent + "    resources:\n      requests:\n        memory: 256Mi\n      limits:\n        memory: 128Mi\n"),
			field: "spec.template.spec.containers[0].resources.requests[memory]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "negative quantity",
			doc:   podSpec(agent + "    resources:\n      limits:\n        cpu: -1\n"),
			field: "spec.template.spec.containers[0].resources.limits[cpu]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "resource other than cpu and memory",
			doc:   podSpec(agent + "    resources:\n      limits:\n        nvidia.com/gpu: 1\n"),
			field: "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]",
			typ:   field.ErrorTypeNotSupported,
		},

		// Volumes and mounts.
		{
			name:  "volumeMount names no volume",
			doc:   podSpec(agent + "    volumeMounts:\n      - name: config\n        mountPath: /etc/agent\n"),
			field: "spec.template.spec.containers[0].volumeMounts[0].name",
			typ:   field.ErrorTypeNotFound,
		},
		{
			name: "init container volumeMount names no volume",
			doc: podSpec(`initContainers:
  - name: setup
    image: busybox:1.36
    volumeMounts:
      - name: state
        mountPath: /var/lib/agent
` + agent),
			field: "spec.template.spec.initContainers[0].volumeMounts[0].name",
			typ:   field.ErrorTypeNotFound,
		},
		{
			name: "duplicate mountPath",
			doc: podSpec(agent + `    volumeMounts:
      - name: a
        mountPath: /data
      - name: b
        mountPath: /data
volumes:
  - name: a
  - name: b
`),
			field: "spec.template.spec.containers[0].volumeMounts[1].mountPath",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "volume name not a DNS-1123 label",
			doc:   podSpec(agent + "volumes:\n  - name: host.proc\n    hostPath:\n      path: /proc\n"),
			field: "spec.template.spec.volumes[0].name",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "duplicate volume names",
			doc:   podSpec(agent + "volumes:\n  - name: data\n  - name: data\n"),
			field: "spec.template.spec.volumes[1].name",
			typ:   field.ErrorTypeDuplicate,
		},
		{
			name:  "volume not an emptyDir",
			doc:   podSpec(agent + "volumes:\n  - name: data\n    hostPath:\n      path: /data\n"),
			field: "spec.template.spec.volumes[0].emptyDir",
			typ:   field.ErrorTypeRequired,
		},

		// Scheduling.
		{
			name:  "nodeSelector key not a qualified name",
			doc:   podSpec(agent + "nodeSelector:\n  \"kubernetes.io/os/name\": linux\n"),
			field: "spec.template.spec.nodeSelector",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "nodeSelector value not a label value",
			doc:   podSpec(agent + "nodeSelector:\n  kubernetes.io/os: \"linux amd64\"\n"),
			field: "spec.template.spec.nodeSelector",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "toleration key not a qualified name",
			doc:   podSpec(agent + "tolerations:\n  - key: \"dedicated node\"\n    operator: Exists\n"),
			field: "spec.template.spec.tolerations[0].key",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "toleration Exists with a value",
			doc:   podSpec(agent + "tolerations:\n  - key: dedicated\n    operator: Exists\n    value: gpu\n"),
			field: "spec.template.spec.tolerations[0].value",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "toleration empty key without Exists",
			doc:   podSpec(agent + "tolerations:\n  - operator: Equal\n    value: gpu\n"),
			field: "spec.template.spec.tolerations[0].operator",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "toleration operator unknown",
			doc:   podSpec(agent + "tolerations:\n  - key: dedicated\n    operator: Matches\n"),
			field: "spec.template.spec.tolerations[0].operator",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "toleration effect unknown",
			doc:   podSpec(agent + "tolerations:\n  - key: dedicated\n    operator: Exists\n    effect: NoRun\n"),
			field: "spec.template.spec.tolerations[0].effect",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "tolerationSeconds without NoExecute",
			doc:   podSpec(agent + "tolerations:\n  - key: dedicated\n    operator: Exists\n    effect: NoSchedule\n    tolerationSeconds: 60\n"),
			field: "spec.template.spec.tolerations[0].effect",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "imagePullSecret without name",
			doc:   podSpec(agent + "imagePullSecrets:\n  - {}\n"),
			field: "spec.template.spec.imagePullSecrets[0].name",
			typ:   field.ErrorTypeRequired,
		},
		{
			name:  "imagePullSecret name not a DNS-1123 subdomain",
			doc:   podSpec(agent + "imagePullSecrets:\n  - name: Registry_Credentials\n"),
			field: "spec.template.spec.imagePullSecrets[0].name",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "priorityClassName not a DNS-1123 subdomain",
			doc:   podSpec(agent + "priorityClassName: System_Critical\n"),
			field: "spec.template.spec.priorityClassName",
			typ:   field.ErrorTypeInvalid,
		},

		// Security context.
		{
			name:  "pod runAsUser negative",
			doc:   podSpec(agent + "securityContext:\n  runAsUser: -1\n"),
			field: "spec.template.spec.securityContext.runAsUser",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "container runAsUser negative",
			doc:   podSpec(agent + "    securityContext:\n      runAsUser: -1\n"),
			field: "spec.template.spec.containers[0].securityContext.runAsUser",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "runAsNonRoot with runAsUser 0",
			doc:   podSpec(agent + "    securityContext:\n      runAsNonRoot: true\n      runAsUser: 0\n"),
			field: "spec.template.spec.containers[0].securityContext.runAsUser",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "privileged without privilege escalation",
			doc:   podSpec(agent + "    securityContext:\n      privileged: true\n      allowPrivilegeEscalation: false\n"),
			field: "spec.template.spec.containers[0].securityContext",
			typ:   field.ErrorTypeInvalid,
		},

		// Secret (ValidateSecret).
		{
			name: "dockerconfigjson without its key",
			doc: `apiVersion: v1
kind: Secret
metadata:
  name: registry-credentials
type: kubernetes.io/dockerconfigjson
data:
  config.json: e30=
`,
			field: "data[.dockerconfigjson]",
			typ:   field.ErrorTypeRequired,
		},
		{
			name: "dockerconfigjson not JSON",
			doc: `apiVersion: v1
kind: Secret
metadata:
  name: registry-credentials
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: "auths: {}"
`,
			field: "data[.dockerconfigjson]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name: "dockerconfigjson without auths",
			doc: `apiVersion: v1
kind: Secret
metadata:
  name: registry-credentials
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"credsStore": "desktop"}'
`,
			field: "data[.dockerconfigjson]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name: "dockerconfigjson auths not an object",
			doc: `apiVersion: v1
kind: Secret
metadata:
  name: registry-credentials
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": ["registry.example.com"]}'
`,
			field: "data[.dockerconfigjson]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "secret data key invalid",
			doc:   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\ndata:\n  \"api token\": c2VjcmV0\n",
			field: "data[api token]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "secret stringData key invalid",
			doc:   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n  ../token: secret\n",
			field: "stringData[../token]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "secret larger than 1 MiB",
			doc:   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: blob\nstringData:\n  blob: " + strings.Repeat("x", 1<<20+1) + "\n",
			field: "data",
			typ:   field.ErrorTypeTooLong,
		},
		{
			name:  "secret data not base64",
			doc:   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\ndata:\n  token: not base64!\n",
			field: "",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "secret of a type stowage does not render",
			doc:   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: cert\n",
			field: "type",
			typ:   field.ErrorTypeNotSupported,
		},

		// ConfigMap (ValidateConfigMap).
		{
			name:  "configmap data key invalid",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  config/agent.yaml: x\n",
			field: "data[config/agent.yaml]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "configmap key in data and binaryData",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  logo: x\nbinaryData:\n  logo: eA==\n",
			field: "data[logo]",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "configmap larger than 1 MiB",
			doc:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  a: " + strings.Repeat("x", 1<<19) + "\n  b: " + strings.Repeat("y", 1<<19+1) + "\n",
			field: "data",
			typ:   field.ErrorTypeTooLong,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Check() = nil, want a %s problem at %q", tc.typ, tc.field)
			}
			var kerr *Error
			if !errors.As(err, &kerr) {
				t.Fatalf("Check() = %T %v, want *Error", err, err)
			}
			if !hasProblem(err, tc.field, tc.typ) {
				t.Errorf("Check() = %v\nwant a %s problem at %q", err, tc.typ, tc.field)
			}
			if tc.field != "" && !strings.Contains(err.Error(), tc.field+": ") {
				t.Errorf("Check().Error() = %q, want it to name %q", err, tc.field)
			}
		})
	}
}

func TestErrorNamesObject(t *testing.T) {
	t.Parallel()
	doc := podSpec(`initContainers:
  - name: setup
    image: busybox:1.36
  - name: Fetch_Config
    image: busybox:1.36
` + agent)
	err := Check([]byte(doc))
	var kerr *Error
	if !errors.As(err, &kerr) {
		t.Fatalf("Check() = %v, want *Error", err)
	}
	want := Error{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: "monitoring", Name: "agent"}
	if kerr.APIVersion != want.APIVersion || kerr.Kind != want.Kind || kerr.Namespace != want.Namespace || kerr.Name != want.Name {
		t.Errorf("identity = %s %s %s/%s, want %s %s %s/%s", kerr.APIVersion, kerr.Kind, kerr.Namespace, kerr.Name,
			want.APIVersion, want.Kind, want.Namespace, want.Name)
	}
	wantPrefix := `DaemonSet monitoring/agent: spec.template.spec.initContainers[1].name: Invalid value: "Fetch_Config": `
	if got := err.Error(); !strings.HasPrefix(got, wantPrefix) {
		t.Errorf("Error() = %q, want prefix %q", got, wantPrefix)
	}
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "spec.template.spec.initContainers[1].name" {
		t.Errorf("errors.As(*field.Error) = %v, want the initContainers[1].name problem", fe)
	}
}

func TestErrorListsAllProblems(t *testing.T) {
	t.Parallel()
	doc := podSpec(`containers:
  - name: agent
  - name: agent
    image: registry.example.com/agent:1.4.2
    imagePullPolicy: Sometimes
`)
	err := Check([]byte(doc))
	for _, want := range []struct {
		field string
		typ   field.ErrorType
	}{
		{"spec.template.spec.containers[0].image", field.ErrorTypeRequired},
		{"spec.template.spec.containers[1].name", field.ErrorTypeDuplicate},
		{"spec.template.spec.containers[1].imagePullPolicy", field.ErrorTypeNotSupported},
	} {
		if !hasProblem(err, want.field, want.typ) {
			t.Errorf("Check() = %v\nwant a %s problem at %q", err, want.typ, want.field)
		}
	}
	if got := len(problems(err)); got != 3 {
		t.Errorf("Check() has %d problems, want 3: %v", got, err)
	}
}

func TestUnsupportedKindListsSupported(t *testing.T) {
	t.Parallel()
	err := Check([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: agent\n"))
	if err == nil {
		t.Fatal("Check() = nil, want an error")
	}
	for _, want := range []string{"not a kind stowage renders", `"apps/v1 Deployment"`, "apps/v1 DaemonSet", "v1 ConfigMap", "v1 Secret", "kyverno.io/v1 ClusterPolicy", "policies.kyverno.io/v1 ImageValidatingPolicy", "policy.sigstore.dev/v1beta1 ClusterImagePolicy", "policy.sigstore.dev/v1alpha1 TrustRoot"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check() = %q, want it to mention %q", err, want)
		}
	}
}

func TestSecretErrorsRedactContents(t *testing.T) {
	t.Parallel()
	doc := `apiVersion: v1
kind: Secret
metadata:
  name: registry-credentials
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"hunter2": true}'
`
	err := Check([]byte(doc))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Check() = %v, want an error that does not show the Secret's contents", err)
	}
}

func TestCheckAll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		stream   []byte
		wantErrs []Error // Doc, Kind, Name of each failing document
	}{
		{name: "valid stream", stream: readFixture(t, "../../../../golden/submarine-notebooks/notebooks.yaml")},
		{name: "empty stream", stream: nil},
		{name: "only separators and comments", stream: []byte("---\n# nothing\n---\n\n")},
		{
			name:     "one bad document",
			stream:   readFixture(t, "stream/bad-second.yaml"),
			wantErrs: []Error{{Doc: 2, Kind: "DaemonSet", Name: "node-agent"}},
		},
		{
			name: "two bad documents",
			stream: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad\n" +
				"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\n" +
				"---\n\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a b: x\n"),
			wantErrs: []Error{
				{Doc: 1, Kind: "ConfigMap", Name: "Bad"},
				{Doc: 3, Kind: "ConfigMap", Name: "c"},
			},
		},
		{
			name:     "bad separator",
			stream:   []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n--- apiVersion: v1\n"),
			wantErrs: []Error{{Doc: 1}}, // YAMLReader fails the document the separator would end
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckAll(tc.stream)
			var got []*Error
			if err != nil {
				var one *Error
				if errors.As(err, &one) && err == error(one) {
					got = []*Error{one}
				} else if u, ok := err.(interface{ Unwrap() []error }); ok {
					for _, e := range u.Unwrap() {
						var ke *Error
						if !errors.As(e, &ke) {
							t.Fatalf("CheckAll() joined a %T: %v", e, e)
						}
						got = append(got, ke)
					}
				} else {
					t.Fatalf("CheckAll() = %T %v", err, err)
				}
			}
			if len(got) != len(tc.wantErrs) {
				t.Fatalf("CheckAll() = %v\nwant %d failing documents", err, len(tc.wantErrs))
			}
			for i, w := range tc.wantErrs {
				g := got[i]
				if g.Doc != w.Doc || g.Kind != w.Kind || g.Name != w.Name {
					t.Errorf("failure %d = document %d %s %s, want document %d %s %s",
						i, g.Doc, g.Kind, g.Name, w.Doc, w.Kind, w.Name)
				}
			}
		})
	}
}

func TestCheckAllNamesBadDocument(t *testing.T) {
	t.Parallel()
	err := CheckAll(readFixture(t, "stream/bad-second.yaml"))
	want := "document 2: DaemonSet monitoring/node-agent: spec.template.spec.initContainers[1].name: Invalid value"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckAll() = %v, want prefix %q", err, want)
	}
}

func TestCheckObject(t *testing.T) {
	t.Parallel()
	valid := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "monitoring"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "agent", Image: "registry.example.com/agent:1.4.2"}},
				},
			},
		},
	}
	dupInit := valid.DeepCopy()
	dupInit.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "agent", Image: "busybox:1.36"}}
	wrongType := valid.DeepCopy()
	wrongType.TypeMeta = metav1.TypeMeta{APIVersion: "extensions/v1beta1", Kind: "DaemonSet"}

	tests := []struct {
		name  string
		obj   runtime.Object
		field string // "" means valid
		typ   field.ErrorType
	}{
		{name: "valid DaemonSet", obj: valid},
		{name: "valid ConfigMap", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "agent-records"}, Data: map[string]string{"images.list": "busybox:1.36\n"}}},
		{
			name:  "container name duplicates init container",
			obj:   dupInit,
			field: "spec.template.spec.containers[0].name",
			typ:   field.ErrorTypeDuplicate,
		},
		{
			name:  "TypeMeta disagrees with Go type",
			obj:   wrongType,
			field: "apiVersion",
			typ:   field.ErrorTypeInvalid,
		},
		{
			name:  "unsupported type",
			obj:   &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "agent"}},
			field: "kind",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "nil pointer",
			obj:   (*corev1.Secret)(nil),
			field: "kind",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name:  "nil object",
			obj:   nil,
			field: "kind",
			typ:   field.ErrorTypeNotSupported,
		},
		{
			name: "secret too large",
			obj: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "blob"},
				Data:       map[string][]byte{"blob": make([]byte, corev1.MaxSecretSize+1)},
			},
			field: "data",
			typ:   field.ErrorTypeTooLong,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckObject(tc.obj)
			if tc.field == "" {
				if err != nil {
					t.Errorf("CheckObject() = %v, want nil", err)
				}
				return
			}
			if !hasProblem(err, tc.field, tc.typ) {
				t.Errorf("CheckObject() = %v\nwant a %s problem at %q", err, tc.typ, tc.field)
			}
		})
	}
}
