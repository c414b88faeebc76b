package imageref

import "testing"

// BenchmarkParse parses the spellings a config holds: Docker Hub short
// names, registries with ports, tags and digests.
func BenchmarkParse(b *testing.B) {
	refs := []string{
		"busybox",
		"apache/submarine:jupyter-notebook-0.7.0",
		"registry.bench.internal:5000/team-03/app-00042:v3",
		"ghcr.io/stowage/stowage-helper:v0.1.0@sha256:" + hex64,
		"registry.pai.lab.internal:5000/openpai/rest-server:v1.5.0",
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range refs {
			if _, err := Parse(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}
