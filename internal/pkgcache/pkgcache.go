// Package pkgcache reads, checks and writes package_cache_info, the list of
// apt package groups that the OpenPAI runtime image caches for offline
// installs (microsoft/pai PR #4226, merged as c4b7e878; since PR #4311 in
// microsoft/openpai-runtime at package_cache/package_cache_info).
//
// The format is one row per line, three comma-separated columns
// group_name,os,packages, packages separated by spaces; lines starting with
// "#" are comments. package_cache/ubuntu_build.sh builds one directory
// /package_cache/<group>-<os> per row for the OS it runs on, and
// runtime.d/install_group.sh <group> installs from it, falling back to
// apt-get when the cache is missing or incomplete.
package pkgcache

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// Row is one line of package_cache_info: a group of Debian packages cached
// for one OS. Plugins install a whole group at once
// (plugins/plugin_utils.py try_to_install_by_cache(group, fallback_cmds)).
type Row struct {
	// Group names the group; the cache directory is <Group>-<OS>.
	Group string
	// OS is one of SupportedOS.
	OS string
	// Packages are Debian binary package names, in the order written.
	Packages []string
}

// SupportedOS lists the values accepted by install_group.sh in v1.5.0:
// ubuntu16.04, ubuntu18.04. The script detects them by grepping /etc/issue
// for "Ubuntu 16.04" and "Ubuntu 18.04" and has no other case; the runtime
// Dockerfile builds a cache stage for each.
var SupportedOS = []string{"ubuntu16.04", "ubuntu18.04"}

// ShippedRows returns the rows of package_cache_info as shipped with the
// OpenPAI v1.5.0 runtime (openpai-runtime v0.1.9), in file order: ssh, nfs,
// samba and azurefile, each for ubuntu16.04 and ubuntu18.04. The callers are
// the ssh plugin (ssh) and teamwise_storage (nfs, samba, azurefile).
func ShippedRows() []Row {
	var rows []Row
	for _, g := range []struct {
		group    string
		packages []string
	}{
		{"ssh", []string{"openssh-client", "openssh-server"}},
		{"nfs", []string{"nfs-common"}},
		{"samba", []string{"cifs-utils"}},
		{"azurefile", []string{"cifs-utils", "sshpass"}},
	} {
		for _, os := range SupportedOS {
			rows = append(rows, Row{Group: g.group, OS: os, Packages: slices.Clone(g.packages)})
		}
	}
	return rows
}

// RowError is one problem with one row. Field is "group", "os" or
// "packages"; PackageIndex is the position in Row.Packages of the package
// at fault, or -1 when the problem is not about one package. Index is the
// position of the row in the slice given to Validate, or among the data
// rows of the file given to Parse, which also sets File and Line (1-based).
type RowError struct {
	File         string
	Line         int
	Index        int
	Field        string
	PackageIndex int
	Msg          string
}

// Error locates the problem ("file:line: field" or "rows[i].field", with
// "[k]" for a package) and states it.
func (e *RowError) Error() string {
	var where string
	if e.File != "" {
		where = fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Field)
	} else {
		where = fmt.Sprintf("rows[%d].%s", e.Index, e.Field)
	}
	if e.PackageIndex >= 0 {
		where += fmt.Sprintf("[%d]", e.PackageIndex)
	}
	return where + ": " + e.Msg
}

var (
	// groupRE: the group becomes the directory name <group>-<os> and a
	// shell word in install_group.sh, so stowage keeps it to lowercase
	// letters, digits, '_' and '-'.
	groupRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`) })
	// packageRE is the package name syntax of Debian Policy §5.6.1
	// (Source), which §5.6.7 (Package) applies to binary packages.
	packageRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`) })
)

// Validate checks rows and returns every problem at once, as an
// errors.Join of *RowError (nil when all rows are good):
//   - group: lowercase [a-z0-9][a-z0-9_-]* (it becomes the directory
//     name <group>-<os> that ubuntu_build.sh creates);
//   - os: one of SupportedOS; the message names the value and lists them;
//   - a (group, os) pair given twice: ubuntu_build.sh would write both rows
//     into the same directory and keep only the last package list; the
//     message names the group, the os and both rows;
//   - packages: at least one, and each a Debian package name (Debian
//     Policy §5.6.1, applied to binary packages by §5.6.7: lowercase
//     letters, digits, '+', '-', '.'; at least two characters; starting
//     with a letter or digit). install_group.sh checks each entry with
//     dpkg -l, so version pins (pkg=1.0), architecture qualifiers
//     (pkg:amd64) and release selectors (pkg/bionic) are refused too.
func Validate(rows []Row) error {
	return ValidateAt(rows, func(i int) string { return fmt.Sprintf("rows[%d]", i) })
}

// ValidateAt is Validate for rows that the caller names its own way, such
// as a config's "packageCache[1]": where(i) names row i in the messages
// that refer to another row (a duplicate names the first one).
func ValidateAt(rows []Row, where func(i int) string) error {
	return errors.Join(validate(rows, where)...)
}

