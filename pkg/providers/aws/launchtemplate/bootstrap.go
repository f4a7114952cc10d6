package launchtemplate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/netip"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// AMI families with generated bootstrap.
const (
	FamilyAL2023       = "AL2023"
	FamilyAL2          = "AL2"
	FamilyBottlerocket = "Bottlerocket"
	FamilyCustom       = "Custom"
	FamilyWindows2019  = "Windows2019"
	FamilyWindows2022  = "Windows2022"
	FamilyWindows2025  = "Windows2025"
)

// mimeBoundary is fixed so the same inputs give byte-identical user data (and so the same launch template).
const mimeBoundary = "//dovetail//"

// Bootstrap is everything the node's bootstrap needs: how to reach the cluster, the kubelet settings, and the
// labels and taints the kubelet registers the Node with.
type Bootstrap struct {
	Family      string
	ClusterName string
	// Endpoint is the API server URL; CABundle its base64-encoded PEM CA.
	Endpoint string
	CABundle string
	// ServiceCIDR is the cluster's service CIDR (nodeadm's cluster.cidr): the IPv6 range in an IPv6 cluster.
	ServiceCIDR string
	Kubelet     KubeletConfig
	Labels      map[string]string
	// Taints are registered by the kubelet; the karpenter.sh/unregistered taint must be among them.
	Taints []corev1.Taint
	// UserData is the EC2NodeClass's own user data, merged with the generated part.
	UserData string
	// InstanceStoreRAID0 (instanceStorePolicy: RAID0) has the node combine its NVMe instance store disks into one
	// RAID0 array for containerd, the kubelet and pod logs (AL2023 nodeadm, AL2 bootstrap.sh, Bottlerocket
	// bootstrap commands; Windows and Custom have no such switch).
	InstanceStoreRAID0 bool
}

// KubeletConfig is the kubelet configuration written into user data. Empty fields are left to the OS defaults.
type KubeletConfig struct {
	MaxPods                     int32             `json:"maxPods,omitempty"`
	ClusterDNS                  []string          `json:"clusterDNS,omitempty"`
	KubeReserved                map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved              map[string]string `json:"systemReserved,omitempty"`
	EvictionHard                map[string]string `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32            `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32            `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32            `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool             `json:"cpuCFSQuota,omitempty"`
	PodsPerCore                 *int32            `json:"podsPerCore,omitempty"`
	// Extra are upstream KubeletConfiguration fields Dovetail does not model, by JSON name; they are written into
	// the node's kubelet configuration unchanged (AL2023, AL2, Windows). Bottlerocket has no place for them.
	Extra map[string]json.RawMessage `json:"-"`
}

// kubeletConfigFields breaks the recursion of KubeletConfig.MarshalJSON.
type kubeletConfigFields KubeletConfig

// MarshalJSON writes the modelled fields and Extra in one object; a modelled field wins over an Extra entry of
// the same name.
func (k KubeletConfig) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(kubeletConfigFields(k))
	if err != nil || len(k.Extra) == 0 {
		return raw, err
	}
	all := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	for name, v := range k.Extra {
		if _, modelled := all[name]; !modelled {
			all[name] = v
		}
	}
	return json.Marshal(all)
}

// extraJSON is Extra as one JSON object, "" when there is none.
func (k KubeletConfig) extraJSON() (string, error) {
	if len(k.Extra) == 0 {
		return "", nil
	}
	b, err := json.Marshal(k.Extra)
	if err != nil {
		return "", fmt.Errorf("encoding kubelet configuration fields: %w", err)
	}
	return string(b), nil
}

// Render renders the user data (not yet base64-encoded) for the family.
func (b Bootstrap) Render() (string, error) {
	switch b.Family {
	case FamilyAL2023:
		return b.al2023()
	case FamilyAL2:
		return b.al2()
	case FamilyBottlerocket:
		return b.bottlerocket()
	case FamilyWindows2019, FamilyWindows2022, FamilyWindows2025:
		return b.windows()
	case FamilyCustom:
		return b.UserData, nil
	}
	return "", fmt.Errorf("AMI family %q has no bootstrap support (supported: AL2023, AL2, Bottlerocket, Windows2019, Windows2022, Windows2025, Custom)", b.Family)
}

