package awssim

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Bootstrap is what the simulator reads from an instance's user data: the kubelet settings that shape its Node.
type Bootstrap struct {
	// Format is "al2023" (MIME with NodeConfig), "bottlerocket" (TOML), "shell" (bootstrap.sh flags), "windows"
	// (PowerShell calling Start-EKSBootstrap.ps1) or "" (none).
	Format      string
	ClusterName string
	// APIServerEndpoint is the API server the node joins (NodeConfig apiServerEndpoint, bootstrap.sh
	// --apiserver-endpoint, Bottlerocket api-server, Windows -APIServerEndpoint); empty when the user data names
	// none. The simulator places the instance's Node in the cluster it names.
	APIServerEndpoint string
	Labels            map[string]string
	Taints            []corev1.Taint
	MaxPods           *int
	KubeReserved      map[string]string
	SystemReserved    map[string]string
	EvictionHard      map[string]string
	// ClusterDNS is the kubelet's cluster DNS address (NodeConfig kubelet clusterDNS, bootstrap.sh
	// --dns-cluster-ip, Bottlerocket cluster-dns-ip, Windows -DNSClusterIP); empty when the user data sets none.
	ClusterDNS string
	// InstanceStoreRAID0 says the node makes its NVMe instance store one RAID0 array for ephemeral storage
	// (NodeConfig instance.localStorage.strategy RAID0, bootstrap.sh --local-disks raid0, a Bottlerocket bootstrap
	// command running "apiclient ephemeral-storage init").
	InstanceStoreRAID0 bool
}

func isBase64(s string) bool {
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// ParseUserData decodes launch template user data (base64) and extracts the bootstrap settings. Empty user data
// gives an empty Bootstrap; unrecognised or malformed user data gives an error.
func ParseUserData(encoded string) (Bootstrap, error) {
	if strings.TrimSpace(encoded) == "" {
		return Bootstrap{}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil {
		return Bootstrap{}, fmt.Errorf("user data is not valid base64: %w", err)
	}
	return parseUserDataText(string(raw))
}

func parseUserDataText(text string) (Bootstrap, error) {
	trimmed := strings.TrimSpace(text)
	switch {
	case strings.HasPrefix(trimmed, "MIME-Version:") || strings.Contains(firstLines(trimmed, 5), "Content-Type: multipart/"):
		return parseMIME(trimmed)
	case strings.HasPrefix(trimmed, "#!"):
		return parseShell(trimmed), nil
	case strings.HasPrefix(trimmed, "apiVersion:") || strings.HasPrefix(trimmed, "---"):
		b := Bootstrap{Format: "al2023"}
		if err := mergeNodeConfig(&b, []byte(trimmed)); err != nil {
			return Bootstrap{}, err
		}
		return b, nil
	case strings.Contains(trimmed, "[settings"):
		return parseBottlerocket(trimmed)
	case strings.HasPrefix(trimmed, "<powershell>"):
		return parseWindows(trimmed), nil
	}
	return Bootstrap{}, errors.New("user data is neither a MIME multi-part document, a NodeConfig, a shell script, Bottlerocket TOML nor Windows PowerShell")
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func parseMIME(text string) (Bootstrap, error) {
	msg, err := mail.ReadMessage(strings.NewReader(strings.ReplaceAll(text, "\r\n", "\n") + "\n"))
	if err != nil {
		return Bootstrap{}, fmt.Errorf("reading MIME user data headers: %w", err)
	}
	mediaType, ps, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return Bootstrap{}, fmt.Errorf("parsing MIME content type: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") || ps["boundary"] == "" {
		return Bootstrap{}, fmt.Errorf("MIME user data has content type %q, want multipart with a boundary", mediaType)
	}
	b := Bootstrap{Format: "al2023"}
	mr := multipart.NewReader(msg.Body, ps["boundary"])
	parts := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Bootstrap{}, fmt.Errorf("reading MIME part %d: %w", parts+1, err)
		}
		parts++
		body, err := io.ReadAll(part)
		if err != nil {
			return Bootstrap{}, fmt.Errorf("reading MIME part %d: %w", parts, err)
		}
		ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch ct {
		case "application/node.eks.aws":
			if err := mergeNodeConfig(&b, body); err != nil {
				return Bootstrap{}, fmt.Errorf("MIME part %d: %w", parts, err)
			}
		case "text/x-shellscript":
			sh := parseShell(string(body))
			mergeBootstrap(&b, sh)
		}
	}
	if parts == 0 {
		return Bootstrap{}, errors.New("MIME user data has no parts")
	}
	return b, nil
}

// nodeConfig is the subset of nodeadm's NodeConfig the simulator reads.
type nodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name              string `json:"name"`
			APIServerEndpoint string `json:"apiServerEndpoint"`
		} `json:"cluster"`
		Kubelet struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
		Instance struct {
			LocalStorage struct {
				Strategy string `json:"strategy"`
			} `json:"localStorage"`
		} `json:"instance"`
	} `json:"spec"`
}