// validate returns the problems of rows; where names row i in messages
// that refer to another row.
func validate(rows []Row, where func(int) string) []error {
	var errs []error
	bad := func(i int, field string, pkg int, format string, args ...any) {
		errs = append(errs, &RowError{Index: i, Field: field, PackageIndex: pkg, Msg: fmt.Sprintf(format, args...)})
	}
	first := map[[2]string]int{}
	for i, r := range rows {
		switch {
		case r.Group == "":
			bad(i, "group", -1, "group name is empty")
		case !groupRE().MatchString(r.Group):
			bad(i, "group", -1, "%q is not a group name: use lowercase letters, digits, '_' and '-', starting with a letter or digit (the cache directory is <group>-<os>)", r.Group)
		}

		switch {
		case slices.Contains(SupportedOS, r.OS):
		case slices.Contains(SupportedOS, strings.TrimSpace(r.OS)):
			bad(i, "os", -1, "%q has spaces around it; ubuntu_build.sh compares the column as written and would skip the row", r.OS)
		default:
			msg := fmt.Sprintf("%q is not an OS the OpenPAI v1.5.0 package cache supports (install_group.sh knows only %s)",
				r.OS, strings.Join(SupportedOS, " and "))
			if s := osSuggestion(r.OS); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			bad(i, "os", -1, "%s", msg)
		}

		key := [2]string{r.Group, r.OS}
		if j, ok := first[key]; ok {
			bad(i, "group", -1, "group %q for os %q is already defined by %s; ubuntu_build.sh would build both into the directory %s-%s and keep only the last package list, so merge the packages into one row",
				r.Group, r.OS, where(j), r.Group, r.OS)
		} else {
			first[key] = i
		}

		if len(r.Packages) == 0 {
			bad(i, "packages", -1, "no packages: a group needs at least one package")
		}
		for k, p := range r.Packages {
			if msg := checkPackage(p); msg != "" {
				bad(i, "packages", k, "%s", msg)
			}
		}
	}
	return errs
}

// checkPackage returns why p is not a Debian package name, or "".
func checkPackage(p string) string {
	if packageRE().MatchString(p) {
		return ""
	}
	const rule = "(Debian Policy §5.6.1: lowercase letters, digits, '+', '-' and '.', at least 2 characters, starting with a letter or digit)"
	switch {
	case p == "":
		return "empty package name"
	case strings.IndexFunc(p, unicode.IsSpace) >= 0 || strings.ToLower(p) != p:
		msg := fmt.Sprintf("%q is not a Debian package name: Debian package names have no spaces or upper case %s", p, rule)
		if strings.IndexFunc(p, unicode.IsSpace) >= 0 {
			msg += "; list each package as its own entry"
		} else if packageRE().MatchString(strings.ToLower(p)) {
			msg += fmt.Sprintf("; did you mean %q?", strings.ToLower(p))
		}
		return msg
	case strings.ContainsAny(p, "=:/"):
		return fmt.Sprintf("%q is not a Debian package name %s; install_group.sh checks packages by name with dpkg -l, so version pins (=), architecture qualifiers (:) and release selectors (/) do not work", p, rule)
	default:
		return fmt.Sprintf("%q is not a Debian package name %s", p, rule)
	}
}

// osSuggestion maps spellings such as "Ubuntu18.04", "ubuntu-18.04" or
// "ubuntu 18.04" to the supported value, or returns "".
func osSuggestion(os string) string {
	squash := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' {
				return unicode.ToLower(r)
			}
			return -1
		}, s)
	}
	for _, s := range SupportedOS {
		if squash(os) == s {
			return s
		}
	}
	return ""
}

// Header is the comment line Format writes first: the column comment of
// the package_cache_info shipped with OpenPAI.
const Header = "# group_name, os, packages(space-gapped)"

// Format renders rows as a package_cache_info file: Header, then one
// "group,os,pkg1 pkg2" line per row, sorted by group then os, with each
// row's packages in the given order (ubuntu_build.sh computes the dpkg
// install order itself), and a trailing newline. Format does not check the
// rows; call Validate first.
func Format(rows []Row) string {
	sorted := slices.Clone(rows)
	sort.SliceStable(sorted, func(a, b int) bool {
		if sorted[a].Group != sorted[b].Group {
			return sorted[a].Group < sorted[b].Group
		}
		return sorted[a].OS < sorted[b].OS
	})
	var b strings.Builder
	b.WriteString(Header)
	b.WriteByte('\n')
	for _, r := range sorted {
		b.WriteString(r.Group)
		b.WriteByte(',')
		b.WriteString(r.OS)
		b.WriteByte(',')
		b.WriteString(strings.Join(r.Packages, " "))
		b.WriteByte('\n')
	}
	return b.String()
}