// nodeConfig is nodeadm's NodeConfig document (node.eks.aws/v1alpha1).
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster  nodeConfigCluster   `json:"cluster"`
	Kubelet  nodeConfigKubelet   `json:"kubelet"`
	Instance *nodeConfigInstance `json:"instance,omitempty"`
}

// nodeConfigInstance is nodeadm's instance section: how the instance's local storage is set up.
type nodeConfigInstance struct {
	LocalStorage nodeConfigLocalStorage `json:"localStorage"`
}

type nodeConfigLocalStorage struct {
	Strategy string `json:"strategy"`
}

type nodeConfigCluster struct {
	Name                 string `json:"name"`
	APIServerEndpoint    string `json:"apiServerEndpoint"`
	CertificateAuthority string `json:"certificateAuthority"`
	CIDR                 string `json:"cidr,omitempty"`
}

type nodeConfigKubelet struct {
	Config KubeletConfig `json:"config"`
	Flags  []string      `json:"flags"`
}

// part is one MIME part of a multipart user data document.
type part struct {
	contentType string
	body        []byte
}

func (b Bootstrap) kubeletFlags() []string {
	flags := []string{}
	if l := LabelsFlag(b.Labels); l != "" {
		flags = append(flags, "--node-labels="+l)
	}
	if t := TaintsFlag(b.Taints); t != "" {
		flags = append(flags, "--register-with-taints="+t)
	}
	return flags
}

func (b Bootstrap) al2023() (string, error) {
	doc := nodeConfig{
		APIVersion: "node.eks.aws/v1alpha1",
		Kind:       "NodeConfig",
		Spec: nodeConfigSpec{
			Cluster: nodeConfigCluster{
				Name: b.ClusterName, APIServerEndpoint: b.Endpoint, CertificateAuthority: b.CABundle, CIDR: b.ServiceCIDR,
			},
			Kubelet: nodeConfigKubelet{Config: b.Kubelet, Flags: b.kubeletFlags()},
		},
	}
	if b.InstanceStoreRAID0 {
		doc.Spec.Instance = &nodeConfigInstance{LocalStorage: nodeConfigLocalStorage{Strategy: "RAID0"}}
	}
	body, err := yaml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding NodeConfig: %w", err)
	}
	user, err := userParts(b.UserData, "application/node.eks.aws")
	if err != nil {
		return "", err
	}
	// The user's parts go first: nodeadm merges NodeConfigs in order, so cluster identity, labels and taints
	// written by Dovetail win over user values.
	return writeMIME(append(user, part{contentType: "application/node.eks.aws", body: body}))
}

func (b Bootstrap) al2() (string, error) {
	var sb strings.Builder
	sb.WriteString("#!/bin/bash -xe\n")
	sb.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	extra, err := b.Kubelet.extraJSON()
	if err != nil {
		return "", err
	}
	if extra != "" {
		// bootstrap.sh edits the AMI's kubelet-config.json in place, so fields merged in before it stay.
		sb.WriteString("KUBELET_CONFIG=/etc/kubernetes/kubelet/kubelet-config.json\n")
		fmt.Fprintf(&sb, "echo \"$(jq --argjson extra %s '. * $extra' \"$KUBELET_CONFIG\")\" > \"$KUBELET_CONFIG\"\n", shellQuote(extra))
	}
	fmt.Fprintf(&sb, "/etc/eks/bootstrap.sh %s --apiserver-endpoint %s --b64-cluster-ca %s",
		shellQuote(b.ClusterName), shellQuote(b.Endpoint), shellQuote(b.CABundle))
	if b.ipv6DNS() {
		// bootstrap.sh then takes the node's IPv6 address as its node IP and the DNS address as IPv6.
		sb.WriteString(" --ip-family ipv6")
	}
	if len(b.Kubelet.ClusterDNS) > 0 {
		fmt.Fprintf(&sb, " --dns-cluster-ip %s", shellQuote(b.Kubelet.ClusterDNS[0]))
	}
	if b.Kubelet.MaxPods > 0 {
		sb.WriteString(" --use-max-pods false")
	}
	args := b.kubeletExtraArgs()
	fmt.Fprintf(&sb, " --kubelet-extra-args %s", shellQuote(strings.Join(args, " ")))
	if b.InstanceStoreRAID0 {
		sb.WriteString(" --local-disks raid0")
	}
	sb.WriteString("\n")
	user, err := userParts(b.UserData, "text/x-shellscript")
	if err != nil {
		return "", err
	}
	return writeMIME(append(user, part{contentType: `text/x-shellscript; charset="us-ascii"`, body: []byte(sb.String())}))
}

