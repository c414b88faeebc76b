package v1alpha1

import (
	"strings"
	"testing"
)

// TestMiscReportsWriteText: version prints its line, init its one line
// with the paths escaped, openpai services its tables with the images
// escaped and unknown sizes never read as small numbers.
func TestMiscReportsWriteText(t *testing.T) {
	var b strings.Builder
	if err := (VersionReport{Version: "v1", Line: "stowage v1 (abc, go1.25)"}).WriteText(&b); err != nil || b.String() != "stowage v1 (abc, go1.25)\n" {
		t.Errorf("version: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := (InitReport{Dir: "d\x1b", Files: []string{"d\x1b/config.cue", "d\x1b/stowage.lock.yaml"}}).WriteText(&b); err != nil ||
		b.String() != "wrote d\\x1b/config.cue and d\\x1b/stowage.lock.yaml; next: stowage lock d\\x1b && stowage vet d\\x1b\n" {
		t.Errorf("init: %q, %v", b.String(), err)
	}
	r := OpenPAIServicesReport{Version: "v1.5.0", Kept: []string{"pylon"}, Dropped: []string{"grafana"},
		KeptBy: map[string]OpenPAIKeptReason{"pylon": {Feature: "webportal", Chain: []string{"webportal", "pylon"}}},
		Paictl: "./paictl.py service start -n pylon", Images: map[string][]string{"master": {"reg\x1b/pylon:v1.5.0"}},
		Bytes: []OpenPAIRoleBytes{{Role: "master", Full: 2_500_000_000, Reduced: 1_000_000, Saved: 2_499_000_000, UnsizedFull: 1, UnsizedReduced: 0, UnsizedSaved: 1}}}
	b.Reset()
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OpenPAI v1.5.0: 1 service kept, 1 dropped\n", "pylon  feature webportal: webportal -> pylon\n",
		"  reg\\x1b/pylon:v1.5.0\n", "2.50GB + 1 unsized", "1.00MB", "?"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## OpenPAI v1.5.0: 1 service kept, 1 dropped\n", "| pylon | feature webportal: webportal -> pylon |\n", "- `reg\\x1b/pylon:v1.5.0`\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
}
