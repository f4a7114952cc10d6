package scheduling_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestNewNodeVolumeLimits: new nodes take no more volumes of a CSI driver than their instance type attaches
// (InstanceType.VolumeLimits), so 40 pods with a volume each on a driver limited to 10 get 4 nodes in one plan,
// and the options of each NodeClaim are only types that attach its volumes.
func TestNewNodeVolumeLimits(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "ebs"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wffc}
	big := test.SchedInstanceType("big.4xlarge", "16", "64Gi").Zones(0.50, "a").Obj()
	big.VolumeLimits = map[string]int{"ebs.csi.aws.com": 10}
	bigger := test.SchedInstanceType("bigger.8xlarge", "32", "128Gi").Zones(1.00, "a").Obj()
	bigger.VolumeLimits = map[string]int{"ebs.csi.aws.com": 25}
	other := test.SchedInstanceType("other.4xlarge", "16", "64Gi").Zones(0.55, "a").Obj()
	other.VolumeLimits = map[string]int{"other.csi": 1}

	for _, tc := range []struct {
		name   string
		types  []*cloudprovider.InstanceType
		pods   int
		claims int
	}{
		{"40 pods, limit 10: four nodes", []*cloudprovider.InstanceType{big}, 40, 4},
		{"a limit of another driver does not count", []*cloudprovider.InstanceType{other}, 40, 2},
		{"no limit: resources decide", []*cloudprovider.InstanceType{test.SchedInstanceType("big.4xlarge", "16", "64Gi").Zones(0.50, "a").Obj()}, 40, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			var pvcs []*corev1.PersistentVolumeClaim
			for i := 0; i < tc.pods; i++ {
				name := fmt.Sprintf("p%02d", i)
				pods = append(pods, test.SchedPod(name).Requests("500m", "1Gi").PVC("data-"+name).Obj())
				pvcs = append(pvcs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-" + name},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &sc.Name}})
			}
			snap := &scheduling.Snapshot{Pods: pods, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
				InstanceTypes:          map[string][]*cloudprovider.InstanceType{"default": tc.types},
				PersistentVolumeClaims: pvcs, StorageClasses: []*storagev1.StorageClass{sc}}
			plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("unschedulable: %v", plan.Unschedulable)
			}
			if len(plan.NodeClaims) != tc.claims {
				t.Errorf("%d nodeclaims, want %d", len(plan.NodeClaims), tc.claims)
			}
			for _, nc := range plan.NodeClaims {
				for _, o := range nc.InstanceTypeOptions {
					for _, it := range tc.types {
						if it.Name == o.Name && it.VolumeLimits["ebs.csi.aws.com"] > 0 && len(nc.Pods) > it.VolumeLimits["ebs.csi.aws.com"] {
							t.Errorf("%s has %d volumes but may launch as %s, which attaches %d", nc.Name, len(nc.Pods), o.Name, it.VolumeLimits["ebs.csi.aws.com"])
						}
					}
				}
			}
		})
	}

	// Both types offered: the NodeClaims that hold more than 10 volumes keep only the type that attaches them.
	t.Run("options narrowed to the types that attach the volumes", func(t *testing.T) {
		var pods []*corev1.Pod
		var pvcs []*corev1.PersistentVolumeClaim
		for i := 0; i < 40; i++ {
			name := fmt.Sprintf("p%02d", i)
			pods = append(pods, test.SchedPod(name).Requests("500m", "1Gi").PVC("data-"+name).Obj())
			pvcs = append(pvcs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-" + name},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &sc.Name}})
		}
		snap := &scheduling.Snapshot{Pods: pods, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
			InstanceTypes:          map[string][]*cloudprovider.InstanceType{"default": {big, bigger}},
			PersistentVolumeClaims: pvcs, StorageClasses: []*storagev1.StorageClass{sc}}
		plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("unschedulable: %v", plan.Unschedulable)
		}
		placed := 0
		for _, nc := range plan.NodeClaims {
			placed += len(nc.Pods)
			for _, o := range nc.InstanceTypeOptions {
				if o.Name == "big.4xlarge" && len(nc.Pods) > 10 {
					t.Errorf("%s holds %d volumes and may launch as big.4xlarge (10)", nc.Name, len(nc.Pods))
				}
			}
		}
		if placed != 40 {
			t.Errorf("%d pods planned, want 40", placed)
		}
	})
}