// ipv6DNS says whether the node's cluster DNS address is an IPv6 address: the mark of an IPv6 cluster.
func (b Bootstrap) ipv6DNS() bool {
	if len(b.Kubelet.ClusterDNS) == 0 {
		return false
	}
	a, err := netip.ParseAddr(b.Kubelet.ClusterDNS[0])
	return err == nil && a.Unmap().Is6()
}

// kubeletExtraArgs are the kubelet flags of bootstrap scripts that take them as one string (AL2's bootstrap.sh,
// Windows' Start-EKSBootstrap.ps1): labels and taints, then max pods, reserved resources and hard eviction.
func (b Bootstrap) kubeletExtraArgs() []string {
	args := b.kubeletFlags()
	if b.Kubelet.MaxPods > 0 {
		args = append(args, "--max-pods="+strconv.Itoa(int(b.Kubelet.MaxPods)))
	}
	if r := mapFlag(b.Kubelet.KubeReserved, "=", ","); r != "" {
		args = append(args, "--kube-reserved="+r)
	}
	if r := mapFlag(b.Kubelet.SystemReserved, "=", ","); r != "" {
		args = append(args, "--system-reserved="+r)
	}
	if r := mapFlag(b.Kubelet.EvictionHard, "<", ","); r != "" {
		args = append(args, "--eviction-hard="+r)
	}
	if r := mapFlag(b.Kubelet.EvictionSoft, "<", ","); r != "" {
		args = append(args, "--eviction-soft="+r)
	}
	if r := mapFlag(b.Kubelet.EvictionSoftGracePeriod, "=", ","); r != "" {
		args = append(args, "--eviction-soft-grace-period="+r)
	}
	for _, f := range []struct {
		flag string
		v    *int32
	}{
		{"--eviction-max-pod-grace-period", b.Kubelet.EvictionMaxPodGracePeriod},
		{"--image-gc-high-threshold", b.Kubelet.ImageGCHighThresholdPercent},
		{"--image-gc-low-threshold", b.Kubelet.ImageGCLowThresholdPercent},
	} {
		if f.v != nil {
			args = append(args, f.flag+"="+strconv.Itoa(int(*f.v)))
		}
	}
	if b.Kubelet.CPUCFSQuota != nil {
		args = append(args, "--cpu-cfs-quota="+strconv.FormatBool(*b.Kubelet.CPUCFSQuota))
	}
	return args
}

