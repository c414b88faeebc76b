package fn

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/workload"
)

// StrictAnnotation, set to "true" on the functionConfig, turns every
// warning result into an error, so that a CI build fails on it.
const StrictAnnotation = "stowage.dev/strict"

// maxScannedFiles bounds the YAML files of the kustomization's directory
// read to find where the functionConfig was written.
const maxScannedFiles = 200

// strict turns the warnings of rs into errors when fc carries
// StrictAnnotation: "true".
func strict(fc *yaml.RNode, rs framework.Results) {
	if fc == nil || annotation(fc, StrictAnnotation) != "true" {
		return
	}
	for _, r := range rs {
		if r.Severity == framework.Warning {
			r.Severity = framework.Error
			r.Message += fmt.Sprintf(" (an error because of %s: \"true\")", StrictAnnotation)
		}
	}
}

// Located is a warning or error result placed in the file the user
// edits (Processor.Locate).
type Located struct {
	// File is the result's file, or for the functionConfig the file that
	// holds it; when neither is known, the object ("Kind name"), or
	// "stowage".
	File string
	// Line is the line of Field in File (1-based); 0 when unknown.
	Line int
	// Severity is "error" or "warning".
	Severity framework.Severity
	// Field is the result's field path; "" for none.
	Field string
	// Message is the result's message.
	Message string
}

// String is the `file:line: [warning: ]field: message` line report writes.
func (l Located) String() string {
	var b strings.Builder
	b.WriteString(l.File)
	if l.Line > 0 {
		b.WriteString(":" + strconv.Itoa(l.Line))
	}
	b.WriteString(": ")
	if l.Severity == framework.Warning {
		b.WriteString("warning: ")
	}
	if l.Field != "" {
		b.WriteString(l.Field + ": ")
	}
	b.WriteString(l.Message)
	return b.String()
}

// report writes every warning and error result to w as a line
// `file:line: field: message` (Located.String; kustomize and Argo CD's
// repo server show a function's stderr, the ResourceList results they do
// not print). A message quoting a config value or a file name goes
// through escape.Text: nothing of the repository reaches a terminal raw.
func (p *Processor) report(w io.Writer, fc *yaml.RNode, rs framework.Results) {
	if w == nil {
		return
	}
	for _, l := range p.Locate(fc, rs) {
		fmt.Fprintln(w, escape.Text(l.String()))
	}
}

// Locate places every warning and error result of rs in the file the user
// edits. The file is the result's, or for the functionConfig, which
// kustomize passes without its file, the file its kioutil path annotation
// names, else the YAML file of p.Dir that holds an object of the same
// identity with a config.kubernetes.io/function annotation. The line is
// that of the field in that file; without the file, the object is named
// instead.
func (p *Processor) Locate(fc *yaml.RNode, rs framework.Results) []Located {
	dir := p.Dir
	if dir == "" {
		dir = "."
	}
	files := map[string][]*yaml.RNode{}
	read := func(rel string) []*yaml.RNode {
		if ns, ok := files[rel]; ok {
			return ns
		}
		files[rel] = nil
		b, err := confined.ReadFile(dir, rel, confined.Config)
		if err != nil {
			return nil
		}
		ns, err := (&kio.ByteReader{Reader: strings.NewReader(string(b)), PreserveSeqIndent: true}).Read()
		if err == nil {
			files[rel] = ns
		}
		return ns
	}
	fcFile, fcNode := "", (*yaml.RNode)(nil)
	fcSearched := false
	var out []Located
	for _, r := range rs {
		if r.Severity != framework.Error && r.Severity != framework.Warning {
			continue
		}
		var where string
		var node *yaml.RNode
		switch {
		case r.File != nil && r.File.Path != "":
			where = r.File.Path
			if ns := read(r.File.Path); r.File.Index < len(ns) {
				node = ns[r.File.Index]
			}
		case fc != nil && r.ResourceRef != nil && *r.ResourceRef == identity(fc):
			if !fcSearched {
				fcSearched = true
				fcFile, fcNode = findFunctionConfig(dir, fc, read)
			}
			where, node = fcFile, fcNode
		}
		if where == "" && r.ResourceRef != nil {
			where = fmt.Sprintf("%s %s", r.ResourceRef.Kind, r.ResourceRef.Name)
		}
		if where == "" {
			where = "stowage"
		}
		l := Located{File: where, Severity: r.Severity, Message: r.Message}
		if node != nil {
			l.Line = fieldLine(node, r.Field)
		}
		if r.Field != nil {
			l.Field = r.Field.Path
		}
		out = append(out, l)
	}
	return out
}

// findFunctionConfig returns the file of dir (top level, .yaml or .yml,
// at most maxScannedFiles) and the object in it that has fc's identity and
// a config.kubernetes.io/function annotation.
func findFunctionConfig(dir string, fc *yaml.RNode, read func(string) []*yaml.RNode) (string, *yaml.RNode) {
	want := identity(fc)
	if rel, _ := fileOf(fc); rel != "" {
		for _, o := range read(rel) {
			if identity(o) == want {
				return rel, o
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", nil
	}
	n := 0
	for _, e := range ents {
		ext := filepath.Ext(e.Name())
		if !e.Type().IsRegular() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		if n++; n > maxScannedFiles {
			break
		}
		for _, o := range read(e.Name()) {
			if identity(o) == want && annotation(o, "config.kubernetes.io/function") != "" {
				return e.Name(), o
			}
		}
	}
	return "", nil
}

// fieldLine returns the line of field in n: the deepest node of the path
// (a.b[1].c) that exists, or n's own line.
func fieldLine(n *yaml.RNode, f *framework.Field) int {
	cur := n.YNode()
	if cur.Kind == yaml.DocumentNode && len(cur.Content) > 0 {
		cur = cur.Content[0]
	}
	line := cur.Line
	if f == nil {
		return line
	}
	for _, seg := range strings.Split(strings.ReplaceAll(f.Path, "[", ".["), ".") {
		if seg == "" {
			continue
		}
		var next *yaml.Node
		if strings.HasPrefix(seg, "[") && strings.HasSuffix(seg, "]") {
			i, err := strconv.Atoi(seg[1 : len(seg)-1])
			if err == nil && cur.Kind == yaml.SequenceNode && i >= 0 && i < len(cur.Content) {
				next = cur.Content[i]
			}
		} else if cur.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(cur.Content); j += 2 {
				if cur.Content[j].Value == seg {
					line = cur.Content[j].Line
					next = cur.Content[j+1]
					break
				}
			}
			if next == nil {
				return line
			}
			cur = next
			continue
		}
		if next == nil {
			return line
		}
		cur, line = next, next.Line
	}
	return line
}

// annotation returns the value of annotation k of n, or ""
// (workload.Annotation).
func annotation(n *yaml.RNode, k string) string { return workload.Annotation(n, k) }
