package termination_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestBlockingVolumeAttachments(t *testing.T) {
	claims := map[types.NamespacedName]string{
		{Namespace: "default", Name: "data"}:          "pv-data",
		{Namespace: "kube-system", Name: "agent"}:     "pv-agent",
		{Namespace: "default", Name: "shared"}:        "pv-shared",
		{Namespace: "kube-system", Name: "shared-ds"}: "pv-shared",
	}
	cases := []struct {
		name string
		vas  []*storagev1.VolumeAttachment
		pods []*corev1.Pod
		want []string
	}{
		{
			name: "attachments of other nodes are ignored",
			vas:  []*storagev1.VolumeAttachment{test.VolumeAttachmentFor("va-other", "node-2", "pv-data")},
		},
		{
			name: "attachment of a drained pod's volume blocks",
			vas:  []*storagev1.VolumeAttachment{test.VolumeAttachmentFor("va-data", "node-1", "pv-data")},
			pods: []*corev1.Pod{test.DrainPod("db").Claim("data").Obj()},
			want: []string{"va-data"},
		},
		{
			name: "attachment with no pod left (pod already evicted) blocks",
			vas:  []*storagev1.VolumeAttachment{test.VolumeAttachmentFor("va-b", "node-1", "pv-data"), test.VolumeAttachmentFor("va-a", "node-1", "pv-x")},
			want: []string{"va-a", "va-b"},
		},
		{
			name: "attachment used only by a DaemonSet pod does not block",
			vas:  []*storagev1.VolumeAttachment{test.VolumeAttachmentFor("va-agent", "node-1", "pv-agent")},
			pods: []*corev1.Pod{test.DrainPod("agent").Namespace("kube-system").DaemonSet("agent").Claim("agent").Obj()},
		},
		{
			name: "attachment shared by a DaemonSet pod and a drained pod blocks",
			vas:  []*storagev1.VolumeAttachment{test.VolumeAttachmentFor("va-shared", "node-1", "pv-shared")},
			pods: []*corev1.Pod{
				test.DrainPod("agent").Namespace("kube-system").DaemonSet("agent").Claim("shared-ds").Obj(),
				test.DrainPod("app").Claim("shared").Obj(),
			},
			want: []string{"va-shared"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := termination.BlockingVolumeAttachments("node-1", tc.vas, tc.pods, claims, t0)
			var gotNames []string
			for _, va := range got {
				gotNames = append(gotNames, va.Name)
			}
			if diff := cmp.Diff(tc.want, gotNames); diff != "" {
				t.Errorf("BlockingVolumeAttachments (-want +got):\n%s", diff)
			}
		})
	}
}
