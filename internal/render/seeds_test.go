package render

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stowage/stowage/schema"
)

// The fuzzers' committed seed corpora (testdata/fuzz/Fuzz*/seed-*, and the
// loader's in ../../schema/testdata/fuzz/FuzzLoadFiles/) are written from the
// cases below by
//
//	go test ./internal/render -run TestWriteSeedCorpus -write-seeds
//
// Each case is a field case of the project's shared notes (cases/*.yaml,
// named by its id) as a small config. Seeds the fuzzers found are kept
// beside them under their own names (regress-*) and are never rewritten.
var writeSeeds = flag.Bool("write-seeds", false, "rewrite the seed-* files of the fuzz corpora from the field cases")

// seedConfig is a config of the seed corpus: YAML, optionally with a CUE
// file beside it.
type seedConfig struct {
	id      string
	yaml    string
	cue     string
	literal bool // --allow-literal-passwords
}

// profileYAML is a profile "p" with one puller of the environments envs.
func profileYAML(envs ...string) string {
	return "profiles:\n  p:\n    pullers:\n    - name: pre\n      namespace: ns\n      environments: [" + strings.Join(envs, ", ") + "]\n"
}

// envYAML is an environments block with one environment per name=image.
func envYAML(pairs ...string) string {
	var b strings.Builder
	b.WriteString("environments:\n")
	for _, p := range pairs {
		n, img, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "  %s:\n    image: %q\n", n, img)
	}
	return b.String()
}

