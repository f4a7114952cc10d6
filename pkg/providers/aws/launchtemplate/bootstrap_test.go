package launchtemplate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func sample(family, userData string) Bootstrap {
	return Bootstrap{
		Family:      family,
		ClusterName: "dovetail",
		Endpoint:    "https://127.0.0.1:6443",
		CABundle:    "Q0E=",
		ServiceCIDR: "10.100.0.0/16",
		Kubelet: KubeletConfig{
			MaxPods:      29,
			ClusterDNS:   []string{"10.100.0.10"},
			KubeReserved: map[string]string{"cpu": "70m", "memory": "574Mi"},
			EvictionHard: map[string]string{"memory.available": "100Mi"},
		},
		Labels: map[string]string{"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot"},
		Taints: []corev1.Taint{
			{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
			{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule},
		},
		UserData: userData,
	}
}

func TestAL2023UserData(t *testing.T) {
	cases := []struct {
		name     string
		userData string
		want     string
	}{
		{
			name: "generated NodeConfig only",
			want: `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//dovetail//"

--//dovetail//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    apiServerEndpoint: https://127.0.0.1:6443
    certificateAuthority: Q0E=
    cidr: 10.100.0.0/16
    name: dovetail
  kubelet:
    config:
      clusterDNS:
      - 10.100.0.10
      evictionHard:
        memory.available: 100Mi
      kubeReserved:
        cpu: 70m
        memory: 574Mi
      maxPods: 29
    flags:
    - --node-labels=karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default
    - --register-with-taints=karpenter.sh/unregistered:NoExecute,team=a:NoSchedule

--//dovetail//--
`,
		},
		{
			name:     "user shell script becomes a part before ours",
			userData: "#!/bin/bash\necho hi\n",
			want: `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//dovetail//"

--//dovetail//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo hi

--//dovetail//
Content-Type: application/node.eks.aws

`,
		},
		{
			name: "user MIME parts are kept",
			userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\n" +
				"Content-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance: {}\n--BOUNDARY--\n",
			want: `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//dovetail//"

--//dovetail//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance: {}
--//dovetail//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sample(FamilyAL2023, tc.userData).Render()
			if err != nil {
				t.Fatalf("UserData: %v", err)
			}
			got = strings.ReplaceAll(got, "\r\n", "\n")
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("user data does not start as expected (-want +got):\n%s", cmp.Diff(tc.want, got))
			}
		})
	}
}

func TestBottlerocketUserData(t *testing.T) {
	cases := []struct {
		name     string
		userData string
		want     string
		wantErr  string
	}{
		{
			name: "generated",
			want: `[settings.kubernetes]
cluster-name = "dovetail"
api-server = "https://127.0.0.1:6443"
cluster-certificate = "Q0E="
cluster-dns-ip = "10.100.0.10"
max-pods = 29

[settings.kubernetes.kube-reserved]
"cpu" = "70m"
"memory" = "574Mi"

[settings.kubernetes.eviction-hard]
"memory.available" = "100Mi"

[settings.kubernetes.node-labels]
"karpenter.sh/capacity-type" = "spot"
"karpenter.sh/nodepool" = "default"

[settings.kubernetes.node-taints]
"karpenter.sh/unregistered" = [":NoExecute"]
"team" = ["a:NoSchedule"]
`,
		},
		{
			name: "user settings merged, cluster identity and labels overwritten",
			userData: `[settings.host-containers.admin]
enabled = true

[settings.kubernetes]
cluster-name = "other"
image-gc-high-threshold-percent = 80

[settings.kubernetes.node-labels]
"team" = "a"
"karpenter.sh/nodepool" = "wrong"
`,
			want: `[settings.host-containers.admin]
enabled = true

[settings.kubernetes]
cluster-name = "dovetail"
image-gc-high-threshold-percent = 80
api-server = "https://127.0.0.1:6443"
cluster-certificate = "Q0E="
cluster-dns-ip = "10.100.0.10"
max-pods = 29

[settings.kubernetes.node-labels]
"team" = "a"
"karpenter.sh/nodepool" = "default"
"karpenter.sh/capacity-type" = "spot"

[settings.kubernetes.kube-reserved]
"cpu" = "70m"
"memory" = "574Mi"

[settings.kubernetes.eviction-hard]
"memory.available" = "100Mi"

[settings.kubernetes.node-taints]
"karpenter.sh/unregistered" = [":NoExecute"]
"team" = ["a:NoSchedule"]
`,
		},
		{name: "multi-line array rejected", userData: "[settings]\nx = [\n1]\n", wantErr: "multi-line"},
		{name: "garbage rejected", userData: "[settings\n", wantErr: "malformed table header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sample(FamilyBottlerocket, tc.userData).Render()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("UserData: %v", err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("TOML (-want +got):\n%s", d)
			}
		})
	}
}

func TestAL2AndCustomUserData(t *testing.T) {
	got, err := sample(FamilyAL2, "").Render()
	if err != nil {
		t.Fatalf("AL2: %v", err)
	}
	for _, want := range []string{
		"/etc/eks/bootstrap.sh 'dovetail' --apiserver-endpoint 'https://127.0.0.1:6443' --b64-cluster-ca 'Q0E='",
		"--node-labels=karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default",
		"--register-with-taints=karpenter.sh/unregistered:NoExecute,team=a:NoSchedule",
		"--max-pods=29",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("AL2 user data lacks %q:\n%s", want, got)
		}
	}
	custom, err := sample(FamilyCustom, "raw").Render()
	if err != nil || custom != "raw" {
		t.Errorf("Custom user data = %q, %v; want the user's data unchanged", custom, err)
	}
	if _, err := sample("Windows2016", "").Render(); err == nil {
		t.Errorf("Windows2016 user data succeeded, want an unsupported-family error")
	}
}

func TestWindowsUserData(t *testing.T) {
	for _, fam := range []string{FamilyWindows2019, FamilyWindows2022, FamilyWindows2025} {
		t.Run(fam, func(t *testing.T) {
			got, err := sample(fam, "<powershell>\nWrite-Host 'before bootstrap'\n</powershell>").Render()
			if err != nil {
				t.Fatal(err)
			}
			want := "<powershell>\n" +
				"Write-Host 'before bootstrap'\n" +
				"[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n" +
				"& $EKSBootstrapScriptFile -EKSClusterName 'dovetail' -APIServerEndpoint 'https://127.0.0.1:6443' -Base64ClusterCA 'Q0E='" +
				" -KubeletExtraArgs '--node-labels=karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default" +
				" --register-with-taints=karpenter.sh/unregistered:NoExecute,team=a:NoSchedule --max-pods=29" +
				" --kube-reserved=cpu=70m,memory=574Mi --eviction-hard=memory.available<100Mi' -DNSClusterIP '10.100.0.10'\n" +
				"</powershell>\n"
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("user data (-want +got):\n%s", d)
			}
		})
	}
	if _, err := sample(FamilyWindows2025, "<powershell>a</powershell><powershell>b</powershell>").Render(); err == nil {
		t.Errorf("two <powershell> blocks were accepted")
	}
}

// TestKubeletExtraFields checks that upstream kubelet fields Dovetail does not model reach every family's kubelet
// configuration, and that Bottlerocket refuses the ones it has no setting for.
func TestKubeletExtraFields(t *testing.T) {
	extra := map[string]json.RawMessage{
		"serializeImagePulls": json.RawMessage(`false`),
		"logging":             json.RawMessage(`{"format":"json"}`),
	}
	cases := []struct {
		family string
		extra  map[string]json.RawMessage
		want   []string
		err    string
	}{
		{family: FamilyAL2023, extra: extra, want: []string{"serializeImagePulls: false", "logging:", "format: json", "maxPods: 29"}},
		{family: FamilyAL2, extra: extra, want: []string{
			`echo "$(jq --argjson extra '{"logging":{"format":"json"},"serializeImagePulls":false}' '. * $extra' "$KUBELET_CONFIG")" > "$KUBELET_CONFIG"`}},
		{family: FamilyWindows2025, extra: extra, want: []string{
			`$KubeletExtra = '{"logging":{"format":"json"},"serializeImagePulls":false}' | ConvertFrom-Json`, "Restart-Service kubelet\n</powershell>"}},
		{family: FamilyBottlerocket, extra: map[string]json.RawMessage{"containerLogMaxSize": json.RawMessage(`"50Mi"`), "podPidsLimit": json.RawMessage(`4096`)},
			want: []string{`container-log-max-size = "50Mi"`, "pod-pids-limit = 4096"}},
		{family: FamilyBottlerocket, extra: extra, err: "kubelet fields logging, serializeImagePulls have no Bottlerocket setting"},
	}
	for _, tc := range cases {
		t.Run(tc.family+" "+tc.err, func(t *testing.T) {
			b := sample(tc.family, "")
			b.Kubelet.Extra = tc.extra
			got, err := b.Render()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("user data lacks %q:\n%s", w, got)
				}
			}
		})
	}
	// A modelled field wins over an extra entry of the same name.
	k := KubeletConfig{MaxPods: 10, Extra: map[string]json.RawMessage{"maxPods": json.RawMessage(`99`)}}
	if out, err := json.Marshal(k); err != nil || string(out) != `{"maxPods":10}` {
		t.Errorf("Marshal = %s, %v; want the modelled maxPods", out, err)
	}
}

// TestModelledKubeletFieldsEveryFamily: the kubelet fields Dovetail reads besides maxPods and the reservations
// (soft eviction, grace periods, image GC thresholds, CFS quota) reach the kubelet of AL2 and Windows as flags
// and of Bottlerocket as settings.kubernetes keys, since Karpenter v1.15 holds those families to them.
func TestModelledKubeletFieldsEveryFamily(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	quota := false
	set := func(b Bootstrap) Bootstrap {
		b.Kubelet.EvictionSoft = map[string]string{"memory.available": "10%"}
		b.Kubelet.EvictionSoftGracePeriod = map[string]string{"memory.available": "1m0s"}
		b.Kubelet.EvictionMaxPodGracePeriod = i32(60)
		b.Kubelet.ImageGCHighThresholdPercent, b.Kubelet.ImageGCLowThresholdPercent = i32(85), i32(80)
		b.Kubelet.CPUCFSQuota = &quota
		return b
	}
	flags := []string{"--eviction-soft=memory.available<10%", "--eviction-soft-grace-period=memory.available=1m0s",
		"--eviction-max-pod-grace-period=60", "--image-gc-high-threshold=85", "--image-gc-low-threshold=80", "--cpu-cfs-quota=false"}
	settings := []string{`[settings.kubernetes.eviction-soft]`, `"memory.available" = "10%"`, `[settings.kubernetes.eviction-soft-grace-period]`,
		`"memory.available" = "1m0s"`, `eviction-max-pod-grace-period = 60`, `image-gc-high-threshold-percent = "85"`,
		`image-gc-low-threshold-percent = "80"`, `cpu-cfs-quota-enforced = false`}
	for _, tc := range []struct {
		family string
		want   []string
	}{{FamilyAL2, flags}, {FamilyWindows2022, flags}, {FamilyBottlerocket, settings}} {
		out, err := set(sample(tc.family, "")).Render()
		if err != nil {
			t.Fatalf("%s: %v", tc.family, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s user data lacks %q:\n%s", tc.family, w, out)
			}
		}
	}
}
