package awssim

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

const al2023UserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: dovetail
    apiServerEndpoint: https://127.0.0.1:6443
    certificateAuthority: Q0E=
    cidr: 10.100.0.0/16
  kubelet:
    config:
      maxPods: 58
      clusterDNS:
      - 10.100.0.10
      kubeReserved:
        cpu: 80m
        memory: 893Mi
    flags:
    - --node-labels=karpenter.sh/nodepool=default,karpenter.sh/capacity-type=spot
    - --register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=gpu:NoSchedule

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo user part

--//--
`

// al2023ConfigTaintsUserData carries its taints in the kubelet configuration (registerWithTaints), as Karpenter
// writes them, and its labels in a quoted flag.
const al2023ConfigTaintsUserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
metadata:
  creationTimestamp: null
spec:
  cluster:
    apiServerEndpoint: https://127.0.0.1:6443
    certificateAuthority: Q0E=
    cidr: 10.100.0.0/16
    name: dovetail
  containerd: {}
  instance:
    localStorage: {}
  kubelet:
    config:
      clusterDNS:
      - 10.100.0.10
      maxPods: 29
      registerWithTaints:
      - effect: NoExecute
        key: karpenter.sh/unregistered
      - effect: NoSchedule
        key: dedicated
        value: gpu
    flags:
    - --node-labels="karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default"

--//--
`

const bottlerocketUserData = `[settings.kubernetes]
api-server = 'https://127.0.0.1:6443'
cluster-name = 'dovetail'
max-pods = 110

[settings.kubernetes.node-labels]
'karpenter.sh/nodepool' = 'br'
"team" = "a"

[settings.kubernetes.node-taints]
'karpenter.sh/unregistered' = [':NoExecute']
"dedicated" = ["gpu:NoSchedule", "gpu:NoExecute"]

[settings.kubernetes.eviction-hard]
'memory.available' = '5%'
`

const al2UserData = `#!/bin/bash
/etc/eks/bootstrap.sh 'dovetail' --kubelet-extra-args '--node-labels="karpenter.sh/nodepool=al2" --register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=29'
`

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func intp(n int) *int { return &n }

func TestParseUserData(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Bootstrap
		wantErr bool
	}{
		{name: "empty", in: "", want: Bootstrap{}},
		{name: "al2023 MIME", in: b64(al2023UserData), want: Bootstrap{
			Format: "al2023", ClusterName: "dovetail", APIServerEndpoint: "https://127.0.0.1:6443", MaxPods: intp(58), ClusterDNS: "10.100.0.10",
			Labels:       map[string]string{"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot"},
			Taints:       []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: "NoExecute"}, {Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}},
			KubeReserved: map[string]string{"cpu": "80m", "memory": "893Mi"},
		}},
		{name: "al2023 taints in the kubelet config", in: b64(al2023ConfigTaintsUserData), want: Bootstrap{
			Format: "al2023", ClusterName: "dovetail", APIServerEndpoint: "https://127.0.0.1:6443", MaxPods: intp(29), ClusterDNS: "10.100.0.10",
			Labels: map[string]string{"karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/capacity-type": "on-demand",
				"karpenter.sh/nodepool": "default"},
			Taints: []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: "NoExecute"}, {Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}},
		}},
		{name: "bad registerWithTaints", in: b64("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      registerWithTaints: [{key: a, effect: Sometimes}]\n"), wantErr: true},
		{name: "bottlerocket", in: b64(bottlerocketUserData), want: Bootstrap{
			Format: "bottlerocket", ClusterName: "dovetail", APIServerEndpoint: "https://127.0.0.1:6443", MaxPods: intp(110),
			Labels: map[string]string{"karpenter.sh/nodepool": "br", "team": "a"},
			Taints: []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: "NoExecute"},
				{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}, {Key: "dedicated", Value: "gpu", Effect: "NoExecute"}},
			EvictionHard: map[string]string{"memory.available": "5%"},
		}},
		{name: "al2 bootstrap.sh", in: b64(al2UserData), want: Bootstrap{
			Format: "shell", MaxPods: intp(29),
			Labels: map[string]string{"karpenter.sh/nodepool": "al2"},
			Taints: []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: "NoExecute"}},
		}},
		{name: "windows powershell", in: b64("<powershell>\n[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n" +
			"& $EKSBootstrapScriptFile -EKSClusterName 'dove''tail' -APIServerEndpoint 'https://x' -Base64ClusterCA 'Q0E='" +
			" -KubeletExtraArgs '--node-labels=karpenter.sh/nodepool=win,node.kubernetes.io/windows-build=10.0.26100" +
			" --register-with-taints=karpenter.sh/unregistered:NoExecute --max-pods=29' -DNSClusterIP '10.100.0.10'\n</powershell>\n"),
			want: Bootstrap{
				Format: "windows", ClusterName: "dove'tail", APIServerEndpoint: "https://x", MaxPods: intp(29), ClusterDNS: "10.100.0.10",
				Labels: map[string]string{"karpenter.sh/nodepool": "win", "node.kubernetes.io/windows-build": "10.0.26100"},
				Taints: []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: "NoExecute"}},
			}},
		{name: "bootstrap.sh endpoint", in: b64("#!/bin/bash\n/etc/eks/bootstrap.sh 'c' --apiserver-endpoint 'https://10.0.0.1:443' --b64-cluster-ca 'Q0E='\n"),
			want: Bootstrap{Format: "shell", APIServerEndpoint: "https://10.0.0.1:443"}},
		{name: "not base64", in: "%%%", wantErr: true},
		{name: "gibberish", in: b64("hello world"), wantErr: true},
		{name: "bad taint effect", in: b64("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [\"--register-with-taints=a=b:Sometimes\"]\n"), wantErr: true},
		{name: "wrong kind", in: b64("apiVersion: v1\nkind: Pod\n"), wantErr: true},
		{name: "bad yaml in MIME", in: b64("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: application/node.eks.aws\n\n: : :\n  - [\n--B--\n"), wantErr: true},
		{name: "bad TOML", in: b64("[settings.kubernetes.node-labels]\nno equals here\n"), wantErr: true},
		{name: "bad max pods", in: b64("[settings.kubernetes]\nmax-pods = lots\n"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUserData(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("bootstrap (-want +got):\n%s", d)
			}
		})
	}
}