var seedConfigs = func() []seedConfig {
	refCase := func(id, ref string) seedConfig {
		return seedConfig{id: id, yaml: envYAML("app="+ref) + profileYAML("app")}
	}
	return []seedConfig{
		// references cases
		refCase("ref-port-no-tag", "registry.lab.internal:5000/team/app"),
		refCase("ref-localhost-port-tag", "localhost:5000/svc:1.2"),
		refCase("ref-tag-and-digest", "busybox:1.31.1@sha256:1f3c66cf0f0e4c4da2f1d7c3f2b7d5b8e6a5c4f3e2d1c0b9a8f7e6d5c4b3a291"),
		refCase("ref-digest-with-colon", "ghcr.io/example-org/source-controller:sha256:b3012918c1e54eb56a8c12f2bf2b0af4fe9e1d1d3d8a0c7a2a1a3f6a9a7c5e10"),
		refCase("ref-with-scheme", "https://harbor.lab.internal/release/notebook:1.1.0"),
		refCase("ref-uppercase-repo", "registry.example.org/foo/ScreenApp:1"),
		refCase("ref-empty-tag", "ghcr.io/example-org/img:"),
		refCase("ref-official-image", "busybox:1.31.1"),
		{id: "ref-docker-hub-spellings", yaml: envYAML(
			"short=nvidia/k8s-device-plugin:1.0.0-beta4",
			"docker=docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
			"index=index.docker.io/nvidia/k8s-device-plugin:1.0.0-beta4") + profileYAML("short", "docker", "index")},
		{id: "name-from-camel-key", yaml: envYAML("myExtraImageIWantPulled=ghcr.io/example-org/tool:2") + profileYAML("myExtraImageIWantPulled")},
		{id: "name-from-long-ref", yaml: `images:
  a: {reference: "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name:2.0"}
  b: {reference: "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name-too:2.0"}
  aVeryLongCatalogueKeyThatCertainlyGoesBeyondTheSixtyThreeCharacterLimit: {reference: "ghcr.io/x/y:1"}
  aVeryLongCatalogueKeyThatCertainlyGoesBeyondTheSixtyThreeCharacterLimitToo: {reference: "ghcr.io/x/z:1"}
profiles:
  p:
    pullers:
    - name: pre
      namespace: ns
      images: [a, b, aVeryLongCatalogueKeyThatCertainlyGoesBeyondTheSixtyThreeCharacterLimit, aVeryLongCatalogueKeyThatCertainlyGoesBeyondTheSixtyThreeCharacterLimitToo]
`},
		{id: "name-never-from-digest", yaml: `images:
  "": {reference: "registry.lab.internal/team/metadata-broker@sha256:7b868470f7b63d9da10a788d26abf4c076f90dc4c7de24d1298a8160c9a3dcc9"}
  "---": {reference: "registry.lab.internal/team/metadata-broker@sha256:8b868470f7b63d9da10a788d26abf4c076f90dc4c7de24d1298a8160c9a3dcc9"}
profiles:
  p:
    pullers:
    - {name: pre, namespace: ns, images: ["", "---"]}
`},
		{id: "same-name-two-images",
			yaml: envYAML("jupyter=apache/submarine:jupyter-notebook-0.7.0") + profileYAML("jupyter"),
			cue:  "environments: jupyter: image: \"apache/submarine:jupyter-notebook-0.7.0-chinese\"\n"},
		// auth cases
		{id: "password-special-chars", yaml: `environments:
  app:
    image: harbor.lab.internal:5000/team/app:1
    auth: {username: "robot$ci", password: "env:HARBOR_PASSWORD"}
` + profileYAML("app")},
		{id: "docker-hub-key", yaml: `environments:
  app:
    image: docker.io/someone/app:1
    auth: {username: someone, password: "env:HUB_TOKEN"}
` + profileYAML("app")},
		{id: "username-with-colon", yaml: `environments:
  app:
    image: harbor.lab.internal/team/app:1
    auth: {username: "team:robot", password: "env:P"}
` + profileYAML("app")},
		{id: "inline-password", yaml: `environments:
  app:
    image: harbor.lab.internal/team/app:1
    auth: {username: u, password: literal-secret}
` + profileYAML("app")},
		{id: "inline-password-allowed", literal: true, yaml: `environments:
  app:
    image: harbor.lab.internal/team/app:1
    auth: {username: u, password: literal-secret}
` + profileYAML("app")},
		{id: "missing-env", yaml: `environments:
  app:
    image: harbor.lab.internal/team/app:1
    auth: {username: u, password: "env:NOT_SET_ANYWHERE"}
` + profileYAML("app")},
		{id: "password-file", yaml: `environments:
  app:
    image: harbor.lab.internal/team/app:1
    auth: {username: u, password: "file:secrets/harbor"}
` + profileYAML("app")},
		{id: "existing-secret", yaml: `environments:
  app:
    image: harbor.lab.internal/team/app:1
    auth: {secret: harbor-pull}
` + profileYAML("app")},
		{id: "two-registries-one-puller", yaml: `environments:
  a:
    image: harbor.lab.internal:5000/team/a:1
    auth: {username: a, password: "env:A"}
  b:
    image: quay.example.org/team/b:1
    auth: {username: b, password: "env:B"}
` + profileYAML("a", "b")},
		{id: "secrets-reference", yaml: `environments:
  a:
    image: harbor.lab.internal:5000/team/a:1
    auth: {username: a, password: "env:A"}
profiles:
  p:
    secrets: reference
    pullers: [{name: pre, namespace: ns, environments: [a]}]
`},
		// render cases
		{id: "empty-puller", yaml: "profiles:\n  p:\n    pullers:\n    - {name: notebooks, namespace: submarine, environments: []}\n"},
		{id: "bad-namespace", yaml: envYAML("app=busybox:1") + "profiles:\n  p:\n    pullers:\n    - {name: notebooks, namespace: Tenant_A, environments: [app]}\n"},
		{id: "bad-node-selector-key", yaml: `environments:
  jupyter-gpu:
    image: apache/submarine:jupyter-notebook-gpu-0.7.0
    nodeSelector: {"gpu type": a100}
` + profileYAML("jupyter-gpu")},
		{id: "refresh-hours-string", yaml: envYAML("app=busybox:1") + "profiles:\n  p:\n    pullers:\n    - {name: pre, namespace: ns, environments: [app], refreshHours: \"2\"}\n"},
		{id: "refresh-hours-word", yaml: envYAML("app=busybox:1") + "profiles:\n  p:\n    pullers:\n    - {name: pre, namespace: ns, environments: [app], refreshHours: two}\n"},
		{id: "shell-less-image", yaml: envYAML("sidekick=ghcr.io/example-org/sidekick:v3.0.4") + profileYAML("sidekick")},
		{id: "placement", yaml: `environments:
  cpu: {image: "busybox:1"}
  gpu:
    image: "nvidia/cuda:12.0"
    platforms: [linux/amd64]
    nodeSelector: {nvidia.com/gpu.present: "true"}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  arm:
    image: "busybox:2"
    platforms: [linux/arm64, linux/s390x]
    tolerations: [{key: k, operator: Equal, value: v, effect: NoExecute, tolerationSeconds: 30}]
profiles:
  p:
    resources: {requests: {cpu: 2m, memory: 20Mi}, limits: {cpu: 1, memory: 64Mi}}
    pullers:
    - name: pre
      namespace: ns
      environments: [gpu, cpu, arm]
      nodeSelector: {kubernetes.io/os: linux}
      priorityClassName: system-node-critical
      resources: {limits: {memory: 33554432}}
`},
		{id: "order-independence", yaml: `environments:
  b: {image: "busybox:1"}
  a: {image: "alpine:3"}
profiles:
  p:
    pullers:
    - {name: two, namespace: ns, environments: [b, a]}
    - {name: one, namespace: ns, environments: [a, b]}
`},
		// openpai cases
		{id: "keep-typo", yaml: "profiles:\n  p:\n    openpai: {version: v1.5.0, keep: [rest-sever], registry: {tag: v1.5.0}}\n"},
		{id: "drop-required", yaml: "profiles:\n  p:\n    openpai: {version: v1.5.0, keep: [rest-server], drop: [postgresql], registry: {tag: v1.5.0}}\n"},
		{id: "unsupported-version", yaml: "profiles:\n  p:\n    openpai: {version: v1.8.0, registry: {tag: v1.8.0}}\n"},
		{id: "minimal-job-submission", yaml: `profiles:
  p:
    openpai: {version: v1.5.0, features: [job-submission, webportal], registry: {tag: v1.5.0}}
    pullers: [{name: pai, namespace: pai, openpai: [master, worker]}]
`},
		{id: "cache-unknown-os", yaml: "profiles:\n  p:\n    packageCache: [{group: ssh, os: ubuntu20.04, packages: [openssh-client]}]\n"},
		{id: "cache-fourth-column", yaml: "profiles:\n  p:\n    packageCache: [{group: ssh, os: ubuntu18.04, packages: [openssh-client, openssh-server], command: apt-get update}]\n"},
		{id: "cache-duplicate-row", yaml: "profiles:\n  p:\n    packageCache:\n    - {group: nfs, os: ubuntu18.04, packages: [nfs-common]}\n    - {group: nfs, os: ubuntu18.04, packages: [nfs-common]}\n"},
		{id: "cache-bad-package-name", yaml: "profiles:\n  p:\n    packageCache: [{group: ssh, os: ubuntu18.04, packages: [openssh client]}]\n"},
		{id: "cache-rows", yaml: "profiles:\n  p:\n    packageCache:\n    - {group: ssh, os: ubuntu18.04, packages: [openssh-client]}\n    - {group: nfs, os: ubuntu16.04, packages: [nfs-common]}\n"},
	}
}()

