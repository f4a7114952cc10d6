package operator

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// TestServerVersionAndKubeDNS: the API server's version is major.minor without a distribution's "+", and the
// DNS address is kube-system/kube-dns's ClusterIP (an error without the Service).
func TestServerVersionAndKubeDNS(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewSimpleClientset()
	kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: "1", Minor: "35+", GitVersion: "v1.35.2-eks-1"}
	if v, err := serverVersion(kube)(ctx); err != nil || v != "1.35" {
		t.Errorf("serverVersion = %q, %v; want 1.35", v, err)
	}
	if _, err := kubeDNS(kube)(ctx); err == nil {
		t.Error("kubeDNS without the Service: no error")
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}}
	if _, err := kube.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ip, err := kubeDNS(kube)(ctx); err != nil || ip != "10.96.0.10" {
		t.Errorf("kubeDNS = %q, %v; want 10.96.0.10", ip, err)
	}
}
