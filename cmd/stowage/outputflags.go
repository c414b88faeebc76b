package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The output conventions of every command (docs/conventions.md):
//
//   - -o/--output is a format: text and json on every command
//     that prints a report, yaml for the manifests render prints;
//   - a destination has a flag of its own: render --output-dir (-d),
//     openpai package-cache --output-file, bump --pr-body and --render;
//   - "-" is stdout where the destination is one stream (--output-file),
//     and refused where it cannot be (a directory, bump's --pr-body
//     beside the report stdout already carries).
//
// Before these conventions, render -o and package-cache -o named the
// destination; a value of -o that is no format is still read so, with a
// note on stderr (pathAlias).

// formatAlias reads -o table, the spelling mirror, status and openpai
// services had before every command named its human-readable format text,
// as text; it is accepted for the scripts that say it and documented
// nowhere else. Every other value is returned unchanged.
func formatAlias(format string) string {
	if format == "table" {
		return "text"
	}
	return format
}

// stdoutName is the path that means stdout.
const stdoutName = "-"

// pathAlias reads a deprecated -o PATH: when value is none of formats, it
// is the destination that newFlag now names, and a note saying so goes to
// stderr. It returns the path ("" when value is a format) and an error
// when value is "-" or newFlag was given too.
func pathAlias(stderr io.Writer, cmd, value, newFlag string, newGiven bool, formats []string) (string, error) {
	if slices.Contains(formats, value) {
		return "", nil
	}
	if value == stdoutName {
		return "", usageError{fmt.Errorf("-o %s: -o is the output format (%s); %s writes to stdout by default", value, strings.Join(formats, ", "), cmd)}
	}
	if isFormatName(value) {
		has := orList(formats)
		if strings.Contains(value, "=") {
			return "", usageError{fmt.Errorf("-o %s: %s prints %s (the -o formats it has)", value, cmd, has)}
		}
		return "", usageError{fmt.Errorf("-o %s: %s prints %s (the -o formats it has); to write to a path of that name, say %s ./%s", value, cmd, has, newFlag, value)}
	}
	if newGiven {
		return "", usageError{fmt.Errorf("-o %s and %s together: -o is the output format (%s); give the destination with %s alone", value, newFlag, strings.Join(formats, ", "), newFlag)}
	}
	fmt.Fprintf(stderr, "stowage: %s -o PATH is deprecated; say %s %s (-o is the output format: %s)\n", cmd, newFlag, value, strings.Join(formats, ", "))
	return value, nil
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// refuseStdout is the error for "-" given to a path flag whose output
// cannot be a stream; why says what to do instead.
func refuseStdout(flag, value, why string) error {
	if value != stdoutName {
		return nil
	}
	return usageError{fmt.Errorf("%s -: %s", flag, why)}
}

// checkFormat refuses a format that is not one of formats, naming flag.
func checkFormat(flag, value string, formats ...string) error {
	if slices.Contains(formats, value) {
		return nil
	}
	return usageError{fmt.Errorf("%s %q: want %s", flag, value, orList(formats))}
}