func mergeNodeConfig(b *Bootstrap, doc []byte) error {
	var nc nodeConfig
	if err := yaml.UnmarshalStrict(doc, &nc, yaml.DisallowUnknownFields); err != nil {
		// Unknown fields are legal in NodeConfig; retry leniently but keep syntax errors.
		if err2 := yaml.Unmarshal(doc, &nc); err2 != nil {
			return fmt.Errorf("parsing NodeConfig YAML: %w", err2)
		}
	}
	if nc.Kind != "NodeConfig" || !strings.HasPrefix(nc.APIVersion, "node.eks.aws/") {
		return fmt.Errorf("document is %s %s, want node.eks.aws NodeConfig", nc.APIVersion, nc.Kind)
	}
	if nc.Spec.Cluster.Name != "" {
		b.ClusterName = nc.Spec.Cluster.Name
	}
	if nc.Spec.Instance.LocalStorage.Strategy == "RAID0" {
		b.InstanceStoreRAID0 = true
	}
	if nc.Spec.Cluster.APIServerEndpoint != "" {
		b.APIServerEndpoint = nc.Spec.Cluster.APIServerEndpoint
	}
	cfg := nc.Spec.Kubelet.Config
	if v, ok := cfg["clusterDNS"]; ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return fmt.Errorf("kubelet config clusterDNS %v is not a list of addresses", v)
		}
		b.ClusterDNS = fmt.Sprint(list[0])
	}
	if v, ok := cfg["maxPods"]; ok {
		n, ok := toInt(v)
		if !ok {
			return fmt.Errorf("kubelet config maxPods %v is not an integer", v)
		}
		b.MaxPods = &n
	}
	for key, dst := range map[string]*map[string]string{"kubeReserved": &b.KubeReserved, "systemReserved": &b.SystemReserved, "evictionHard": &b.EvictionHard} {
		if v, ok := cfg[key]; ok {
			m, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("kubelet config %s is not a map", key)
			}
			if *dst == nil {
				*dst = map[string]string{}
			}
			for k, x := range m {
				(*dst)[k] = fmt.Sprint(x)
			}
		}
	}
	// Taints may come as kubelet configuration (Karpenter writes them there) as well as the flag (Dovetail does).
	if v, ok := cfg["registerWithTaints"]; ok {
		taints, err := configTaints(v)
		if err != nil {
			return err
		}
		b.Taints = append(b.Taints, taints...)
	}
	for _, f := range nc.Spec.Kubelet.Flags {
		if err := applyKubeletFlag(b, f); err != nil {
			return err
		}
	}
	return nil
}

// configTaints reads the kubelet configuration's registerWithTaints: a list of {key, value, effect} objects.
func configTaints(v any) ([]corev1.Taint, error) {
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("kubelet config registerWithTaints is not a list")
	}
	var taints []corev1.Taint
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("kubelet config registerWithTaints[%d] is not an object", i)
		}
		key, _ := m["key"].(string)
		value, _ := m["value"].(string)
		effect, _ := m["effect"].(string)
		spec := key + ":" + effect
		if value != "" {
			spec = key + "=" + value + ":" + effect
		}
		t, err := parseTaint(spec)
		if err != nil {
			return nil, fmt.Errorf("kubelet config registerWithTaints[%d]: %w", i, err)
		}
		taints = append(taints, t)
	}
	return taints, nil
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		return int(x), x == float64(int(x))
	case int:
		return x, true
	case int64:
		return int(x), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}

// applyKubeletFlag reads --node-labels, --register-with-taints and --max-pods.
func applyKubeletFlag(b *Bootstrap, flag string) error {
	name, value, _ := strings.Cut(strings.TrimSpace(flag), "=")
	value = strings.Trim(value, `'"`)
	switch name {
	case "--node-labels":
		if value == "" {
			return nil
		}
		for _, kv := range strings.Split(value, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("--node-labels entry %q is not key=value", kv)
			}
			if b.Labels == nil {
				b.Labels = map[string]string{}
			}
			b.Labels[k] = v
		}
	case "--register-with-taints":
		if value == "" {
			return nil
		}
		for _, t := range strings.Split(value, ",") {
			taint, err := parseTaint(t)
			if err != nil {
				return err
			}
			b.Taints = append(b.Taints, taint)
		}
	case "--max-pods":
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("--max-pods %q is not an integer", value)
		}
		b.MaxPods = &n
	}
	return nil
}

