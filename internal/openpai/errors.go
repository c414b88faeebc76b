package openpai

import (
	"fmt"
	"strings"
)

// UnsupportedVersionError reports an OpenPAI version stowage has no graph for.
type UnsupportedVersionError struct {
	// Version is the version asked for, as written.
	Version string
	// Supported is SupportedVersions().
	Supported []string
}

// Error names the version and lists the supported ones.
func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("OpenPAI version %q is not supported; supported versions: %s",
		e.Version, strings.Join(e.Supported, ", "))
}

// UnknownError reports a name in a Selection that is not a service (Kind
// "service", in Field "keep" or "drop") or not a feature (Kind "feature", in
// Field "features") of the selected OpenPAI version. Index is the position
// of Name in that list, so the caller can point at it in the user's file.
type UnknownError struct {
	Kind  string
	Field string
	Index int
	Name  string
	// Version is the OpenPAI version the name was checked against.
	Version string
	// Suggestion is the nearest known name by edit distance, "" when none
	// is reasonably close.
	Suggestion string
	// Reason, when set, explains why a name that exists elsewhere is not
	// accepted here (a yarn-only service, a feature given as a service).
	Reason string
}

// Error names the unknown name, the version and kind, and any suggestion.
func (e *UnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q is not an OpenPAI %s %s", e.Name, e.Version, e.Kind)
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %q?", e.Suggestion)
	}
	return b.String()
}

// RequiredError reports a service in Selection.Drop (Field "drop", position
// Index) that the kept services need. Chain runs from a kept root to Name
// over prerequisites, shortest first with ties broken by name; RequiredBy is
// Chain[0]. When Name is itself a root, Chain is [Name].
type RequiredError struct {
	Field      string
	Index      int
	Name       string
	RequiredBy string
	Chain      []string
	// Feature is the feature whose roots include RequiredBy, or "" when
	// RequiredBy is kept because Selection.Keep lists it.
	Feature string
}

// Error names the service, the kept root that needs it and the chain.
func (e *RequiredError) Error() string {
	origin := "it is listed in keep"
	if e.Feature != "" {
		origin = fmt.Sprintf("it is a root of feature %q", e.Feature)
	}
	if len(e.Chain) <= 1 {
		return fmt.Sprintf("cannot drop %q: %s", e.Name, origin)
	}
	if e.Feature == "" {
		origin = e.RequiredBy + " is listed in keep"
	} else {
		origin = fmt.Sprintf("%s is a root of feature %q", e.RequiredBy, e.Feature)
	}
	return fmt.Sprintf("cannot drop %q: required by %s (%s); %s",
		e.Name, e.RequiredBy, strings.Join(e.Chain, " -> "), origin)
}

// EmptySelectionError reports a Selection with no features and no kept
// services: there is nothing to reduce to.
type EmptySelectionError struct {
	// Features lists the feature names one could choose from.
	Features []string
}

// Error says the selection is empty and lists the features.
func (e *EmptySelectionError) Error() string {
	return "OpenPAI selection is empty: list at least one feature (" +
		strings.Join(e.Features, ", ") + ") or a service under keep"
}
