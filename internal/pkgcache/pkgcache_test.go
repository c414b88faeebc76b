package pkgcache

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// errorsOf returns the errors joined in err, flattened.
func errorsOf(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, errorsOf(e)...)
		}
		return out
	}
	return []error{err}
}

// rowErrors returns the *RowError values joined in err; anything else fails t.
func rowErrors(t *testing.T, err error) []*RowError {
	t.Helper()
	var out []*RowError
	for _, e := range errorsOf(err) {
		var re *RowError
		if !errors.As(e, &re) {
			t.Fatalf("unexpected %T: %v", e, e)
		}
		out = append(out, re)
	}
	return out
}

func assertContains(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q lacks %q", msg, p)
		}
	}
}

// Case cache-unknown-os.
func TestCaseCacheUnknownOS(t *testing.T) {
	t.Parallel()
	errs := rowErrors(t, Validate([]Row{{Group: "ssh", OS: "ubuntu20.04", Packages: []string{"openssh-client"}}}))
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
	}
	e := errs[0]
	if e.Index != 0 || e.Field != "os" || e.PackageIndex != -1 {
		t.Errorf("error = %+v, want Index 0, Field os, PackageIndex -1", *e)
	}
	assertContains(t, e.Error(), "ubuntu20.04", "ubuntu16.04", "ubuntu18.04")
}

// Case cache-fourth-column.
func TestCaseCacheFourthColumn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		line     string
		trailing bool
	}{
		{"precommand", "ssh,ubuntu18.04,openssh-client openssh-server,apt-get update", false},
		{"empty trailing column of the PR #4222 examples", "nfs,ubuntu18.04,nfs-common,", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := Parse(strings.NewReader("# old file\n"+tc.line+"\n"), "package_cache_info")
			if rows != nil {
				t.Errorf("rows = %v, want nil", rows)
			}
			var ce *ColumnError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v, want *ColumnError", err)
			}
			want := ColumnError{File: "package_cache_info", Line: 2, Columns: 4, TrailingComma: tc.trailing}
			if *ce != want {
				t.Errorf("error = %+v, want %+v", *ce, want)
			}
			assertContains(t, ce.Error(), "package_cache_info:2:", "the OpenPAI v1.5.0 package_cache_info format has three columns (group,os,packages)")
		})
	}
}

// Case cache-duplicate-row.
func TestCaseCacheDuplicateRow(t *testing.T) {
	t.Parallel()
	row := Row{Group: "nfs", OS: "ubuntu18.04", Packages: []string{"nfs-common"}}
	errs := rowErrors(t, Validate([]Row{row, row}))
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
	}
	if errs[0].Index != 1 || errs[0].Field != "group" {
		t.Errorf("error = %+v, want Index 1, Field group", *errs[0])
	}
	assertContains(t, errs[0].Error(), `"nfs"`, `"ubuntu18.04"`, "rows[0]", "rows[1]")
}

