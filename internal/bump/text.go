package bump

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/words"
)

// ShortDigest is the length, in hex digits, of digests in titles and tables:
// the 12 that docker and GitHub show.
const ShortDigest = 12

// BranchPrefix starts every branch name Branch returns.
const BranchPrefix = "stowage/bump-"

// short is the first ShortDigest hex digits of "sha256:<hex>".
func short(d string) string {
	_, hex, ok := strings.Cut(d, ":")
	if !ok {
		hex = d
	}
	if len(hex) > ShortDigest {
		hex = hex[:ShortDigest]
	}
	return hex
}

// Title is a pull request title for changes: for one change it names the
// image and its new digest, else it counts the changes. "" when there is no
// change.
func Title(changes []Change) string {
	switch len(changes) {
	case 0:
		return ""
	case 1:
		c := changes[0]
		written := c.Entry().Reference
		switch {
		case c.Added():
			return fmt.Sprintf("stowage: lock %s at %s", written, short(c.New.Digest))
		case c.Removed():
			return fmt.Sprintf("stowage: drop %s from the lock", written)
		case c.DigestChanged():
			return fmt.Sprintf("stowage: bump %s to %s", written, short(c.New.Digest))
		default:
			return fmt.Sprintf("stowage: update the lock entry of %s", written)
		}
	}
	digests := 0
	for _, c := range changes {
		if c.DigestChanged() {
			digests++
		}
	}
	if digests == len(changes) {
		return fmt.Sprintf("stowage: bump %d image digests", digests)
	}
	return fmt.Sprintf("stowage: update %d lock entries (%d new digests)", len(changes), digests)
}

