package source

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
)

// TestReportErrors: a lock's problems, joined and wrapped, are one report
// error each, with the entry's field from the document root; any other
// error is one report error holding its message.
func TestReportErrors(t *testing.T) {
	entry := &lock.Error{File: "l.yaml", Line: 9, Index: 2, Field: "digest", Err: errors.New("not a digest")}
	doc := &lock.Error{File: "l.yaml", Line: 3, Column: 4, Index: -1, Field: "spec", Err: errors.New("missing")}
	whole := &lock.Error{File: "l.yaml", Line: 5, Index: 0, Err: errors.New("duplicate")}
	err := fmt.Errorf("reading the lock: %w", errors.Join(entry, doc, whole))
	want := []v1alpha1.ReportError{
		{File: "l.yaml", Line: 9, Field: "spec.images[2].digest", Message: entry.Error()},
		{File: "l.yaml", Line: 3, Column: 4, Field: "spec", Message: doc.Error()},
		{File: "l.yaml", Line: 5, Field: "spec.images[0]", Message: whole.Error()},
	}
	if got := ReportErrors(err); !reflect.DeepEqual(got, want) {
		t.Errorf("ReportErrors(lock errors) =\n%+v\nwant\n%+v", got, want)
	}
	if got, want := ReportErrors(errors.New("boom")), []v1alpha1.ReportError{{Message: "boom"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ReportErrors(boom) = %+v, want %+v", got, want)
	}
}