// windows renders the PowerShell user data of the EKS-optimized Windows AMIs: the node class's own PowerShell
// (without its <powershell> tags) runs first, then the AMI's Start-EKSBootstrap.ps1 with the cluster and the
// kubelet flags.
func (b Bootstrap) windows() (string, error) {
	var sb strings.Builder
	sb.WriteString("<powershell>\n")
	if user := strings.TrimSpace(b.UserData); user != "" {
		user = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(user, "<powershell>"), "</powershell>"))
		if strings.Contains(user, "<powershell>") || strings.Contains(user, "</powershell>") {
			return "", fmt.Errorf("windows userData: at most one <powershell> block, at the start and end, is supported")
		}
		sb.WriteString(user)
		sb.WriteString("\n")
	}
	sb.WriteString("[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n")
	fmt.Fprintf(&sb, "& $EKSBootstrapScriptFile -EKSClusterName %s -APIServerEndpoint %s -Base64ClusterCA %s",
		psQuote(b.ClusterName), psQuote(b.Endpoint), psQuote(b.CABundle))
	args := b.kubeletExtraArgs()
	fmt.Fprintf(&sb, " -KubeletExtraArgs %s", psQuote(strings.Join(args, " ")))
	if len(b.Kubelet.ClusterDNS) > 0 {
		fmt.Fprintf(&sb, " -DNSClusterIP %s", psQuote(b.Kubelet.ClusterDNS[0]))
	}
	sb.WriteString("\n")
	extra, err := b.Kubelet.extraJSON()
	if err != nil {
		return "", err
	}
	if extra != "" {
		// Start-EKSBootstrap.ps1 writes the kubelet configuration and starts the kubelet; the extra fields are
		// merged into it afterwards and the kubelet restarted to read them.
		sb.WriteString("$KubeletConfigFile = \"$env:ProgramData\\kubernetes\\kubelet-config.json\"\n")
		sb.WriteString("$KubeletConfig = Get-Content $KubeletConfigFile -Raw | ConvertFrom-Json\n")
		fmt.Fprintf(&sb, "$KubeletExtra = %s | ConvertFrom-Json\n", psQuote(extra))
		sb.WriteString("foreach ($f in $KubeletExtra.PSObject.Properties) { $KubeletConfig | Add-Member -NotePropertyName $f.Name -NotePropertyValue $f.Value -Force }\n")
		sb.WriteString("$KubeletConfig | ConvertTo-Json -Depth 20 | Set-Content $KubeletConfigFile\n")
		sb.WriteString("Restart-Service kubelet\n")
	}
	sb.WriteString("</powershell>\n")
	return sb.String(), nil
}

// psQuote quotes s as a PowerShell single-quoted string.
func psQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func mapFlag(m map[string]string, sep, join string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+sep+m[k])
	}
	return strings.Join(parts, join)
}

// LabelsFlag renders labels as the kubelet's --node-labels value, sorted by key.
func LabelsFlag(labels map[string]string) string { return mapFlag(labels, "=", ",") }

// TaintsFlag renders taints as the kubelet's --register-with-taints value (key=value:Effect or key:Effect).
func TaintsFlag(taints []corev1.Taint) string {
	parts := make([]string, 0, len(taints))
	for _, t := range taints {
		if t.Value != "" {
			parts = append(parts, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		} else {
			parts = append(parts, fmt.Sprintf("%s:%s", t.Key, t.Effect))
		}
	}
	return strings.Join(parts, ",")
}

// userParts splits the user's user data into MIME parts: a multipart document keeps its parts; anything else
// becomes one part of the given default content type (a NodeConfig document is recognised by its kind).
func userParts(userData, defaultType string) ([]part, error) {
	if strings.TrimSpace(userData) == "" {
		return nil, nil
	}
	msg, err := mail.ReadMessage(strings.NewReader(userData))
	if err == nil {
		mediaType, params, perr := mime.ParseMediaType(msg.Header.Get("Content-Type"))
		if perr == nil && strings.HasPrefix(mediaType, "multipart/") {
			return readMultipart(msg.Body, params["boundary"])
		}
	}
	ct := defaultType
	switch {
	case strings.HasPrefix(userData, "#!"):
		ct = `text/x-shellscript; charset="us-ascii"`
	case strings.Contains(userData, "kind: NodeConfig"):
		ct = "application/node.eks.aws"
	}
	return []part{{contentType: ct, body: []byte(userData)}}, nil
}

func readMultipart(r io.Reader, boundary string) ([]part, error) {
	if boundary == "" {
		return nil, fmt.Errorf("userData is a MIME multipart document without a boundary")
	}
	mr := multipart.NewReader(r, boundary)
	var out []part
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading userData MIME part %d: %w", len(out)+1, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading userData MIME part %d: %w", len(out)+1, err)
		}
		ct := p.Header.Get("Content-Type")
		if ct == "" {
			ct = "text/plain"
		}
		out = append(out, part{contentType: ct, body: body})
	}
}

