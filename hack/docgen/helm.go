package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// value is one documented key of values.yaml.
type value struct {
	path    string
	def     string
	comment string
}

func writeHelmValues(w io.Writer, values []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return fmt.Errorf("parsing values.yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("values.yaml: want a mapping at the top")
	}
	var rows []value
	if err := walk(doc.Content[0], "", &rows); err != nil {
		return err
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# Helm values reference\n\n")
	p(generatedNote, "charts/dovetail/values.yaml")
	p("Every value of `charts/dovetail`, with its default and the comment above it in `values.yaml`. Which setting\n")
	p("each value sets, the values schema, Karpenter values files, RBAC and dashboards: [Helm chart](../helm.md).\n\n")
	p("| Key | Default | Description |\n|---|---|---|\n")
	for _, r := range rows {
		p("| `%s` | %s | %s |\n", r.path, r.def, cell(r.comment))
	}
	return nil
}

// walk appends a row for every leaf of a mapping (scalars, sequences, empty mappings) and for every mapping key
// with a comment of its own.
func walk(m *yaml.Node, prefix string, rows *[]value) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		comment := keyComment(k.HeadComment)
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
			if comment != "" {
				*rows = append(*rows, value{path: path, def: "", comment: comment})
			}
			if err := walk(v, path, rows); err != nil {
				return err
			}
			continue
		}
		def, err := flow(v)
		if err != nil {
			return fmt.Errorf("values.yaml %s: %w", path, err)
		}
		*rows = append(*rows, value{path: path, def: def, comment: comment})
	}
	return nil
}

// keyComment is the last paragraph of a key's head comment (earlier paragraphs, separated by an empty line, speak
// of a section), without the '#' and helm-docs' "--" marker.
func keyComment(head string) string {
	if head == "" {
		return ""
	}
	paras := strings.Split(head, "\n\n")
	var words []string
	for _, line := range strings.Split(paras[len(paras)-1], "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		line = strings.TrimSpace(strings.TrimPrefix(line, "--"))
		if line != "" {
			words = append(words, line)
		}
	}
	return strings.Join(words, " ")
}

// flow renders a default as one line of YAML in a code span.
func flow(v *yaml.Node) (string, error) {
	c := *v
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	setFlow(&c)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&c); err != nil {
		return "", err
	}
	s := strings.TrimSpace(b.String())
	if s == "" || s == `""` {
		return "`\"\"`", nil
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	return "`" + s + "`", nil
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	cp := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cc := *c
		cc.HeadComment, cc.LineComment, cc.FootComment = "", "", ""
		setFlow(&cc)
		cp[i] = &cc
	}
	n.Content = cp
}
