package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/seedlabs/webhook-operator/test/docblock"
)

// The block of docs/chart-values.md that TestChartValuesPageIsInSync generates.
const (
	valuesBegin = "<!-- begin: generated from dist/chart/values.yaml by make docs -->\n"
	valuesEnd   = "<!-- end: generated -->"
)

// TestChartValuesPageIsInSync holds the table of docs/chart-values.md to dist/chart/values.yaml:
// a row for every value, with its default and the comment above it, and above each group of
// values (a map) the group's comment. Every value must be explained, by its own comment or its
// group's.
func TestChartValuesPageIsInSync(t *testing.T) {
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "dist", "chart", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	table.WriteString("| Value | Default | What it does |\n|---|---|---|\n")
	rows := valueRows(t, doc.Content[0], "", false)
	for _, r := range rows {
		fmt.Fprintf(&table, "| `%s` | %s | %s |\n", r.path, r.value, r.comment)
	}
	if len(rows) < 50 {
		t.Errorf("only %d values documented", len(rows))
	}
	docblock.Check(t, filepath.Join(root, "docs", "chart-values.md"), valuesBegin, valuesEnd, table.String(), "dist/chart/values.yaml")
}

// valueRow is a row of the values table.
type valueRow struct{ path, value, comment string }

// valueRows are the rows of the values of the map m, under path: each value with its default,
// each group with none; explained says whether a group around them has a comment.
func valueRows(t *testing.T, m *yaml.Node, path string, explained bool) []valueRow {
	t.Helper()
	var rows []valueRow
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, value := m.Content[i], m.Content[i+1]
		p := key.Value
		if path != "" {
			p = path + "." + key.Value
		}
		comment := commentText(key.HeadComment)
		if value.Kind == yaml.MappingNode && len(value.Content) > 0 {
			if comment != "" {
				rows = append(rows, valueRow{path: p, comment: comment})
			}
			rows = append(rows, valueRows(t, value, p, explained || comment != "")...)
			continue
		}
		if comment == "" && !explained {
			t.Errorf("dist/chart/values.yaml: %s has no comment, nor has any group around it", p)
		}
		rows = append(rows, valueRow{path: p, value: "`" + flow(t, value) + "`", comment: comment})
	}
	return rows
}

// markdownCell escapes what Markdown would read in a table cell as a column's end or an HTML tag.
var markdownCell = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// commentText is a head comment as one line of Markdown: without its #s, escaped for a table cell.
func commentText(comment string) string {
	var words []string
	for line := range strings.SplitSeq(comment, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if line != "" {
			words = append(words, markdownCell.Replace(line))
		}
	}
	return strings.Join(words, " ")
}

// flow is a value as one line of YAML.
func flow(t *testing.T, value *yaml.Node) string {
	t.Helper()
	n := *value
	n.Style = yaml.FlowStyle
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(strings.TrimSpace(out.String()), "|", `\|`)
}
