package status

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/secret"
)

// TestReportScrubbed: a report whose node names, kubelet reasons and
// messages, DaemonSet messages and notes echo the API token (a hostile
// API server's objects) holds no spelling of it after Scrub, in the
// table and in JSON, and neither shows a control character raw.
func TestReportScrubbed(t *testing.T) {
	t.Parallel()
	const tok = "kube-token-canary-77e1"
	bad := func(s string) string { return s + " " + tok + " \x1b]0;t\x07 \u009b31m \u202e" }
	rep := &Report{
		Profile: "p",
		Images: []ImageStatus{{
			Name: "r/app:1", State: Failure, Message: bad("message"), Digest: "sha256:0123456789abcdef",
			Nodes: []string{bad("node-a")},
			OnNodes: []NodeImage{
				{Node: bad("node-a"), State: Failed, Reason: bad("ErrImagePull"), Message: bad("kubelet"), DaemonSet: "ns/ds"},
			},
		}},
		DaemonSets: []Rollout{{Namespace: "ns", Name: "ds", InCluster: true, Message: bad("rollout")}},
		Nodes:      []string{bad("node-a")},
		Sources:    Sources{Notes: []string{bad("note")}},
	}
	s := &secret.Set{}
	s.Add(tok)
	Scrub(rep, s.Scrub)
	var table, js bytes.Buffer
	if err := WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	if err := escape.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": table.String(), "json": js.String()} {
		for _, b := range []string{tok, "\x1b", "\x07", "\u009b", "\u202e"} {
			if strings.Contains(out, b) {
				t.Errorf("%s carries %q:\n%s", name, b, out)
			}
		}
		for _, want := range []string{"ErrImagePull ***", "kubelet ***", "rollout ***", "note ***", "node-a ***"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, out)
			}
		}
	}
}