// parseTaint reads key[=value]:Effect.
func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect (want key=value:Effect)", s)
	}
	k, v, _ := strings.Cut(kv, "=")
	if k == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q has no key", s)
	}
	switch corev1.TaintEffect(effect) {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return corev1.Taint{}, fmt.Errorf("taint %q has an unknown effect %q", s, effect)
	}
	return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}, nil
}

var shellFlagRE = regexp.MustCompile(`--(node-labels|register-with-taints|max-pods)[= ]('[^']*'|"[^"]*"|[^\s'"]+)`)

// parseShell reads kubelet flags from a bootstrap.sh style script (--kubelet-extra-args).
func parseShell(text string) Bootstrap {
	b := Bootstrap{Format: "shell"}
	for _, m := range shellFlagRE.FindAllStringSubmatch(text, -1) {
		_ = applyKubeletFlag(&b, "--"+m[1]+"="+m[2])
	}
	if m := shellEndpointRE.FindStringSubmatch(text); m != nil {
		b.APIServerEndpoint = strings.Trim(m[1], `'"`)
	}
	b.InstanceStoreRAID0 = shellRAID0RE.MatchString(text)
	if m := shellDNSRE.FindStringSubmatch(text); m != nil {
		b.ClusterDNS = strings.Trim(m[1], `'"`)
	}
	return b
}

// shellDNSRE finds bootstrap.sh's --dns-cluster-ip and Start-EKSBootstrap.ps1's -DNSClusterIP.
var shellDNSRE = regexp.MustCompile(`(?:--dns-cluster-ip|-DNSClusterIP)[= ]('[^']*'|"[^"]*"|[^\s'"]+)`)

var shellRAID0RE = regexp.MustCompile(`--local-disks[= ]['"]?raid0\b`)

var shellEndpointRE = regexp.MustCompile(`--apiserver-endpoint[= ]('[^']*'|"[^"]*"|[^\s'"]+)`)

// parseWindows reads the kubelet flags of the EKS Windows bootstrap (Start-EKSBootstrap.ps1 -KubeletExtraArgs).
func parseWindows(text string) Bootstrap {
	b := parseShell(text)
	b.Format = "windows"
	if m := windowsClusterRE.FindStringSubmatch(text); m != nil {
		b.ClusterName = strings.ReplaceAll(m[1], "''", "'")
	}
	b.APIServerEndpoint = ""
	if m := windowsEndpointRE.FindStringSubmatch(text); m != nil {
		b.APIServerEndpoint = strings.ReplaceAll(m[1], "''", "'")
	}
	return b
}

var (
	windowsClusterRE  = regexp.MustCompile(`-EKSClusterName '((?:[^']|'')*)'`)
	windowsEndpointRE = regexp.MustCompile(`-APIServerEndpoint '((?:[^']|'')*)'`)
)

func mergeBootstrap(dst *Bootstrap, src Bootstrap) {
	for k, v := range src.Labels {
		if dst.Labels == nil {
			dst.Labels = map[string]string{}
		}
		dst.Labels[k] = v
	}
	dst.Taints = append(dst.Taints, src.Taints...)
	if src.APIServerEndpoint != "" && dst.APIServerEndpoint == "" {
		dst.APIServerEndpoint = src.APIServerEndpoint
	}
	if src.MaxPods != nil {
		dst.MaxPods = src.MaxPods
	}
	if src.ClusterDNS != "" {
		dst.ClusterDNS = src.ClusterDNS
	}
	dst.InstanceStoreRAID0 = dst.InstanceStoreRAID0 || src.InstanceStoreRAID0
}

