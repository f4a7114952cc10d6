package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"text/template"

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

// render executes the chart's templates the way `helm template` does, with overrides merged over values.yaml,
// and returns each manifest file's output. It is a stand-in for Helm (not available here): it implements the
// template functions the chart uses, with Sprig's and Helm's semantics, and fails on any other function, so a
// template that uses a new function must teach it here first.
func render(overrides map[string]any) (map[string]string, error) {
	values, err := readValues()
	if err != nil {
		return nil, err
	}
	values = merge(values, overrides)
	if err := validateValues(values); err != nil {
		return nil, err
	}
	chart := map[string]any{}
	b, err := os.ReadFile(filepath.Join(chartDir(), "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	top := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": "dovetail", "Namespace": "kube-system", "Service": "Helm"},
		"Chart":   map[string]any{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
		"Files":   chartFiles(chartDir()),
	}
	files, err := templateFiles()
	if err != nil {
		return nil, err
	}
	root := template.New("chart").Option("missingkey=zero")
	root.Funcs(funcs(root))
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := root.New(name).Parse(files[name]); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, err)
		}
	}
	out := map[string]string{}
	for _, name := range names {
		if strings.HasPrefix(name, "_") {
			continue
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, top); err != nil {
			return nil, fmt.Errorf("rendering %s: %w", name, err)
		}
		out[name] = strings.ReplaceAll(buf.String(), "<no value>", "")
	}
	return out, nil
}

// files is Helm's .Files: the chart's files other than templates, by path relative to the chart.
type files map[string][]byte

// Get returns one file's content, or "" when there is none (as Helm does).
func (f files) Get(name string) string { return string(f[name]) }

// chartFiles reads every file of the chart outside templates/.
func chartFiles(dir string) files {
	out := files{}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == "templates" {
				return filepath.SkipDir
			}
			return nil
		}
		if b, err := os.ReadFile(path); err == nil {
			out[filepath.ToSlash(rel)] = b
		}
		return nil
	})
	return out
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

// funcs are the template functions the chart uses, with Sprig's and Helm's behaviour.
func funcs(root *template.Template) template.FuncMap {
	return template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var buf bytes.Buffer
			err := root.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		},
		"required": func(msg string, v any) (any, error) {
			if empty(v) {
				return nil, errors.New(msg)
			}
			return v, nil
		},
		"default": func(d any, v ...any) any {
			if len(v) == 0 || empty(v[0]) {
				return d
			}
			return v[0]
		},
		"toYaml": func(v any) (string, error) {
			b, err := yaml.Marshal(v)
			return strings.TrimSuffix(string(b), "\n"), err
		},
		"fromYaml": func(s string) (map[string]any, error) {
			m := map[string]any{}
			err := yaml.Unmarshal([]byte(s), &m)
			return m, err
		},
		"indent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"quote": func(v ...any) string {
			var out []string
			for _, s := range v {
				if s != nil {
					out = append(out, fmt.Sprintf("%q", fmt.Sprint(s)))
				}
			}
			return strings.Join(out, " ")
		},
		"trunc": func(n int, s string) string {
			if n >= 0 && len(s) > n {
				return s[:n]
			}
			return s
		},
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
		"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"upper":      strings.ToUpper,
		"substr": func(start, end int, s string) string {
			if start < 0 {
				return s[:end]
			}
			if end < 0 || end > len(s) {
				return s[start:]
			}
			return s[start:end]
		},
		"join": func(sep string, list []any) string {
			parts := make([]string, len(list))
			for i, v := range list {
				parts[i] = fmt.Sprint(v)
			}
			return strings.Join(parts, sep)
		},
		"list":   func(v ...any) []any { return v },
		"append": func(list []any, v any) []any { return append(append([]any{}, list...), v) },
		"dict": func(kv ...any) (map[string]any, error) {
			if len(kv)%2 != 0 {
				return nil, errors.New("dict: odd number of arguments")
			}
			m := map[string]any{}
			for i := 0; i < len(kv); i += 2 {
				m[fmt.Sprint(kv[i])] = kv[i+1]
			}
			return m, nil
		},
		"set": func(m map[string]any, k string, v any) map[string]any { m[k] = v; return m },
		"hasKey": func(m map[string]any, k string) bool {
			_, ok := m[k]
			return ok
		},
		"deepCopy": func(v any) (any, error) {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			var out any
			err = json.Unmarshal(b, &out)
			return out, err
		},
		"kindIs": func(kind string, v any) bool {
			if v == nil {
				return kind == "invalid"
			}
			return reflect.ValueOf(v).Kind().String() == kind
		},
	}
}

// empty is Sprig's notion of an unset value: nil, false, 0, "" or an empty collection.
func empty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
