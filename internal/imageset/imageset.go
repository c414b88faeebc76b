// Package imageset turns the image lists vendors publish (a plain list, one
// reference a line; the images a Helm chart's workloads run) into stowage
// config: an images catalogue keyed by stable names derived from the
// repositories, printed as YAML or CUE, sorted, ready for `stowage lock`.
package imageset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"go.yaml.in/yaml/v3"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/dnslabel"
	"github.com/stowage/stowage/internal/imageref"
)

// MaxListBytes bounds the size of an image list file: 4 MiB, about 40,000
// references, far more than any vendor's air-gap list.
const MaxListBytes = 4 << 20

// MaxImages bounds the number of distinct images one set may hold.
const MaxImages = 10000

// maxNameLen bounds a derived image name, in characters.
const maxNameLen = 63

// Image is one entry of a set: the catalogue key and the reference.
type Image struct {
	// Name is the catalogue key, derived from the repository (see Build).
	Name string
	// Reference is the reference as the source spelled it; empty when
	// ByNodeLabel is set.
	Reference string
	// ByNodeLabel is set for an image a node label's value chooses
	// (FromChartByNodeLabel); nil otherwise.
	ByNodeLabel *NodeLabelChoice
	// From says where a chart names the image (FromChart): the rendered
	// object and field ("Deployment ml-operator
	// spec.template.spec.containers[0].image"), or the values path and the
	// object that carries the map on; empty for a list. Written as
	// comments beside the entry.
	From []string
	// Heuristic is set for an image only the value-map heuristic found
	// (ValueImages): no rendered container names it.
	Heuristic bool
	// Note is a caveat written beside the entry ("" for none), such as a
	// tag an operator completes at run time.
	Note string
	// OSSuffix is set for an image whose tag an operator completes at run
	// time with the node's operating system ("-ubuntu22.04"):
	// FromChartByNodeLabel appends each label value to it.
	OSSuffix bool
}

// maxFromLines bounds the From lines written beside one entry.
const maxFromLines = 4

// comments are the comment lines (without the comment marker) written
// before im's entry: where it came from, whether a heuristic found it, and
// its note.
func (im Image) comments() []string {
	var out []string
	for i, f := range im.From {
		if i == maxFromLines {
			out = append(out, fmt.Sprintf("and %d more", len(im.From)-maxFromLines))
			break
		}
		out = append(out, "from "+oneLine(f))
	}
	if im.Heuristic {
		out = append(out, "found only by the value-map heuristic (no rendered container names it): check it is deployed")
	}
	if im.Note != "" {
		out = append(out, "note: "+oneLine(im.Note))
	}
	return out
}

// Set is an image set, sorted by Name, names unique.
type Set []Image

// ReadList reads the image list at path, at most MaxListBytes, and parses
// it with ParseList.
func ReadList(path string) (Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxListBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes, the limit of an image list", path, MaxListBytes)
	}
	return ParseList(path, data)
}

// ReadListFrom reads an image list from r, standard input named Stdin in
// errors, at most MaxListBytes (internal/confined's bound on a stream),
// and parses it with ParseList.
func ReadListFrom(r io.Reader) (Set, error) {
	data, err := confined.ReadStream(r, Stdin, confined.Kind{What: "list of images", Max: MaxListBytes})
	if err != nil {
		return nil, err
	}
	return ParseList(Stdin, data)
}

// ParseList parses an image list: one reference a line, blank lines and
// lines starting with '#' ignored (kubespray's offline images.list, the
// GPU Operator's air-gap list), surrounding spaces trimmed. Each reference
// is parsed with go-containerregistry (internal/imageref); an error names
// file:line and the reference. The same image listed twice is kept once.
func ParseList(file string, data []byte) (Set, error) {
	var refs []imageref.Ref
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := imageref.Parse(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		refs = append(refs, r)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("%s: no image references (one a line; # starts a comment)", file)
	}
	return Build(refs)
}