// parseBottlerocket reads the subset of Bottlerocket settings TOML that shapes a Node.
func parseBottlerocket(text string) (Bootstrap, error) {
	b := Bootstrap{Format: "bottlerocket"}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader([]byte(text)))
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "[") {
			if !strings.HasSuffix(l, "]") || strings.HasPrefix(l, "[[") {
				return Bootstrap{}, fmt.Errorf("TOML line %d: bad table header %q", line, l)
			}
			table = normalizeTable(strings.TrimSpace(l[1 : len(l)-1]))
			continue
		}
		key, val, ok := splitTOMLKeyValue(l)
		if !ok {
			return Bootstrap{}, fmt.Errorf("TOML line %d: %q is not key = value", line, l)
		}
		full := key
		if table != "" {
			full = table + "." + key
		}
		switch {
		case table == "settings.kubernetes.node-labels":
			s, err := tomlString(val)
			if err != nil {
				return Bootstrap{}, fmt.Errorf("TOML line %d: %w", line, err)
			}
			if b.Labels == nil {
				b.Labels = map[string]string{}
			}
			b.Labels[key] = s
		case table == "settings.kubernetes.node-taints":
			vals, err := tomlStrings(val)
			if err != nil {
				return Bootstrap{}, fmt.Errorf("TOML line %d: %w", line, err)
			}
			for _, v := range vals {
				value, effect, ok := strings.Cut(v, ":")
				if !ok {
					return Bootstrap{}, fmt.Errorf("TOML line %d: taint %q for %s has no effect", line, v, key)
				}
				spec := key + ":" + effect
				if value != "" {
					spec = key + "=" + value + ":" + effect
				}
				t, err := parseTaint(spec)
				if err != nil {
					return Bootstrap{}, fmt.Errorf("TOML line %d: %w", line, err)
				}
				b.Taints = append(b.Taints, t)
			}
		case strings.HasPrefix(table, "settings.bootstrap-commands.") && key == "commands":
			if strings.Contains(strings.Join(strings.Fields(val), " "), `"ephemeral-storage", "init"`) {
				b.InstanceStoreRAID0 = true
			}
		case full == "settings.kubernetes.max-pods":
			n, err := strconv.Atoi(val)
			if err != nil {
				return Bootstrap{}, fmt.Errorf("TOML line %d: max-pods %q is not an integer", line, val)
			}
			b.MaxPods = &n
		case full == "settings.kubernetes.cluster-name":
			b.ClusterName, _ = tomlString(val)
		case full == "settings.kubernetes.api-server":
			b.APIServerEndpoint, _ = tomlString(val)
		case full == "settings.kubernetes.cluster-dns-ip":
			// A string, or (newer Bottlerocket releases) a list of strings.
			if v, err := tomlString(val); err == nil {
				b.ClusterDNS = v
			} else if l, err := tomlStrings(val); err == nil && len(l) > 0 {
				b.ClusterDNS = l[0]
			}
		case table == "settings.kubernetes.kube-reserved" || table == "settings.kubernetes.system-reserved" ||
			table == "settings.kubernetes.eviction-hard":
			s, err := tomlString(val)
			if err != nil {
				return Bootstrap{}, fmt.Errorf("TOML line %d: %w", line, err)
			}
			dst := map[string]*map[string]string{"settings.kubernetes.kube-reserved": &b.KubeReserved,
				"settings.kubernetes.system-reserved": &b.SystemReserved, "settings.kubernetes.eviction-hard": &b.EvictionHard}[table]
			if *dst == nil {
				*dst = map[string]string{}
			}
			(*dst)[key] = s
		}
	}
	if err := sc.Err(); err != nil {
		return Bootstrap{}, fmt.Errorf("reading TOML: %w", err)
	}
	return b, nil
}

func normalizeTable(t string) string {
	var parts []string
	for _, p := range splitDotted(t) {
		parts = append(parts, unquote(strings.TrimSpace(p)))
	}
	return strings.Join(parts, ".")
}

// splitDotted splits a.b."c.d" on dots outside quotes.
func splitDotted(s string) []string {
	var out []string
	var cur strings.Builder
	quote := rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
			cur.WriteRune(r)
		case r == '.':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, cur.String())
}

func splitTOMLKeyValue(l string) (string, string, bool) {
	if l[0] == '"' || l[0] == '\'' {
		end := strings.IndexRune(l[1:], rune(l[0]))
		if end < 0 {
			return "", "", false
		}
		key := l[1 : end+1]
		rest := strings.TrimSpace(l[end+2:])
		if !strings.HasPrefix(rest, "=") {
			return "", "", false
		}
		return key, strings.TrimSpace(rest[1:]), true
	}
	k, v, ok := strings.Cut(l, "=")
	if !ok {
		return "", "", false
	}
	return strings.TrimSpace(k), strings.TrimSpace(v), true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

func tomlString(v string) (string, error) {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1], nil
	}
	return "", fmt.Errorf("value %s is not a quoted string", v)
}

func tomlStrings(v string) ([]string, error) {
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		inner := strings.TrimSpace(v[1 : len(v)-1])
		if inner == "" {
			return nil, nil
		}
		var out []string
		for _, item := range strings.Split(inner, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			s, err := tomlString(item)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := tomlString(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}