// Case cache-bad-package-name.
func TestCaseCacheBadPackageName(t *testing.T) {
	t.Parallel()
	errs := rowErrors(t, Validate([]Row{{Group: "ssh", OS: "ubuntu18.04", Packages: []string{"openssh client"}}}))
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
	}
	if e := errs[0]; e.Index != 0 || e.Field != "packages" || e.PackageIndex != 0 {
		t.Errorf("error = %+v, want Index 0, Field packages, PackageIndex 0", *e)
	}
	assertContains(t, errs[0].Error(), `"openssh client"`, "Debian package names have no spaces or upper case")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	type want struct {
		index int
		field string
		pkg   int
	}
	ok := []string{"openssh-client"}
	tests := []struct {
		name string
		rows []Row
		want []want
	}{
		{"shipped rows", ShippedRows(), nil},
		{"no rows", nil, nil},
		{"policy characters", []Row{{"gpu", "ubuntu18.04", []string{"libstdc++6", "python3.6", "g++", "xz-utils", "r8"}}}, nil},
		{"group with underscore", []Row{{"team_storage-2", "ubuntu16.04", ok}}, nil},
		{"upper-case package", []Row{{"ssh", "ubuntu18.04", []string{"openssh-client", "OpenSSH-Server"}}}, []want{{0, "packages", 1}}},
		{"one-character package", []Row{{"ssh", "ubuntu18.04", []string{"a"}}}, []want{{0, "packages", 0}}},
		{"package starting with '-'", []Row{{"ssh", "ubuntu18.04", []string{"-y"}}}, []want{{0, "packages", 0}}},
		{"version pin", []Row{{"ssh", "ubuntu18.04", []string{"openssh-client=1:7.6p1-4"}}}, []want{{0, "packages", 0}}},
		{"architecture qualifier", []Row{{"ssh", "ubuntu18.04", []string{"openssh-client:amd64"}}}, []want{{0, "packages", 0}}},
		{"empty package", []Row{{"ssh", "ubuntu18.04", []string{""}}}, []want{{0, "packages", 0}}},
		{"no packages", []Row{{"ssh", "ubuntu18.04", nil}}, []want{{0, "packages", -1}}},
		{"empty group", []Row{{"", "ubuntu18.04", ok}}, []want{{0, "group", -1}}},
		{"upper-case group", []Row{{"SSH", "ubuntu18.04", ok}}, []want{{0, "group", -1}}},
		{"group with a dot", []Row{{"ssh.v2", "ubuntu18.04", ok}}, []want{{0, "group", -1}}},
		{"group with a slash", []Row{{"../ssh", "ubuntu18.04", ok}}, []want{{0, "group", -1}}},
		{"os spelled differently", []Row{{"ssh", "Ubuntu18.04", ok}}, []want{{0, "os", -1}}},
		{"os with a space", []Row{{"ssh", " ubuntu18.04", ok}}, []want{{0, "os", -1}}},
		{"centos", []Row{{"ssh", "centos7", ok}}, []want{{0, "os", -1}}},
		{"same group, other os", []Row{{"ssh", "ubuntu16.04", ok}, {"ssh", "ubuntu18.04", ok}}, nil},
		{"duplicate after another row", []Row{{"ssh", "ubuntu16.04", ok}, {"nfs", "ubuntu16.04", ok}, {"ssh", "ubuntu16.04", ok}},
			[]want{{2, "group", -1}}},
		{"all problems at once", []Row{
			{"SSH", "ubuntu20.04", []string{"openssh client", "ok-pkg", "X"}},
			{"nfs", "ubuntu18.04", nil},
		}, []want{{0, "group", -1}, {0, "os", -1}, {0, "packages", 0}, {0, "packages", 2}, {1, "packages", -1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []want
			for _, e := range rowErrors(t, Validate(tc.rows)) {
				got = append(got, want{e.Index, e.Field, e.PackageIndex})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors = %v, want %v\n(%v)", got, tc.want, Validate(tc.rows))
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		row   Row
		parts []string
	}{
		{"upper case suggests lower case", Row{"ssh", "ubuntu18.04", []string{"OpenSSH-Client"}},
			[]string{"Debian package names have no spaces or upper case", `did you mean "openssh-client"?`}},
		{"os spelling suggestion", Row{"ssh", "Ubuntu 18.04", []string{"openssh-client"}},
			[]string{`"Ubuntu 18.04"`, `did you mean "ubuntu18.04"?`}},
		{"version pin explained", Row{"ssh", "ubuntu18.04", []string{"openssh-client=1:7.6p1-4"}},
			[]string{"version pins (=)", "dpkg -l"}},
		{"os with spaces explained", Row{"ssh", "ubuntu18.04 ", []string{"openssh-client"}},
			[]string{"spaces around it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := rowErrors(t, Validate([]Row{tc.row}))
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
			}
			assertContains(t, errs[0].Error(), tc.parts...)
		})
	}
}

// shippedGolden is package_cache_info as stowage writes the rows shipped
// with OpenPAI v1.5.0: sorted by group then os.
const shippedGolden = `# group_name, os, packages(space-gapped)
azurefile,ubuntu16.04,cifs-utils sshpass
azurefile,ubuntu18.04,cifs-utils sshpass
nfs,ubuntu16.04,nfs-common
nfs,ubuntu18.04,nfs-common
samba,ubuntu16.04,cifs-utils
samba,ubuntu18.04,cifs-utils
ssh,ubuntu16.04,openssh-client openssh-server
ssh,ubuntu18.04,openssh-client openssh-server
`

func TestFormatShippedRows(t *testing.T) {
	t.Parallel()
	if got := Format(ShippedRows()); got != shippedGolden {
		t.Errorf("Format(ShippedRows()) =\n%s\nwant\n%s", got, shippedGolden)
	}
}

func TestFormatKeepsPackageOrderAndInput(t *testing.T) {
	t.Parallel()
	rows := []Row{
		{"ssh", "ubuntu18.04", []string{"openssh-server", "openssh-client"}},
		{"nfs", "ubuntu18.04", []string{"nfs-common"}},
		{"ssh", "ubuntu16.04", []string{"openssh-server", "openssh-client"}},
	}
	before := []Row{rows[0], rows[1], rows[2]}
	want := Header + "\n" +
		"nfs,ubuntu18.04,nfs-common\n" +
		"ssh,ubuntu16.04,openssh-server openssh-client\n" +
		"ssh,ubuntu18.04,openssh-server openssh-client\n"
	if got := Format(rows); got != want {
		t.Errorf("Format =\n%s\nwant\n%s", got, want)
	}
	if !reflect.DeepEqual(rows, before) {
		t.Errorf("Format reordered its input: %v", rows)
	}
	if got := Format(nil); got != Header+"\n" {
		t.Errorf("Format(nil) = %q, want the header line only", got)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	rows := append(ShippedRows(), Row{"gpu-tools", "ubuntu18.04", []string{"pciutils", "libstdc++6", "g++"}})
	text := Format(rows)
	got, err := Parse(strings.NewReader(text), "package_cache_info")
	if err != nil {
		t.Fatalf("Parse(Format(rows)): %v", err)
	}
	if again := Format(got); again != text {
		t.Errorf("Format(Parse(Format(rows))) =\n%s\nwant\n%s", again, text)
	}
	want := []Row{
		{"azurefile", "ubuntu16.04", []string{"cifs-utils", "sshpass"}},
		{"azurefile", "ubuntu18.04", []string{"cifs-utils", "sshpass"}},
		{"gpu-tools", "ubuntu18.04", []string{"pciutils", "libstdc++6", "g++"}},
		{"nfs", "ubuntu16.04", []string{"nfs-common"}},
		{"nfs", "ubuntu18.04", []string{"nfs-common"}},
		{"samba", "ubuntu16.04", []string{"cifs-utils"}},
		{"samba", "ubuntu18.04", []string{"cifs-utils"}},
		{"ssh", "ubuntu16.04", []string{"openssh-client", "openssh-server"}},
		{"ssh", "ubuntu18.04", []string{"openssh-client", "openssh-server"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %v\nwant %v", got, want)
	}
}

func TestParseShippedFile(t *testing.T) {
	t.Parallel()
	// package_cache_info as merged in PR #4226, in its own order.
	const shipped = "# group_name, os, packages(space-gapped)\n" +
		"# \"#\" can be used for comments\n" +
		"ssh,ubuntu16.04,openssh-client openssh-server\n" +
		"ssh,ubuntu18.04,openssh-client openssh-server\n" +
		"nfs,ubuntu16.04,nfs-common\n" +
		"nfs,ubuntu18.04,nfs-common\n" +
		"samba,ubuntu16.04,cifs-utils\n" +
		"samba,ubuntu18.04,cifs-utils\n" +
		"azurefile,ubuntu16.04,cifs-utils sshpass\n" +
		"azurefile,ubuntu18.04,cifs-utils sshpass" // no final newline
	got, err := Parse(strings.NewReader(shipped), "package_cache_info")
	if err != nil {
		t.Fatal(err)
	}
	if want := ShippedRows(); !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %v\nwant %v", got, want)
	}
}

func TestParseLenient(t *testing.T) {
	t.Parallel()
	// What the shell reading in ubuntu_build.sh also accepts: blank lines,
	// indented comments and rows, CRLF, several blanks between packages.
	in := "\r\n  # indented comment\r\n\tssh,ubuntu18.04,openssh-client   openssh-server \r\n\n"
	got, err := Parse(strings.NewReader(in), "f")
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{{"ssh", "ubuntu18.04", []string{"openssh-client", "openssh-server"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %v, want %v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		"# header",
		"ssh,ubuntu18.04,openssh-client",   // line 2
		"ssh,ubuntu18.04",                  // line 3: two columns
		"nfs,ubuntu20.04,nfs-common",       // line 4: unknown os
		"samba,ubuntu18.04,cifs-utils,",    // line 5: trailing comma
		"ssh,ubuntu18.04,openssh-server",   // line 6: duplicate of line 2
		"azurefile,ubuntu18.04,CIFS-utils", // line 7: upper case
	}, "\n")
	rows, err := Parse(strings.NewReader(in), "cache.txt")
	if rows != nil {
		t.Errorf("rows = %v, want nil", rows)
	}
	type got struct {
		line  int
		kind  string
		field string
	}
	var all []got
	for _, e := range errorsOf(err) {
		var ce *ColumnError
		var re *RowError
		switch {
		case errors.As(e, &ce):
			all = append(all, got{ce.Line, "columns", ""})
		case errors.As(e, &re):
			if re.File != "cache.txt" {
				t.Errorf("RowError.File = %q", re.File)
			}
			all = append(all, got{re.Line, "row", re.Field})
		default:
			t.Errorf("unexpected %T: %v", e, e)
		}
	}
	want := []got{{3, "columns", ""}, {4, "row", "os"}, {5, "columns", ""}, {6, "row", "group"}, {7, "row", "packages"}}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("errors = %v\nwant %v\n(%v)", all, want, err)
	}
	// The duplicate names the line of the first definition.
	assertContains(t, err.Error(), "cache.txt:6: group:", "cache.txt:2", "cache.txt:3: 2 columns")
}
