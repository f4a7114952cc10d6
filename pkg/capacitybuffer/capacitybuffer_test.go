package capacitybuffer

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
)

func i32(v int32) *int32 { return &v }

func template(cpu, mem string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
	}
}

func limits(kv ...string) autoscalingv1beta1.Limits {
	out := autoscalingv1beta1.Limits{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestReplicas(t *testing.T) {
	tpl := template("1", "2Gi")
	cases := []struct {
		name     string
		spec     autoscalingv1beta1.CapacityBufferSpec
		workload *int32
		tpl      corev1.PodTemplateSpec
		want     int32
	}{
		{name: "fixed replicas", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(4)}, want: 4},
		{name: "zero replicas", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(0)}, want: 0},
		{name: "nothing sizes it", want: 0},
		{name: "percentage rounds up", spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(20)}, workload: i32(11), want: 3},
		{name: "percentage exact", spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(20)}, workload: i32(10), want: 2},
		{name: "small percentage is at least 1", spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(1)}, workload: i32(3), want: 1},
		{name: "percentage of zero replicas", spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(50)}, workload: i32(0), want: 0},
		{name: "percentage zero", spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(0)}, workload: i32(10), want: 0},
		{name: "percentage without workload ignored", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(2), Percentage: i32(50)}, want: 2},
		{name: "larger of replicas and percentage (percentage)", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(2), Percentage: i32(50)}, workload: i32(10), want: 5},
		{name: "larger of replicas and percentage (replicas)", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(7), Percentage: i32(50)}, workload: i32(10), want: 7},
		{name: "limits cap replicas", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(10), Limits: limits("cpu", "3")}, want: 3},
		{name: "limits above replicas", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(2), Limits: limits("cpu", "30")}, want: 2},
		{name: "limits alone: tightest resource", spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "8", "memory", "9Gi")}, want: 4},
		{name: "limits alone: fractional floor", spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "2500m")}, want: 2},
		{name: "limits on an unrequested resource constrain nothing", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3), Limits: limits("nvidia.com/gpu", "1")}, want: 3},
		{name: "limits alone on unrequested resource", spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("nvidia.com/gpu", "1")}, want: 0},
		{name: "limits cap percentage", spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(100), Limits: limits("memory", "5Gi")}, workload: i32(10), want: 2},
		{name: "limits below one pod", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3), Limits: limits("cpu", "500m")}, want: 0},
		{name: "init container counts when larger", tpl: func() corev1.PodTemplateSpec {
			t := template("1", "1Gi")
			t.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
			return t
		}(), spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "8")}, want: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := Source{Template: tpl, WorkloadReplicas: tc.workload}
			if tc.tpl.Spec.Containers != nil {
				src.Template = tc.tpl
			}
			if got := Replicas(tc.spec, src); got != tc.want {
				t.Errorf("Replicas = %d, want %d", got, tc.want)
			}
		})
	}
}

func buffer() *autoscalingv1beta1.CapacityBuffer {
	return &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "team", UID: "u1", Generation: 2},
		Spec:       autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "shape"}, Replicas: i32(4)},
	}
}

func TestResolvedStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	cb := buffer()
	st := Resolved(cb, Source{Template: template("1", "2Gi"), PodTemplateName: "shape", PodTemplateGeneration: 3}, now)
	strategy, gen := autoscalingv1beta1.ActiveCapacityStrategy, int64(3)
	want := autoscalingv1beta1.CapacityBufferStatus{
		PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "shape"}, Replicas: i32(4), PodTemplateGeneration: &gen,
		ProvisioningStrategy: &strategy,
		Conditions: []metav1.Condition{{Type: "ReadyForProvisioning", Status: metav1.ConditionTrue, Reason: "Resolved",
			Message: "Pod template resolved; buffer keeps room for 4 pods", ObservedGeneration: 2, LastTransitionTime: now}},
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// A workload-backed buffer reports no PodTemplate.
	cb.Status = st
	cb.Spec = autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}, Percentage: i32(50)}
	st = Resolved(cb, Source{Template: template("1", "2Gi"), WorkloadReplicas: i32(6)}, now)
	if st.PodTemplateRef != nil || st.PodTemplateGeneration != nil || *st.Replicas != 3 {
		t.Errorf("scalableRef status: podTemplateRef %v, generation %v, replicas %d; want nil, nil, 3", st.PodTemplateRef, st.PodTemplateGeneration, *st.Replicas)
	}

	// Another strategy is not acted on.
	other := "example.com/standby"
	cb.Spec.ProvisioningStrategy = &other
	st = Resolved(cb, Source{Template: template("1", "2Gi")}, now)
	c := meta.FindStatusCondition(st.Conditions, "ReadyForProvisioning")
	if st.Replicas != nil || c.Status != metav1.ConditionFalse || c.Reason != autoscalingv1beta1.ReasonUnsupportedStrategy {
		t.Errorf("unsupported strategy: replicas %v, condition %+v", st.Replicas, c)
	}

	// An unresolved reference clears replicas.
	st = Unresolved(buffer(), autoscalingv1beta1.ReasonPodTemplateNotFound, `podtemplate "shape" not found`, now)
	c = meta.FindStatusCondition(st.Conditions, "ReadyForProvisioning")
	if st.Replicas != nil || c.Status != metav1.ConditionFalse || c.Reason != "PodTemplateNotFound" {
		t.Errorf("unresolved: replicas %v, condition %+v", st.Replicas, c)
	}
}

