package test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
)

// CLIEnv is an API server for testing a dovetailctl command as users run it, through a kubeconfig file.
type CLIEnv struct {
	*Env
	// Kubeconfig is the path of a kubeconfig file for the server.
	Kubeconfig string
}

// StartCLIEnv is StartEnv with the Karpenter and AWS types in the client's scheme, and a kubeconfig file for
// the server in the test's temporary folder.
func StartCLIEnv(t testing.TB) *CLIEnv {
	t.Helper()
	s, err := NewScheme(karpv1.AddToScheme, karpv1alpha1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := StartEnv(t, s)
	return &CLIEnv{Env: env, Kubeconfig: Kubeconfig(t, env.Config)}
}

// Create creates objs as they are (the API server drops their status), failing the test on error.
func (e *CLIEnv) Create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := e.Client.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// CreateWithStatus creates objs and writes the status NodeClaims, Nodes and Pods were built with through the
// status subresource, as the controllers and kubelets would; other objects are created as they are.
func (e *CLIEnv) CreateWithStatus(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		built := o.DeepCopyObject().(client.Object)
		e.Create(t, o)
		switch x := o.(type) {
		case *karpv1.NodeClaim:
			x.Status = built.(*karpv1.NodeClaim).Status
		case *corev1.Node:
			x.Status = built.(*corev1.Node).Status
		case *corev1.Pod:
			x.Status = built.(*corev1.Pod).Status
		default:
			continue
		}
		if err := e.Client.Status().Update(t.Context(), o); err != nil {
			t.Fatalf("status of %T %s: %v", o, o.GetName(), err)
		}
	}
}
