package doctor

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/test"
)

const karpenterHolder = "karpenter-7d9c5b6f4-abcde_0b1e4c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"

func heldLease(ns, holder string, renewedAgo time.Duration) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaderlease.DefaultName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now.Add(-renewedAgo)}}}
}

func deployment(ns, name, image string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "controller", Image: image}}}}}}
}

// TestMigrationLeaseAndController: the migration checks say who holds Karpenter's leader Lease, where, and
// whether Dovetail shares it, and find a Karpenter controller still installed.
func TestMigrationLeaseAndController(t *testing.T) {
	karpImage := "public.ecr.aws/karpenter/controller:1.14.0"
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		check   string
		status  Status
		message []string
		fix     string
	}{
		{name: "Karpenter renews the shared lease", objs: []client.Object{heldLease("kube-system", karpenterHolder, 3*time.Second)},
			check: checkMigrationLease, status: Warn,
			message: []string{"Karpenter holds kube-system/karpenter-leader-election", karpenterHolder, "Dovetail shares this lease and waits"},
			fix:     "remove Karpenter from kube-system"},
		{name: "Karpenter in another namespace", objs: []client.Object{heldLease("karpenter", karpenterHolder, 3*time.Second)},
			check: checkMigrationLease, status: Warn,
			message: []string{"Karpenter holds karpenter/karpenter-leader-election", "in another namespace than Dovetail's kube-system", "Karpenter does not wait for Dovetail"},
			fix:     "install Dovetail and any later Karpenter in one namespace"},
		{name: "Karpenter's lease lapsed", objs: []client.Object{heldLease("kube-system", karpenterHolder, time.Minute)},
			check: checkMigrationLease, status: Pass, message: []string{"lapsed (holder " + karpenterHolder + ", last renewed 1m0s ago)"}},
		{name: "Dovetail leads", objs: []client.Object{heldLease("kube-system", leaderlease.Identity("dovetail-6f7d8-xyz12", "5c1f"), time.Second)},
			check: checkMigrationLease, status: Pass, message: []string{"Dovetail leads with kube-system/karpenter-leader-election"}},
		{name: "Karpenter Deployment running", objs: []client.Object{deployment("karpenter", "karpenter", karpImage, 2)},
			check: checkMigrationController, status: Warn, message: []string{"Deployment karpenter/karpenter runs 2 replicas", karpImage},
			fix: "helm uninstall karpenter -n karpenter"},
		{name: "Karpenter Deployment scaled to 0", objs: []client.Object{deployment("karpenter", "karpenter", karpImage, 0)},
			check: checkMigrationController, status: Pass, message: []string{"scaled to 0"}},
		{name: "Dovetail released as karpenter", objs: []client.Object{deployment("kube-system", "karpenter", "ghcr.io/dovetail/dovetail:0.9.0", 2)},
			check: checkMigrationController, status: Pass, message: []string{"no Karpenter Deployment or pod"}},
		{name: "a bare Karpenter pod", objs: []client.Object{test.Pod("karpenter-x").Namespace("tools").Image(karpImage).Obj()},
			check: checkMigrationController, status: Warn, message: []string{"1 pods run a Karpenter image: tools/karpenter-x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.doctor(t, "dovetail", append(healthy(), tc.objs...)...)
			got := r.Get(tc.check)
			if len(got) != 1 || got[0].Status != tc.status {
				t.Fatalf("check %s: %+v, want one %s\n%s", tc.check, got, tc.status, dump(r))
			}
			for _, m := range tc.message {
				if !strings.Contains(got[0].Message, m) {
					t.Errorf("message %q lacks %q", got[0].Message, m)
				}
			}
			if !strings.Contains(got[0].Fix, tc.fix) {
				t.Errorf("fix %q lacks %q", got[0].Fix, tc.fix)
			}
		})
	}
}

// TestMigrationInstances: an instance Karpenter launched for this cluster (its name tag and
// karpenter.sh/nodepool, no cluster-UID tag) is "not adopted yet" when a NodeClaim here names it, else "left
// alone"; the cluster-uid check leaves both to this check.
func TestMigrationInstances(t *testing.T) {
	e := newEnv(t)
	claimedID := e.runInstance(t, map[string]string{awsv1.TagNodePool: "default", awsv1.TagNodeClaim: "default-karp1"})
	strayID := e.runInstance(t, map[string]string{awsv1.TagNodePool: "default", awsv1.TagNodeClaim: "default-karp2"})
	nc := test.NodeClaim("default-karp1", "default").Obj()
	nc.Status.ProviderID = "aws:///us-west-2a/" + claimedID
	r := e.doctor(t, "dovetail", append(healthy(), nc)...)
	got := r.Get(checkMigrationInstances)
	if len(got) != 1 || got[0].Status != Warn {
		t.Fatalf("check %s: %+v, want one warning\n%s", checkMigrationInstances, got, dump(r))
	}
	for _, m := range []string{
		"1 instances launched by Karpenter are not adopted yet: they are adopted when the controller starts: " + claimedID + " (NodeClaim default-karp1)",
		"1 instances launched by Karpenter, no NodeClaim here: left alone: " + strayID,
	} {
		if !strings.Contains(got[0].Message, m) {
			t.Errorf("message %q lacks %q", got[0].Message, m)
		}
	}
	if uid := r.Get("cluster-uid"); len(uid) != 1 || uid[0].Status != Pass {
		t.Errorf("cluster-uid: %+v, want a pass (Karpenter's instances are the migration check's)", uid)
	}
}