// Branch is a branch name derived from the change set alone: the same
// changes (keys, old and new digests) give the same name, so a scheduled
// bot that finds the same new digests again updates its open pull request
// instead of opening another. It is BranchPrefix and 12 hex digits of a
// sha256 over the sorted changes; "" when there is no change.
func Branch(changes []Change) string {
	if len(changes) == 0 {
		return ""
	}
	lines := make([]string, len(changes))
	for i, c := range changes {
		var from, to string
		if c.Old != nil {
			from = c.Old.Digest
		}
		if c.New != nil {
			to = c.New.Digest + " " + c.New.Reference
		}
		lines[i] = c.Key + " " + from + " " + to
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return BranchPrefix + hex.EncodeToString(sum[:])[:12]
}

// BodyOptions are what Body says besides the changes.
type BodyOptions struct {
	// LockFile is the lock's path as the reader knows it
	// ("platform/stowage.lock.yaml"); lock.FileName when empty.
	LockFile string
	// RenderDir, when set, is the output directory that was re-rendered
	// with the new digests.
	RenderDir string
	// Failed are the images that did not resolve under --keep-going:
	// they keep their old entries, and the body says so.
	Failed []Failure
}

// Failure is one image that did not resolve again (--keep-going).
type Failure struct {
	// Key is its lock key, Image the reference as the config wrote it.
	Key, Image string
	// Message is why, as stowage printed it (credentials scrubbed).
	Message string
}

// Body is the markdown body of a pull request for changes: a sentence, a
// table with one row per changed image (image, tag, old → new digest,
// kind, environments and images, pullers), notes for kind changes, added
// and removed entries, and what files changed. Cells are escaped; the
// output ends with a newline. "" when there is no change.
func Body(changes []Change, o BodyOptions) string {
	if len(changes) == 0 {
		return ""
	}
	lockFile := o.LockFile
	if lockFile == "" {
		lockFile = lock.FileName
	}
	var b strings.Builder
	digests := 0
	for _, c := range changes {
		if c.DigestChanged() {
			digests++
		}
	}
	fmt.Fprintf(&b, "`stowage bump` resolved every tag of the config again: %s.\n\n", countSentence(changes, digests))
	signed := anySigner(changes)
	if signed {
		b.WriteString("| Image | Tag | Digest | Kind | Signer | Used as | Pullers |\n")
		b.WriteString("|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| Image | Tag | Digest | Kind | Used as | Pullers |\n")
		b.WriteString("|---|---|---|---|---|---|\n")
	}
	var notes []string
	for _, c := range changes {
		ref := c.Ref()
		image, tag := ref.Written, "—"
		if ref.Repository.RepositoryStr() != "" {
			image = repoAsWritten(ref.Written)
			if ref.Tag != "" {
				tag = code(ref.Tag)
			}
			if ref.Digest != "" {
				tag += " (pinned)"
			}
		}
		var digest, kind string
		switch {
		case c.Added():
			digest = "new: " + code(short(c.New.Digest))
			kind = describeKind(*c.New)
			notes = append(notes, fmt.Sprintf("%s is new in the config and now locked.", code(c.New.Reference)))
		case c.Removed():
			digest = code(short(c.Old.Digest)) + " → removed"
			kind = describeKind(*c.Old)
			notes = append(notes, fmt.Sprintf("%s is no longer used by the config; its entry was removed.", code(c.Old.Reference)))
		default:
			if c.DigestChanged() {
				digest = code(short(c.Old.Digest)) + " → " + code(short(c.New.Digest))
			} else {
				digest = code(short(c.New.Digest)) + " (unchanged)"
				notes = append(notes, fmt.Sprintf("%s: same digest, the entry's recorded spelling or details changed.", code(c.New.Reference)))
			}
			kind = describeKind(*c.New)
			if c.KindChanged() {
				kind = fmt.Sprintf("%s → %s ⚠", c.Old.Kind, describeKind(*c.New))
				notes = append(notes, kindNote(c))
			}
		}
		if signed {
			signer := signerCell(c)
			switch {
			case c.SignerChanged() && c.New.VerifiedBy == nil:
				notes = append(notes, fmt.Sprintf("%s: verified before (%s), the new digest is pinned unverified ⚠ (the verify policy is optional).",
					code(c.New.Reference), code(SignerText(c.Old.VerifiedBy))))
			case c.SignerChanged():
				notes = append(notes, fmt.Sprintf("%s: signed by another signer than before (%s → %s) ⚠; check that the publisher changed its key or identity.",
					code(c.New.Reference), code(SignerText(c.Old.VerifiedBy)), code(SignerText(c.New.VerifiedBy))))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
				cell(code(image)), cell(tag), cell(digest), cell(kind), cell(signer), cell(items(c.Uses)), cell(pullers(c.Uses)))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			cell(code(image)), cell(tag), cell(digest), cell(kind), cell(items(c.Uses)), cell(pullers(c.Uses)))
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString("\n")
	if o.RenderDir != "" {
		fmt.Fprintf(&b, "Changed: %s, and the manifests in %s, re-rendered with the new digests. ", code(lockFile), code(o.RenderDir))
	} else {
		fmt.Fprintf(&b, "Changed: %s only. ", code(lockFile))
	}
	b.WriteString("No config file was rewritten. Review the digests against the registry before merging; a digest that moved under an unchanged tag means someone pushed that tag again.\n")
	if len(o.Failed) > 0 {
		fmt.Fprintf(&b, "\n**Not re-checked:** %s did not resolve and %s in %s (`--keep-going`); %s may be out of date.\n\n", words.Count(len(o.Failed), "image"), words.CountAs(len(o.Failed), "keeps its old entry", "keep their old entries")[2:], code(lockFile), words.CountAs(len(o.Failed), "its digest", "their digests")[2:])
		b.WriteString("| Image | Error |\n|---|---|\n")
		for _, f := range o.Failed {
			fmt.Fprintf(&b, "| %s | %s |\n", cell(code(f.Image)), cell(code(f.Message)))
		}
	}
	return b.String()
}

// anySigner reports whether an entry of changes, old or new, records a
// signer: only then has the body a Signer column.
func anySigner(changes []Change) bool {
	for _, c := range changes {
		if (c.Old != nil && c.Old.VerifiedBy != nil) || (c.New != nil && c.New.VerifiedBy != nil) {
			return true
		}
	}
	return false
}

// SignerText names a lock entry's signer: "key sha256:<12 hex>", or a
// keyless signer's "IDENTITY (ISSUER)"; "unverified" for nil.
func SignerText(s *lock.Signer) string {
	switch {
	case s == nil:
		return "unverified"
	case s.Key != "":
		return "key " + short(s.Key)
	default:
		return s.Identity + " (" + s.Issuer + ")"
	}
}

// signerCell is the Signer cell of c: the new entry's signer, "old → new ⚠"
// when it changed, the old one's for a removed entry.
func signerCell(c Change) string {
	switch {
	case c.Removed():
		return code(SignerText(c.Old.VerifiedBy))
	case c.SignerChanged():
		return code(SignerText(c.Old.VerifiedBy)) + " → " + code(SignerText(c.New.VerifiedBy)) + " ⚠"
	default:
		return code(SignerText(c.New.VerifiedBy))
	}
}

func countSentence(changes []Change, digests int) string {
	var parts []string
	if digests > 0 {
		parts = append(parts, plural(digests, "image points at a new digest", "images point at new digests"))
	}
	added, removed, other := 0, 0, 0
	for _, c := range changes {
		switch {
		case c.Added():
			added++
		case c.Removed():
			removed++
		case !c.DigestChanged():
			other++
		}
	}
	if added > 0 {
		parts = append(parts, plural(added, "image is new", "images are new"))
	}
	if removed > 0 {
		parts = append(parts, plural(removed, "image is no longer used", "images are no longer used"))
	}
	if other > 0 {
		parts = append(parts, plural(other, "entry changed otherwise", "entries changed otherwise"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// describeKind is "manifest" or "index (linux/amd64, linux/arm64/v8)".
func describeKind(e lock.Entry) string {
	if e.Kind != lock.KindIndex || len(e.Platforms) == 0 {
		return string(e.Kind)
	}
	ps := make([]string, len(e.Platforms))
	for i, p := range e.Platforms {
		ps[i] = code(p.Platform)
	}
	return fmt.Sprintf("%s (%s)", e.Kind, strings.Join(ps, ", "))
}

// kindNote explains what a kind change means on the nodes.
func kindNote(c Change) string {
	ref := code(c.New.Reference)
	if c.New.Kind == lock.KindIndex {
		return fmt.Sprintf("**Kind changed** for %s: it was a single manifest and is now a multi-arch index. Each node now pulls its own platform; an image whose config lists one platform pins that child.", ref)
	}
	return fmt.Sprintf("**Kind changed** for %s: it was a multi-arch index and is now a single manifest. Nodes of other platforms can no longer run it, and a `platforms` entry in the config no longer has a child to pin: check the config.", ref)
}

// items lists the distinct config items of the uses.
func items(uses []*plan.Use) string {
	var out []string
	seen := map[string]bool{}
	for _, u := range uses {
		if !seen[u.Item()] {
			seen[u.Item()] = true
			out = append(out, u.Item())
		}
	}
	sort.Strings(out)
	for i, it := range out {
		out[i] = code(it)
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// pullers lists the distinct pullers of the uses, with the profile when
// the uses span several profiles.
func pullers(uses []*plan.Use) string {
	profiles := map[string]bool{}
	for _, u := range uses {
		profiles[u.Profile] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, u := range uses {
		if u.PullerName() == "" {
			continue // a workload the KRM function pins: its Item says which
		}
		s := code(u.PullerName())
		if len(profiles) > 1 {
			s = u.Profile + ": " + s
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// repoAsWritten is the written reference without its tag and digest.
func repoAsWritten(written string) string {
	base, _, _ := strings.Cut(written, "@")
	if i := strings.LastIndexByte(base, ':'); i > strings.LastIndexByte(base, '/') {
		base = base[:i]
	}
	return base
}

// code is s as inline code (escape.Markdown): whatever a registry or a
// config puts in s, the body gets no heading, link, image, HTML or
// @mention from it, and a table cell stays one cell.
func code(s string) string { return escape.Markdown(s) }

// cell is a table cell: every free text in it went through code, which
// escapes '|' and newlines; a newline left would end the row.
func cell(s string) string {
	return strings.ReplaceAll(s, "\n", " ")
}

// Report is what bump -o json prints (v1alpha1.BumpReport): the pull
// request of a set of changes.
type Report = v1alpha1.BumpReport

// ReportFailure is one image of Report.Failures.
type ReportFailure = v1alpha1.BumpFailure

// ReportChange is one change in a Report.
type ReportChange = v1alpha1.BumpChange

// NewReport builds the Report of changes, with Body written with o.
func NewReport(changes []Change, o BodyOptions) Report {
	r := Report{
		Changed:  len(changes) > 0,
		Title:    Title(changes),
		Branch:   Branch(changes),
		Body:     Body(changes, o),
		Changes:  []ReportChange{},
		Failures: []ReportFailure{},
	}
	for _, f := range o.Failed {
		r.Failures = append(r.Failures, ReportFailure{Key: f.Key, Image: f.Image, Error: f.Message})
	}
	for _, c := range changes {
		rc := ReportChange{Key: c.Key, Reference: c.Entry().Reference, Used: []string{}, Pullers: []string{}}
		if c.Old != nil {
			rc.OldDigest, rc.OldKind = c.Old.Digest, string(c.Old.Kind)
		}
		if c.New != nil {
			rc.NewDigest, rc.NewKind = c.New.Digest, string(c.New.Kind)
		}
		if c.Old != nil && c.Old.VerifiedBy != nil {
			rc.OldSigner = SignerText(c.Old.VerifiedBy)
		}
		if c.New != nil && c.New.VerifiedBy != nil {
			rc.NewSigner = SignerText(c.New.VerifiedBy)
		}
		rc.SignerChanged = c.SignerChanged()
		seenItem, seenPuller := map[string]bool{}, map[string]bool{}
		for _, u := range c.Uses {
			if !seenItem[u.Item()] {
				seenItem[u.Item()] = true
				rc.Used = append(rc.Used, u.Item())
			}
			if p := u.Profile + "/" + u.PullerName(); u.PullerName() != "" && !seenPuller[p] {
				seenPuller[p] = true
				rc.Pullers = append(rc.Pullers, p)
			}
		}
		sort.Strings(rc.Used)
		r.Changes = append(r.Changes, rc)
	}
	return r
}
