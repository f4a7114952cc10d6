package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHelmValues(t *testing.T) {
	values := `# Values of the chart (a header, not a key's comment).

# -- Controller replicas.
replicas: 2
image:
  # -- The image's repository.
  repository: example.com/dovetail
  # -- Digest; empty: the tag.
  digest: ""
# -- Settings of the controller.
settings:
  # -- Feature gates, with a | pipe.
  featureGates:
    nodeRepair: false
  tolerations: []
extra: {}
`
	var b bytes.Buffer
	if err := writeHelmValues(&b, []byte(values)); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| `") {
			rows = append(rows, l)
		}
	}
	want := []string{
		"| `replicas` | `2` | Controller replicas. |",
		"| `image.repository` | `example.com/dovetail` | The image's repository. |",
		"| `image.digest` | `\"\"` | Digest; empty: the tag. |",
		"| `settings` |  | Settings of the controller. |",
		"| `settings.featureGates` |  | Feature gates, with a \\| pipe. |",
		"| `settings.featureGates.nodeRepair` | `false` |  |",
		"| `settings.tolerations` | `[]` |  |",
		"| `extra` | `{}` |  |",
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
}

func TestFromReference(t *testing.T) {
	got := fromReference("see [repair](repair.md), [a](api.md#x), [web](https://x.io/a.md) and [up](../README.md)")
	want := "see [repair](../repair.md), [a](../api.md#x), [web](https://x.io/a.md) and [up](../README.md)"
	if got != want {
		t.Errorf("fromReference = %q, want %q", got, want)
	}
}

// TestSettingsReference: every setting and gate has its texts; a missing one fails the generator.
func TestSettingsReference(t *testing.T) {
	var b bytes.Buffer
	if err := writeSettings(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| `CLUSTER_NAME` | `--cluster-name` | **required** |", "## Feature gates", "## AWS feature gates", "| `Drift` |"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("settings reference has no %q", s)
		}
	}
}
