package chart

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

// chartDir is charts/dovetail, found from this file's location.
func chartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "dovetail")
}

// readValues parses the chart's values.yaml.
func readValues() (map[string]any, error) {
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	return v, nil
}

// templateFiles returns the chart's templates by file name: the manifests and _helpers.tpl.
func templateFiles() (map[string]string, error) {
	paths, err := filepath.Glob(filepath.Join(chartDir(), "templates", "*"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[filepath.Base(p)] = string(b)
	}
	if len(out) == 0 {
		return nil, errors.New("no templates in " + filepath.Join(chartDir(), "templates"))
	}
	return out, nil
}

// render renders the chart with Helm's own engine (helm.sh/helm/v3), as `helm template` does: overrides merged
// over values.yaml, the values checked against values.schema.json, release "dovetail" in kube-system. It returns
// each manifest's output by file name.
func render(overrides map[string]any) (map[string]string, error) {
	return renderWithAPIs(overrides)
}

// monitoringAPI is the API version of the Prometheus Operator's ServiceMonitor.
const monitoringAPI = "monitoring.coreos.com/v1"

// renderWithAPIs is render on a cluster that also serves the given API versions (Helm's .Capabilities.APIVersions,
// as `helm template --api-versions` sets them).
func renderWithAPIs(overrides map[string]any, apiVersions ...string) (map[string]string, error) {
	ch, err := loader.Load(chartDir())
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	if overrides == nil {
		overrides = map[string]any{}
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), apiVersions...)
	vals, err := chartutil.ToRenderValues(ch, overrides,
		chartutil.ReleaseOptions{Name: "dovetail", Namespace: "kube-system", Revision: 1, IsInstall: true},
		caps)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, text := range rendered {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || path.Ext(base) == ".txt" {
			continue
		}
		out[base] = text
	}
	return out, nil
}

// merge returns base with overrides merged in, recursively for maps (as `helm --set`/`-f` do).
func merge(base, overrides map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range overrides {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = merge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// TestRenderRefusesValuesOutsideTheSchema: Helm itself (not only validateValues) refuses a value the schema does
// not know, naming it, before rendering anything.
func TestRenderRefusesValuesOutsideTheSchema(t *testing.T) {
	_, err := render(map[string]any{"settings": map[string]any{"clusterName": "prod", "clusterNmae": "typo"}})
	if err == nil || !strings.Contains(err.Error(), "clusterNmae") {
		t.Fatalf("render with settings.clusterNmae: want a schema error naming it, got %v", err)
	}
}