// Build names refs and returns the set sorted by name. The same image
// (imageref.Ref.Key: Docker Hub spellings and the default tag normalised)
// is kept once, in the spelling that sorts first. Names are derived from
// the repository, the same for the same input whatever its order:
//
//  1. the last path component ("nvcr.io/nvidia/driver" -> "driver");
//  2. when images share that name, the whole repository path
//     ("nvidia-driver");
//  3. when they still do, the registry as well ("nvcr-io-nvidia-driver");
//  4. when they still do (one repository, several tags), the tag or the
//     digest's first 12 hex digits ("driver-550-54-15-ubuntu22-04");
//
// one level for every image of a group that shares a last component,

// each name made a DNS-1123 label fragment of at most 63 characters
// (dnslabel.Sanitize); a name still taken gets "-2", "-3", ... in key order.
func Build(refs []imageref.Ref) (Set, error) {
	byKey := map[string]imageref.Ref{}
	for _, r := range refs {
		k := r.Key()
		if old, ok := byKey[k]; !ok || r.Written < old.Written {
			byKey[k] = r
		}
	}
	if len(byKey) > MaxImages {
		return nil, fmt.Errorf("%d images: more than %d, the limit of one image set", len(byKey), MaxImages)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	levels := func(r imageref.Ref) [4]string {
		path := r.Repository.RepositoryStr()
		if r.Registry() == "index.docker.io" {
			path = strings.TrimPrefix(path, "library/")
		}
		base := path[strings.LastIndex(path, "/")+1:]
		reg := r.Registry()
		if reg == "index.docker.io" {
			reg = "docker.io"
		}
		suffix := r.Tag
		if suffix == "" {
			_, hex, _ := strings.Cut(r.Digest, ":")
			suffix = hex[:min(12, len(hex))]
		}
		full := reg + "/" + path
		return [4]string{
			dnslabel.Sanitize(base, maxNameLen),
			dnslabel.Sanitize(path, maxNameLen),
			dnslabel.Sanitize(full, maxNameLen),
			dnslabel.Sanitize(full+"-"+suffix, maxNameLen),
		}
	}
	groups := map[string][]string{}
	for _, k := range keys {
		b := levels(byKey[k])[0]
		groups[b] = append(groups[b], k)
	}
	name := map[string]string{}
	for _, members := range groups {
		for lvl := 0; lvl < 4; lvl++ {
			seen := map[string]bool{}
			distinct := true
			for _, k := range members {
				n := levels(byKey[k])[lvl]
				if seen[n] {
					distinct = false
				}
				seen[n] = true
			}
			if distinct || lvl == 3 {
				for _, k := range members {
					name[k] = levels(byKey[k])[lvl]
				}
				break
			}
		}
	}
	taken := map[string]bool{}
	set := make(Set, 0, len(keys))
	for _, k := range keys {
		n := name[k]
		for i := 2; taken[n]; i++ {
			n = fmt.Sprintf("%s-%d", name[k], i)
		}
		taken[n] = true
		set = append(set, Image{Name: n, Reference: byKey[k].Written})
	}
	slices.SortFunc(set, func(a, b Image) int { return strings.Compare(a.Name, b.Name) })
	return set, nil
}

// Formats are the output formats of Encode.
var Formats = []string{"yaml", "cue"}

// Kinds are what EncodeAs writes the set as: the images catalogue, or
// environments (one image each).
var Kinds = []string{"images", "environments"}

// Encode is EncodeAs(set, formatName, "images", source).
func Encode(set Set, formatName, source string) ([]byte, error) {
	return EncodeAs(set, formatName, "images", source)
}

// EncodeAs writes the set as a stowage config file in format ("yaml" or
// "cue"): under kind "images" a catalogue, one entry per image with its
// reference; under kind "environments" one environment per image with its
// image; an image a node label chooses as byNodeLabel {label, references}
// (label values sorted). Entries in name order, after a comment that says
// where the set came from (source, one line of the caller's words).
func EncodeAs(set Set, formatName, kind, source string) ([]byte, error) {
	field := map[string]string{"images": "reference", "environments": "image"}[kind]
	if field == "" {
		return nil, fmt.Errorf("kind %q: want %s", kind, strings.Join(Kinds, " or "))
	}
	switch formatName {
	case "yaml":
		return encodeYAML(set, kind, field, source)
	case "cue":
		return encodeCUE(set, kind, field, source)
	}
	return nil, fmt.Errorf("format %q: want %s", formatName, strings.Join(Formats, " or "))
}

func encodeYAML(set Set, kind, field, source string) ([]byte, error) {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	images := &yaml.Node{Kind: yaml.MappingNode}
	for _, im := range set {
		entry := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str(field), str(im.Reference)}}
		if c := im.ByNodeLabel; c != nil {
			refs := &yaml.Node{Kind: yaml.MappingNode}
			for _, v := range slices.Sorted(maps.Keys(c.References)) {
				refs.Content = append(refs.Content, str(v), str(c.References[v]))
			}
			entry.Content = []*yaml.Node{str("byNodeLabel"), {Kind: yaml.MappingNode, Content: []*yaml.Node{
				str("label"), str(c.Label), str("references"), refs}}}
		}
		key := str(im.Name)
		if cs := im.comments(); len(cs) > 0 {
			key.HeadComment = "# " + strings.Join(cs, "\n# ")
		}
		images.Content = append(images.Content, key, entry)
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: headComment(source, kind), Content: []*yaml.Node{{
		Kind: yaml.MappingNode, Content: []*yaml.Node{str(kind), images},
	}}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func encodeCUE(set Set, kind, field, source string) ([]byte, error) {
	var fields []any
	for _, im := range set {
		entry := ast.NewStruct(ast.NewIdent(field), ast.NewString(im.Reference))
		if c := im.ByNodeLabel; c != nil {
			var refs []any
			for _, v := range slices.Sorted(maps.Keys(c.References)) {
				refs = append(refs, ast.NewStringLabel(v), ast.NewString(c.References[v]))
			}
			entry = ast.NewStruct(ast.NewIdent("byNodeLabel"), ast.NewStruct(
				ast.NewIdent("label"), ast.NewString(c.Label), ast.NewIdent("references"), ast.NewStruct(refs...)))
		}
		fields = append(fields, ast.NewStringLabel(im.Name), entry)
	}
	st := ast.NewStruct(fields...)
	for i, im := range set {
		if cs := im.comments(); len(cs) > 0 {
			var list []*ast.Comment
			for _, c := range cs {
				list = append(list, &ast.Comment{Text: "// " + c})
			}
			ast.AddComment(st.Elts[i], &ast.CommentGroup{Doc: true, List: list})
		}
	}
	pkg := &ast.Package{Name: ast.NewIdent("stowage")}
	ast.AddComment(pkg, &ast.CommentGroup{Doc: true, List: commentLines(source, kind)})
	f := &ast.File{Decls: []ast.Decl{
		pkg,
		&ast.Field{Label: ast.NewIdent(kind), Value: st},
	}}
	b, err := format.Node(f)
	if err != nil {
		return nil, errors.Join(errors.New("formatting the CUE file"), err)
	}
	return b, nil
}

// headComment is the YAML comment that leads the file.
func headComment(source, kind string) string {
	var lines []string
	for _, c := range commentLines(source, kind) {
		lines = append(lines, "#"+strings.TrimPrefix(c.Text, "//"))
	}
	return strings.Join(lines, "\n")
}

func commentLines(source, kind string) []*ast.Comment {
	return []*ast.Comment{
		{Text: "// Images from " + oneLine(source) + ", written by stowage images."},
		{Text: "// Review each tag, list the keys in a puller's " + kind + ", then run stowage lock."},
	}
}

// oneLine keeps only printable ASCII of s, so a file name cannot break a
// comment line or carry terminal controls into the file.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
