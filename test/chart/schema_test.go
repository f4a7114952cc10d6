package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateValues checks values against charts/dovetail/values.schema.json, as `helm install`/`helm template` do
// (Helm validates with the same library).
func validateValues(values map[string]any) error {
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("values.schema.json", doc); err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	sch, err := c.Compile("values.schema.json")
	if err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	// Round-trip through JSON, as Helm does, so numbers are float64 and maps are map[string]any.
	j, err := json.Marshal(values)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("values do not match values.schema.json: %w", err)
	}
	return nil
}

// TestValuesSchema: values.yaml itself passes the schema, and values a user could get wrong (unknown keys, a typo
// in a nested key, wrong types, bad enums and formats) are refused with a message naming the value.
func TestValuesSchema(t *testing.T) {
	values, err := readValues()
	if err != nil {
		t.Fatal(err)
	}
	if err := validateValues(values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	good := []map[string]any{
		{"settings": map[string]any{"clusterName": "prod", "kubeClientQPS": 50, "kubeClientBurst": "300", "reservedENIs": 1}},
		{"podDisruptionBudget": map[string]any{"maxUnavailable": "50%"}, "terminationGracePeriodSeconds": 60},
		{"controller": map[string]any{"image": map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)}}},
		{"dashboards": map[string]any{"enabled": true, "namespace": "monitoring", "annotations": map[string]any{"grafana_folder": "Dovetail"}}},
		{"global": map[string]any{"imageRegistry": "x"}},
		{"settings": map[string]any{"clusterName": "{{ .Release.Name }}", "isolatedVPC": "{{ .Values.x }}", "batchMaxDuration": "{{ .Values.y }}", "reservedENIs": "2"}},
		{"settings": map[string]any{"isolatedVPC": "true", "batchIdleDuration": "", "vmMemoryOverheadPercent": "0.1", "ignoreDRARequests": false}},
		{"initContainers": []any{map[string]any{"name": "wait", "image": "busybox"}}, "serviceMonitor": map[string]any{"sampleLimit": 100}},
	}
	for _, name := range karpenterValuesFiles {
		good = append(good, readValuesFile(t, name))
	}
	for i, o := range good {
		if err := validateValues(merge(values, o)); err != nil {
			t.Errorf("good values #%d %v refused: %v", i, o, err)
		}
	}
	bad := []struct {
		name      string
		overrides map[string]any
		want      string // a fragment of the error: the path of the offending value
	}{
		{"unknown top-level key", map[string]any{"replica": 3}, "replica"},
		{"typo in settings", map[string]any{"settings": map[string]any{"clusterNmae": "prod"}}, "clusterNmae"},
		{"unknown feature gate", map[string]any{"settings": map[string]any{"featureGates": map[string]any{"drift": true}}}, "drift"},
		{"replicas as a string", map[string]any{"replicas": "two"}, "/replicas"},
		{"negative replicas", map[string]any{"replicas": -1}, "/replicas"},
		{"log level", map[string]any{"logLevel": "verbose"}, "/logLevel"},
		{"preference policy", map[string]any{"settings": map[string]any{"preferencePolicy": "Prefer"}}, "/settings/preferencePolicy"},
		{"duration", map[string]any{"settings": map[string]any{"batchMaxDuration": "10 seconds"}}, "/settings/batchMaxDuration"},
		{"teardown timeout as a number", map[string]any{"teardown": map[string]any{"timeout": 600}}, "/teardown/timeout"},
		{"digest", map[string]any{"controller": map[string]any{"image": map[string]any{"digest": "latest"}}}, "/controller/image/digest"},
		{"image key typo", map[string]any{"controller": map[string]any{"image": map[string]any{"repo": "x"}}}, "repo"},
		{"port out of range", map[string]any{"controller": map[string]any{"metrics": map[string]any{"port": 70000}}}, "/controller/metrics/port"},
		{"dashboards flag as a string", map[string]any{"dashboards": map[string]any{"enabled": "yes"}}, "/dashboards/enabled"},
		{"label value not a string", map[string]any{"podLabels": map[string]any{"team": 1}}, "/podLabels/team"},
		{"isolatedVPC neither a boolean nor a template", map[string]any{"settings": map[string]any{"isolatedVPC": "yes"}}, "/settings/isolatedVPC"},
		{"refresh interval", map[string]any{"settings": map[string]any{"amiRefreshInterval": "hourly"}}, "/settings/amiRefreshInterval"},
		{"unknown AWS feature gate", map[string]any{"settings": map[string]any{"awsFeatureGates": map[string]any{"nodeClassCel": true}}}, "nodeClassCel"},
		{"DRA gate as a string", map[string]any{"settings": map[string]any{"awsFeatureGates": map[string]any{"draEFA": "on"}}}, "/settings/awsFeatureGates/draEFA"},
		{"container security context beyond the three profiles", map[string]any{"controller": map[string]any{"securityContext": map[string]any{"runAsUser": 0}}}, "runAsUser"},
		{"init containers as a map", map[string]any{"initContainers": map[string]any{"name": "x"}}, "/initContainers"},
		{"sample limit as a string", map[string]any{"serviceMonitor": map[string]any{"sampleLimit": "many"}}, "/serviceMonitor/sampleLimit"},
		{"log output paths as a string", map[string]any{"logOutputPaths": "stdout"}, "/logOutputPaths"},
		{"container name", map[string]any{"controller": map[string]any{"containerName": "Controller"}}, "/controller/containerName"},
		{"memory overhead above 1", map[string]any{"settings": map[string]any{"vmMemoryOverheadPercent": 7.5}}, "/settings/vmMemoryOverheadPercent"},
		{"tolerations not a list", map[string]any{"tolerations": map[string]any{"key": "x"}}, "/tolerations"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			err := validateValues(merge(values, tt.overrides))
			if err == nil {
				t.Fatalf("values %v accepted", tt.overrides)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not name %q:\n%v", tt.want, err)
			}
		})
	}
}

// TestSchemaCoversValues: every key of values.yaml is declared in the schema (else the schema's
// additionalProperties would refuse the chart's own defaults, caught above) and every key the schema declares
// under an object with fixed keys exists in values.yaml (else the schema documents a value the chart ignores).
func TestSchemaCoversValues(t *testing.T) {
	values, err := readValues()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	defs, _ := schema["definitions"].(map[string]any)
	var walk func(path string, s map[string]any, v any)
	walk = func(path string, s map[string]any, v any) {
		if ref, ok := s["$ref"].(string); ok {
			s, _ = defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
		}
		props, ok := s["properties"].(map[string]any)
		if !ok || s["additionalProperties"] != false {
			return
		}
		vm, _ := v.(map[string]any)
		for k, ps := range props {
			if path == "" && k == "global" {
				continue // set by Helm for subcharts, not in values.yaml
			}
			sub, present := vm[k]
			if !present {
				t.Errorf("schema declares %s.%s, values.yaml has no such value", path, k)
				continue
			}
			walk(path+"."+k, ps.(map[string]any), sub)
		}
	}
	walk("", schema, values)
}