func ready(cb *autoscalingv1beta1.CapacityBuffer, replicas int32) *autoscalingv1beta1.CapacityBuffer {
	cb.Status = Resolved(cb, Source{Template: template("1", "2Gi")}, metav1.Now())
	cb.Status.Replicas = &replicas
	return cb
}

func TestVirtualPods(t *testing.T) {
	tpl := template("1", "2Gi")
	tpl.Spec.NodeName = "somewhere"
	tpl.Spec.PriorityClassName = "high"
	tpl.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "d"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}
	tpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d"}, {Name: "cfg", MountPath: "/c"}}
	pods := VirtualPods(ready(buffer(), 3), tpl)
	if len(pods) != 3 {
		t.Fatalf("got %d pods, want 3", len(pods))
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name+"/"+string(p.UID))
		if !IsVirtual(p) || BufferKey(p) != "team/spare" {
			t.Errorf("%s: IsVirtual %v, BufferKey %q", p.Name, IsVirtual(p), BufferKey(p))
		}
		if p.Spec.NodeName != "" || p.Spec.PriorityClassName != "" || *p.Spec.Priority != VirtualPodPriority {
			t.Errorf("%s: nodeName %q, priorityClassName %q, priority %d", p.Name, p.Spec.NodeName, p.Spec.PriorityClassName, *p.Spec.Priority)
		}
		if diff := cmp.Diff([]corev1.Volume{tpl.Spec.Volumes[1]}, p.Spec.Volumes); diff != "" {
			t.Errorf("volumes (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]corev1.VolumeMount{{Name: "cfg", MountPath: "/c"}}, p.Spec.Containers[0].VolumeMounts); diff != "" {
			t.Errorf("mounts (-want +got):\n%s", diff)
		}
		if p.Labels["app"] != "web" || p.Annotations["a"] != "" {
			t.Errorf("labels %v annotations %v", p.Labels, p.Annotations)
		}
	}
	if diff := cmp.Diff([]string{"team/capacity-buffer-spare-1/u1-1", "team/capacity-buffer-spare-2/u1-2", "team/capacity-buffer-spare-3/u1-3"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	// The template is left alone.
	if tpl.Spec.NodeName != "somewhere" || len(tpl.Spec.Volumes) != 2 || len(tpl.Spec.Containers[0].VolumeMounts) != 2 {
		t.Errorf("template modified: %+v", tpl.Spec)
	}
	// Not ready, or empty: no pods.
	if got := VirtualPods(buffer(), tpl); got != nil {
		t.Errorf("unresolved buffer: %d pods", len(got))
	}
	if got := VirtualPods(ready(buffer(), 0), tpl); got != nil {
		t.Errorf("empty buffer: %d pods", len(got))
	}
	if IsVirtual(&corev1.Pod{}) || BufferKey(&corev1.Pod{}) != "" {
		t.Error("a real pod is virtual")
	}
}

func TestProvisioning(t *testing.T) {
	cases := []struct {
		name string
		cb   *autoscalingv1beta1.CapacityBuffer
		p    Placement
		want string // status/reason, "" for no change
	}{
		{name: "not ready", cb: buffer(), want: "False/NotReadyForProvisioning"},
		{name: "empty", cb: ready(buffer(), 0), want: "False/BufferEmpty"},
		{name: "all on existing", cb: ready(buffer(), 4), p: Placement{Existing: 4}, want: "True/FitsExistingCapacity"},
		{name: "some new", cb: ready(buffer(), 4), p: Placement{Existing: 1, New: 3}, want: "False/RequiresNewCapacity"},
		{name: "some failed", cb: ready(buffer(), 4), p: Placement{Existing: 3, Failed: 1, FailedReason: "too big"}, want: "False/RequiresNewCapacity"},
		{name: "nothing placed", cb: ready(buffer(), 4), want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := Provisioning(tc.cb, tc.p)
			got := ""
			if ok {
				got = string(c.Status) + "/" + c.Reason
			}
			if got != tc.want {
				t.Errorf("got %q, want %q (%s)", got, tc.want, c.Message)
			}
		})
	}
	// SetProvisioning reports a change once.
	cb := ready(buffer(), 4)
	c, _ := Provisioning(cb, Placement{Existing: 4})
	st, changed := SetProvisioning(cb, c, metav1.Now())
	if !changed {
		t.Fatal("first set: no change")
	}
	cb.Status = st
	if _, changed := SetProvisioning(cb, c, metav1.Now()); changed {
		t.Error("same condition again: changed")
	}
}