func writeMIME(parts []part) (string, error) {
	var buf bytes.Buffer
	buf.WriteString("MIME-Version: 1.0\n")
	fmt.Fprintf(&buf, "Content-Type: multipart/mixed; boundary=%q\n\n", mimeBoundary)
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(mimeBoundary); err != nil {
		return "", err
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", p.contentType)
		pw, err := w.CreatePart(h)
		if err != nil {
			return "", err
		}
		if _, err := pw.Write(p.body); err != nil {
			return "", err
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// bottlerocket renders TOML settings: the user's settings with Dovetail's cluster, kubelet, label and taint
// keys written over them.
func (b Bootstrap) bottlerocket() (string, error) {
	doc, err := parseTOML(b.UserData)
	if err != nil {
		return "", fmt.Errorf("parsing Bottlerocket userData: %w", err)
	}
	k := "settings.kubernetes"
	doc.set(k, "cluster-name", tomlString(b.ClusterName))
	doc.set(k, "api-server", tomlString(b.Endpoint))
	doc.set(k, "cluster-certificate", tomlString(b.CABundle))
	if len(b.Kubelet.ClusterDNS) > 0 {
		doc.set(k, "cluster-dns-ip", tomlString(b.Kubelet.ClusterDNS[0]))
	}
	if b.Kubelet.MaxPods > 0 {
		doc.set(k, "max-pods", strconv.Itoa(int(b.Kubelet.MaxPods)))
	}
	for _, tm := range []struct {
		table string
		m     map[string]string
	}{
		{k + ".kube-reserved", b.Kubelet.KubeReserved},
		{k + ".system-reserved", b.Kubelet.SystemReserved},
		{k + ".eviction-hard", b.Kubelet.EvictionHard},
		{k + ".eviction-soft", b.Kubelet.EvictionSoft},
		{k + ".eviction-soft-grace-period", b.Kubelet.EvictionSoftGracePeriod},
		{k + ".node-labels", b.Labels},
	} {
		for _, key := range slices.Sorted(maps.Keys(tm.m)) {
			doc.set(tm.table, tomlString(key), tomlString(tm.m[key]))
		}
	}
	for _, f := range []struct {
		key    string
		v      *int32
		quoted bool
	}{
		{"eviction-max-pod-grace-period", b.Kubelet.EvictionMaxPodGracePeriod, false},
		{"image-gc-high-threshold-percent", b.Kubelet.ImageGCHighThresholdPercent, true},
		{"image-gc-low-threshold-percent", b.Kubelet.ImageGCLowThresholdPercent, true},
	} {
		switch {
		case f.v != nil && f.quoted:
			// Bottlerocket takes the GC thresholds as strings.
			doc.set(k, f.key, tomlString(strconv.Itoa(int(*f.v))))
		case f.v != nil:
			doc.set(k, f.key, strconv.Itoa(int(*f.v)))
		}
	}
	if b.Kubelet.CPUCFSQuota != nil {
		doc.set(k, "cpu-cfs-quota-enforced", strconv.FormatBool(*b.Kubelet.CPUCFSQuota))
	}
	if b.InstanceStoreRAID0 {
		// Bottlerocket builds the array and binds the container, kubelet and pod log directories onto it at boot.
		t := `settings.bootstrap-commands."000-mount-instance-storage"`
		doc.set(t, "commands", `[["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]]`)
		doc.set(t, "mode", tomlString("always"))
		doc.set(t, "essential", "true")
	}
	taints := map[string][]string{}
	for _, t := range b.Taints {
		taints[t.Key] = append(taints[t.Key], t.Value+":"+string(t.Effect))
	}
	for _, key := range slices.Sorted(maps.Keys(taints)) {
		vals := make([]string, 0, len(taints[key]))
		for _, v := range taints[key] {
			vals = append(vals, tomlString(v))
		}
		doc.set(k+".node-taints", tomlString(key), "["+strings.Join(vals, ", ")+"]")
	}
	var unsupported []string
	for _, name := range slices.Sorted(maps.Keys(b.Kubelet.Extra)) {
		setting, ok := bottlerocketKubeletSettings[name]
		if !ok {
			unsupported = append(unsupported, name)
			continue
		}
		// Strings, numbers, booleans and lists of strings are written the same in JSON and TOML.
		doc.set(k, setting, string(b.Kubelet.Extra[name]))
	}
	if len(unsupported) > 0 {
		return "", fmt.Errorf("kubelet fields %s have no Bottlerocket setting (Bottlerocket configures its kubelet only through settings.kubernetes); remove them or use another AMI family",
			strings.Join(unsupported, ", "))
	}
	return doc.String(), nil
}

// bottlerocketKubeletSettings maps upstream KubeletConfiguration fields to the settings.kubernetes keys
// Bottlerocket renders into its kubelet configuration.
var bottlerocketKubeletSettings = map[string]string{
	"allowedUnsafeSysctls":            "allowed-unsafe-sysctls",
	"containerLogMaxFiles":            "container-log-max-files",
	"containerLogMaxSize":             "container-log-max-size",
	"cpuManagerPolicy":                "cpu-manager-policy",
	"cpuManagerReconcilePeriod":       "cpu-manager-reconcile-period",
	"eventBurst":                      "event-burst",
	"eventRecordQPS":                  "event-qps",
	"kubeAPIBurst":                    "kube-api-burst",
	"kubeAPIQPS":                      "kube-api-qps",
	"memoryManagerPolicy":             "memory-manager-policy",
	"podPidsLimit":                    "pod-pids-limit",
	"registryBurst":                   "registry-burst",
	"registryPullQPS":                 "registry-qps",
	"seccompDefault":                  "seccomp-default",
	"serverTLSBootstrap":              "server-tls-bootstrap",
	"shutdownGracePeriod":             "shutdown-grace-period",
	"shutdownGracePeriodCriticalPods": "shutdown-grace-period-for-critical-pods",
	"topologyManagerPolicy":           "topology-manager-policy",
	"topologyManagerScope":            "topology-manager-scope",
}

// tomlDoc is the small TOML subset Bottlerocket settings use: [table] headers and single-line key = value pairs.
// Values are kept as raw TOML text; order of tables and keys is kept for user content and sorted for ours.
type tomlDoc struct {
	order  []string
	tables map[string]*tomlTable
}

type tomlTable struct {
	keys   []string
	values map[string]string
}

func parseTOML(s string) (*tomlDoc, error) {
	doc := &tomlDoc{tables: map[string]*tomlTable{}}
	table := ""
	sc := bufio.NewScanner(strings.NewReader(s))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[[") {
			return nil, fmt.Errorf("line %d: arrays of tables are not supported", n)
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("line %d: malformed table header %q", n, line)
			}
			table = normalizeKey(strings.TrimSpace(line[1 : len(line)-1]))
			doc.table(table)
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: expected key = value, got %q", n, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "" || value == "" {
			return nil, fmt.Errorf("line %d: empty key or value in %q", n, line)
		}
		if strings.HasPrefix(value, "[") && !strings.HasSuffix(value, "]") ||
			strings.HasPrefix(value, `"""`) || strings.HasPrefix(value, "'''") {
			return nil, fmt.Errorf("line %d: multi-line values are not supported", n)
		}
		// A dotted key outside quotes (a.b = 1) belongs to the sub-table a.
		if !strings.HasPrefix(key, `"`) {
			if i := strings.LastIndex(key, "."); i > 0 {
				doc.set(joinKey(table, normalizeKey(key[:i])), key[i+1:], value)
				continue
			}
		}
		doc.set(table, key, value)
	}
	return doc, sc.Err()
}

func normalizeKey(k string) string {
	parts := strings.Split(k, ".")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return strings.Join(parts, ".")
}

func joinKey(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func (d *tomlDoc) table(name string) *tomlTable {
	t, ok := d.tables[name]
	if !ok {
		t = &tomlTable{values: map[string]string{}}
		d.tables[name] = t
		d.order = append(d.order, name)
	}
	return t
}

func (d *tomlDoc) set(table, key, value string) {
	t := d.table(table)
	if _, ok := t.values[key]; !ok {
		t.keys = append(t.keys, key)
	}
	t.values[key] = value
}

func (d *tomlDoc) String() string {
	var sb strings.Builder
	for i, name := range d.order {
		t := d.tables[name]
		if len(t.keys) == 0 {
			continue
		}
		if i > 0 || name != "" {
			if sb.Len() > 0 {
				sb.WriteString("\n")
			}
			if name != "" {
				fmt.Fprintf(&sb, "[%s]\n", name)
			}
		}
		for _, k := range t.keys {
			fmt.Fprintf(&sb, "%s = %s\n", k, t.values[k])
		}
	}
	return sb.String()
}

func tomlString(s string) string { return strconv.Quote(s) }
