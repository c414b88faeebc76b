package status

import (
	"bytes"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/printer"
)

// TestPrintable: through the printer a status report prints, as json,
// the bytes escape.WriteJSON gives for the report itself (the bytes
// status -o json printed before the printer), as yaml the same document,
// and as text WriteTable's table.
func TestPrintable(t *testing.T) {
	t.Parallel()
	rep := &Report{Profile: "lab", Ready: false, Images: []ImageStatus{}, DaemonSets: []Rollout{}, Nodes: []string{"n1", "n\x1b2"},
		DiskBudget: []v1alpha1.DiskPool{}}
	var want, got bytes.Buffer
	if err := escape.WriteJSON(&want, rep); err != nil {
		t.Fatal(err)
	}
	if err := printer.Print(&got, "json", Printable{rep}); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("-o json:\n%s\nwant\n%s", got.String(), want.String())
	}
	want.Reset()
	got.Reset()
	if err := printer.WriteYAML(&want, rep); err != nil {
		t.Fatal(err)
	}
	if err := printer.Print(&got, "yaml", Printable{rep}); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || !bytes.Contains(got.Bytes(), []byte("profile: lab\n")) {
		t.Errorf("-o yaml:\n%s\nwant\n%s", got.String(), want.String())
	}
	want.Reset()
	got.Reset()
	if err := WriteTable(&want, rep); err != nil {
		t.Fatal(err)
	}
	if err := printer.Print(&got, "text", Printable{rep}); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || got.Len() == 0 {
		t.Errorf("-o text:\n%s\nwant\n%s", got.String(), want.String())
	}
}
