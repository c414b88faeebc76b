package openpai

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
)

// TestServicesReport: the report carries the reduction's services, the
// paictl command, each role's images from list beside the source
// references, and with a lock the bytes per role from its sizes (an index
// counts its platforms; an image without an entry is unlocked); an error
// of list is returned.
func TestServicesReport(t *testing.T) {
	t.Parallel()
	red, err := Reduce(Selection{Version: "v1.5.0", Features: []string{"job-submission", "webportal"}})
	if err != nil {
		t.Fatal(err)
	}
	master := red.Images[RoleMaster]
	if len(master) < 2 {
		t.Fatalf("master images %v, want two or more", master)
	}
	l := &lock.Lock{}
	for i, s := range master[:2] {
		r, err := imageref.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		e := lock.Entry{Name: r.Key(), Reference: s, Digest: "sha256:" + string(rune('a'+i)), Size: 100}
		if i == 1 {
			e.Size = 0
			e.Platforms = []v1alpha1.ImageLockPlatform{{Platform: "linux/amd64", Size: 30}, {Platform: "linux/arm64", Size: 20}}
		}
		l.Put(e)
	}
	rep, err := ServicesReport(red, func(r Role) ([]string, error) { return []string{"site/" + string(r)}, nil }, l)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Version != "v1.5.0" || !slices.Equal(rep.Kept, red.Kept) || rep.Paictl != "./paictl.py service start -n "+strings.Join(red.StartOrder, " ") {
		t.Errorf("report %+v does not carry the reduction", rep)
	}
	if got := rep.Images["worker"]; !slices.Equal(got, []string{"site/worker"}) || !slices.Equal(rep.SourceImages["master"], master) {
		t.Errorf("images %v, source images %v", rep.Images, rep.SourceImages)
	}
	if len(rep.Locked) != 3 || rep.Locked[0] != (v1alpha1.OpenPAIRoleLocked{Role: "master", Images: len(master), CompressedBytes: 150, Unlocked: len(master) - 2}) {
		t.Errorf("locked %+v, want master 150 bytes over %d images, %d unlocked", rep.Locked, len(master), len(master)-2)
	}
	if len(rep.Bytes) != 3 || rep.Bytes[0].Role != "master" || rep.Bytes[0].Saved != rep.Bytes[0].Full-rep.Bytes[0].Reduced {
		t.Errorf("bytes %+v", rep.Bytes)
	}
	boom := errors.New("boom")
	if _, err := ServicesReport(red, func(Role) ([]string, error) { return nil, boom }, nil); !errors.Is(err, boom) {
		t.Errorf("list's error: %v", err)
	}
	if rep, _ := ServicesReport(red, nil, nil); rep.Locked != nil || !slices.Equal(rep.Images["master"], master) {
		t.Errorf("without list and lock: images %v, locked %v", rep.Images["master"], rep.Locked)
	}
}
