package pkgcache

import "github.com/stowage/stowage/api/v1alpha1"

// RowsOf returns a profile's packageCache rows as Rows.
func RowsOf(rows []v1alpha1.PackageCacheRow) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{Group: r.Group, OS: r.OS, Packages: r.Packages}
	}
	return out
}