// exampleSeed is an example config as one CUE and one YAML file.
type exampleSeed struct {
	name      string
	cue, yaml []byte
}

// exampleSeeds reads the examples' config directories (their .cue files
// joined as one, their .yaml files as another).
func exampleSeeds(tb testing.TB) []exampleSeed {
	tb.Helper()
	var out []exampleSeed
	for _, dir := range []string{"openpai-offline", "submarine-notebooks", "gpu-platform", "gitops-flux/config"} {
		files, err := schema.ReadDir(filepath.Join("..", "..", "examples", dir))
		if err != nil {
			tb.Fatal(err)
		}
		s := exampleSeed{name: strings.ReplaceAll(dir, "/", "-")}
		for _, f := range files {
			switch filepath.Ext(f.Name) {
			case ".cue":
				if len(s.cue) > 0 {
					// One package clause for the joined file.
					f.Data = bytes.Replace(f.Data, []byte("package stowage"), nil, 1)
				}
				s.cue = append(s.cue, f.Data...)
			default:
				if len(s.yaml) > 0 {
					tb.Fatalf("%s: more than one YAML file; the seed reader joins only CUE files", dir)
				}
				s.yaml = f.Data
			}
		}
		out = append(out, s)
	}
	return out
}

// corpusFile is a file of a Go fuzz corpus holding values, encoded as
// `go test fuzz v1` writes them.
func corpusFile(values ...any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		case bool:
			fmt.Fprintf(&b, "bool(%v)\n", v)
		case uint8:
			fmt.Fprintf(&b, "byte(%s)\n", strconv.QuoteRune(rune(v)))
		default:
			panic(fmt.Sprintf("corpus value %T", v))
		}
	}
	return []byte(b.String())
}

