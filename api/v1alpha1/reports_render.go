package v1alpha1

// RenderCheckReport is what `stowage render --check -o json|yaml` prints,
// on stdout also when render fails: the verdict, the directory compared,
// each file that differs, the entries of the directory stowage did not
// write (render --output-dir refuses it until they are moved), the unified
// diff printed on stderr (empty when no file changed; never a Secret's
// lines), and every other error with its place. Lists are sorted by file
// name and present, empty when there is nothing to list.
type RenderCheckReport struct {
	// OK is true when the directory holds what render writes.
	OK bool `json:"ok"`
	// Dir is the directory compared (--output-dir).
	Dir string `json:"dir"`
	// Changed are the files that differ.
	Changed []FileDiff `json:"changed"`
	// Foreign are the entries of Dir stowage did not write.
	Foreign []string `json:"foreign"`
	// Diff is the bounded unified diff of the changed files.
	Diff string `json:"diff"`
	// Errors are the problems that stopped the check, each with its place.
	Errors []ReportError `json:"errors"`
}

// NewRenderCheckReport is the report of a check of dir before anything is
// known: every list present and empty.
func NewRenderCheckReport(dir string) *RenderCheckReport {
	return &RenderCheckReport{Dir: dir, Changed: []FileDiff{}, Foreign: []string{}, Errors: []ReportError{}}
}

// FileDiff is one file of an output directory that differs from what
// render writes: Status is "changed" (both have it, with other bytes),
// "missing" (only the rendering has it) or "extra" (only the directory
// has it).
type FileDiff struct {
	File   string `json:"file"`
	Status string `json:"status"`
}

// String is the difference worded "STATUS FILE".
func (d FileDiff) String() string { return d.Status + " " + d.File }
