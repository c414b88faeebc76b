package status

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteTableEscapes: what a hostile API server or kubelet puts in a
// node name, a reason, a message or a note reaches the table as escapes:
// no control character, no tab to break the columns, no bidirectional
// control; the rest of the row is as it was.
func TestWriteTableEscapes(t *testing.T) {
	t.Parallel()
	rep := &Report{
		Profile: "p",
		Images: []ImageStatus{{
			Name: "r.example/app:1", State: Failure, Digest: "sha256:" + strings.Repeat("a", 64),
			Message: "failed on node-\x1b]0;owned\x07",
			OnNodes: []NodeImage{{Node: "node-\x1b[2J\u202eevil", State: Failed, Reason: "ErrImagePull\t", Message: "pull \x1b[31mdenied\r\nfake row", DaemonSet: "ns/ds"}},
		}},
		DaemonSets: []Rollout{{Namespace: "ns", Name: "ds", Message: "rolling\u009b"}},
		Nodes:      []string{"node-\x1b[2J\u202eevil"},
		Sources:    Sources{Notes: []string{"events in namespace \x1b[1mns"}},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, raw := range []string{"\x1b", "\x07", "\u202e", "\r", "\u009b", "\t"} {
		if strings.Contains(out, raw) {
			t.Errorf("the table holds %q raw:\n%s", raw, out)
		}
	}
	for _, want := range []string{
		`node-\x1b[2J\u202eevil`,
		// The detail is one line (white space runs made one space) first.
		`ErrImagePull : pull \x1b[31mdenied fake row`,
		`failed on node-\x1b]0;owned\x07`,
		`rolling\u009b`,
		`note: events in namespace \x1b[1mns`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table does not show %q:\n%s", want, out)
		}
	}
}