// TestWriteSeedCorpus rewrites the seed-* corpus files (with -write-seeds;
// otherwise it checks that they are up to date).
func TestWriteSeedCorpus(t *testing.T) {
	want := map[string][]byte{}
	put := func(dir, id string, values ...any) {
		want[filepath.Join(dir, "seed-"+id)] = corpusFile(values...)
	}
	render := func(fuzzer string) string { return filepath.Join("testdata", "fuzz", fuzzer) }
	loader := filepath.Join("..", "..", "schema", "testdata", "fuzz", "FuzzLoadFiles")
	for _, c := range seedConfigs {
		put(render("FuzzRender"), c.id, []byte(c.cue), []byte(c.yaml), c.literal)
		// The loader's kinds byte: bits 0-1 the first file's extension
		// (.yaml), bits 2-3 the second's (.cue), bit 4 literal passwords.
		kinds := uint8(0 | 1<<2)
		if c.literal {
			kinds |= 1 << 4
		}
		put(loader, c.id, []byte(c.yaml), []byte(c.cue), kinds)
	}
	for _, s := range exampleSeeds(t) {
		put(render("FuzzRender"), "example-"+s.name, s.cue, s.yaml, false)
		put(loader, "example-"+s.name, s.yaml, s.cue, uint8(0|1<<2))
	}
	// Container names: the reference and container-name cases.
	names := render("FuzzContainerNames")
	put(names, "docker-hub-spellings",
		"short", "nvidia/k8s-device-plugin:1.0.0-beta4", "docker", "docker.io/nvidia/k8s-device-plugin:1.0.0-beta4",
		"index", "index.docker.io/nvidia/k8s-device-plugin:1.0.0-beta4", "", "")
	put(names, "camel-key-and-long-refs",
		"myExtraImageIWantPulled", "ghcr.io/example-org/tool:2",
		"plugin", "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name:2.0",
		"plugin", "default-image-registry-openshift-image-registry.svc.cluster.local/my-project/my-plugin-with-a-rather-long-name-too:2.0",
		"ScreenApp", "registry.lab.internal:5000/team/app")
	put(names, "digest-only",
		"broker", "registry.lab.internal/team/metadata-broker@sha256:7b868470f7b63d9da10a788d26abf4c076f90dc4c7de24d1298a8160c9a3dcc9",
		"", "registry.lab.internal/team/metadata-broker@sha256:8b868470f7b63d9da10a788d26abf4c076f90dc4c7de24d1298a8160c9a3dcc9",
		"---", "busybox:1.31.1@sha256:1f3c66cf0f0e4c4da2f1d7c3f2b7d5b8e6a5c4f3e2d1c0b9a8f7e6d5c4b3a291",
		"jupyter", "apache/submarine:jupyter-notebook-0.7.0")
	put(names, "same-name-two-images",
		"jupyter", "apache/submarine:jupyter-notebook-0.7.0", "jupyter", "apache/submarine:jupyter-notebook-0.7.0-chinese",
		"jupyter-chinese", "apache/submarine:jupyter-notebook-0.7.0-chinese", "localhost:5000/svc:1.2", "localhost:5000/svc:1.2")
	// Docker config: the credential cases.
	dcj := render("FuzzDockerConfigJSON")
	put(dcj, "password-special-chars", "harbor.lab.internal:5000", "robot$ci", []byte("[p~a_s.s>w=o\"r%d;\\"), "")
	put(dcj, "docker-hub-key", "https://index.docker.io/v1/", "someone", []byte("hub-token"), "")
	put(dcj, "username-with-colon", "harbor.lab.internal", "team:robot", []byte("p"), "")
	put(dcj, "two-registries-one-puller", "quay.example.org", "b", []byte("B"), "b@example.org")

	for path, data := range want {
		if *writeSeeds {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(have, data) {
			t.Errorf("%s is not up to date (go test ./internal/render -run TestWriteSeedCorpus -write-seeds): %v", path, err)
		}
	}
}
