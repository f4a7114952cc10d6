package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
)

// objects are the Kubernetes objects read from the input files.
type objects struct {
	pods        []*corev1.Pod
	daemonSets  []*appsv1.DaemonSet
	pvcs        []*corev1.PersistentVolumeClaim
	pvs         []*corev1.PersistentVolume
	scs         []*storagev1.StorageClass
	nodePools   []*karpv1.NodePool
	nodeClasses []*awsv1.EC2NodeClass
	overlays    []karpv1alpha1.NodeOverlay
	// deviceClasses, claimTemplates and claims are what pods' resource claims are planned against with
	// --ignore-dra-requests=false.
	deviceClasses  []*resourcev1.DeviceClass
	claimTemplates []*resourcev1.ResourceClaimTemplate
	claims         []*resourcev1.ResourceClaim
	generatedIDs   int
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// documents splits a file into JSON documents: a JSON array, a List (kind: List), or multi-document YAML.
// Each document is returned with a label ("document 2", "items[3]") for error messages.
func documents(data []byte) ([]labelled, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("file is empty")
	}
	if trimmed[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, fmt.Errorf("JSON array: %w", err)
		}
		out := make([]labelled, 0, len(items))
		for i, it := range items {
			out = append(out, labelled{fmt.Sprintf("[%d]", i), it})
		}
		return out, nil
	}
	var out []labelled
	for i, doc := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var head struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if head.Kind == "List" || strings.HasSuffix(head.Kind, "List") && head.Items != nil {
			for j, it := range head.Items {
				out = append(out, labelled{fmt.Sprintf("document %d items[%d]", i+1, j), it})
			}
			continue
		}
		out = append(out, labelled{fmt.Sprintf("document %d", i+1), js})
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

type labelled struct {
	where string
	json  []byte
}

// strict decodes one document, rejecting unknown and duplicate fields so typos surface with their field path.
func strict(doc labelled, into any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(doc.json, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("%s: %w", doc.where, err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return fmt.Errorf("%s: %s", doc.where, strings.Join(msgs, "; "))
	}
	return nil
}

// readObjects reads a pods or nodepools file, expanding workloads into their pods.
func (o *objects) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	docs, err := documents(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, doc := range docs {
		if err := o.add(doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

func (o *objects) add(doc labelled) error {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(doc.json, &tm); err != nil {
		return fmt.Errorf("%s: %w", doc.where, err)
	}
	switch tm.Kind {
	case "Pod":
		var p corev1.Pod
		if err := strict(doc, &p); err != nil {
			return err
		}
		o.addPod(&p, doc.where)
	case "Deployment":
		var d appsv1.Deployment
		if err := strict(doc, &d); err != nil {
			return err
		}
		o.expand(d.ObjectMeta, d.Spec.Template, replicas(d.Spec.Replicas), doc.where)
	case "ReplicaSet":
		var r appsv1.ReplicaSet
		if err := strict(doc, &r); err != nil {
			return err
		}
		o.expand(r.ObjectMeta, r.Spec.Template, replicas(r.Spec.Replicas), doc.where)
	case "StatefulSet":
		var s appsv1.StatefulSet
		if err := strict(doc, &s); err != nil {
			return err
		}
		o.expandStatefulSet(&s, doc.where)
	case "Job":
		var j batchv1.Job
		if err := strict(doc, &j); err != nil {
			return err
		}
		n := replicas(j.Spec.Parallelism)
		if j.Spec.Completions != nil && *j.Spec.Completions < int32(n) {
			n = int(*j.Spec.Completions)
		}
		o.expand(j.ObjectMeta, j.Spec.Template, n, doc.where)
	case "DaemonSet":
		var d appsv1.DaemonSet
		if err := strict(doc, &d); err != nil {
			return err
		}
		if d.Namespace == "" {
			d.Namespace = "default"
		}
		o.daemonSets = append(o.daemonSets, &d)
	case "PersistentVolumeClaim":
		var c corev1.PersistentVolumeClaim
		if err := strict(doc, &c); err != nil {
			return err
		}
		if c.Namespace == "" {
			c.Namespace = "default"
		}
		o.pvcs = append(o.pvcs, &c)
	case "PersistentVolume":
		var v corev1.PersistentVolume
		if err := strict(doc, &v); err != nil {
			return err
		}
		o.pvs = append(o.pvs, &v)
	case "StorageClass":
		var sc storagev1.StorageClass
		if err := strict(doc, &sc); err != nil {
			return err
		}
		o.scs = append(o.scs, &sc)
	case "NodePool":
		var np karpv1.NodePool
		if err := strict(doc, &np); err != nil {
			return err
		}
		if err := validateNodePool(&np); err != nil {
			return fmt.Errorf("%s: %w", doc.where, err)
		}
		o.nodePools = append(o.nodePools, &np)
	case "EC2NodeClass":
		var nc awsv1.EC2NodeClass
		if err := strict(doc, &nc); err != nil {
			return err
		}
		o.nodeClasses = append(o.nodeClasses, &nc)
	case "NodeOverlay":
		var no karpv1alpha1.NodeOverlay
		if err := strict(doc, &no); err != nil {
			return err
		}
		if no.Name == "" {
			return fmt.Errorf("%s: NodeOverlay: metadata.name is required", doc.where)
		}
		o.overlays = append(o.overlays, no)
	case "DeviceClass":
		var dc resourcev1.DeviceClass
		if err := strict(doc, &dc); err != nil {
			return err
		}
		o.deviceClasses = append(o.deviceClasses, &dc)
	case "ResourceClaimTemplate":
		var t resourcev1.ResourceClaimTemplate
		if err := strict(doc, &t); err != nil {
			return err
		}
		if t.Namespace == "" {
			t.Namespace = "default"
		}
		defaultClaimSpec(&t.Spec.Spec)
		o.claimTemplates = append(o.claimTemplates, &t)
	case "ResourceClaim":
		var c resourcev1.ResourceClaim
		if err := strict(doc, &c); err != nil {
			return err
		}
		if c.Namespace == "" {
			c.Namespace = "default"
		}
		defaultClaimSpec(&c.Spec)
		o.claims = append(o.claims, &c)
	case "":
		return fmt.Errorf("%s: missing kind", doc.where)
	default:
		return fmt.Errorf("%s: unsupported kind %q (want Pod, Deployment, StatefulSet, ReplicaSet, Job, DaemonSet, PersistentVolumeClaim, PersistentVolume, StorageClass, NodePool, EC2NodeClass, NodeOverlay, DeviceClass, ResourceClaimTemplate or ResourceClaim)", doc.where, tm.Kind)
	}
	return nil
}

// defaultClaimSpec sets what the API server defaults in a claim's requests: allocationMode ExactCount, and a count
// of 1 for it.
func defaultClaimSpec(spec *resourcev1.ResourceClaimSpec) {
	def := func(mode *resourcev1.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourcev1.DeviceAllocationModeExactCount
		}
		if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			def(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			def(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}

func validateNodePool(np *karpv1.NodePool) error {
	if np.Name == "" {
		return fmt.Errorf("NodePool: metadata.name is required")
	}
	for i, r := range np.Spec.Template.Spec.Requirements {
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist,
			corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte:
		default:
			return fmt.Errorf("NodePool %s: spec.template.spec.requirements[%d].operator: unknown operator %q", np.Name, i, r.Operator)
		}
		if r.Key == "" {
			return fmt.Errorf("NodePool %s: spec.template.spec.requirements[%d].key is required", np.Name, i)
		}
	}
	return nil
}

func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

func (o *objects) addPod(p *corev1.Pod, where string) {
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	if p.Name == "" {
		o.generatedIDs++
		p.Name = fmt.Sprintf("%spod-%d", p.GenerateName, o.generatedIDs)
	}
	o.pods = append(o.pods, p)
}

func (o *objects) expand(meta metav1.ObjectMeta, tmpl corev1.PodTemplateSpec, n int, where string) {
	ns := meta.Namespace
	if ns == "" {
		ns = "default"
	}
	for i := 0; i < n; i++ {
		p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		p.Namespace = ns
		p.Name = fmt.Sprintf("%s-%d", meta.Name, i)
		o.pods = append(o.pods, p)
	}
}

// expandStatefulSet adds the replicas and a claim per replica and volumeClaimTemplate (unless the file has it).
func (o *objects) expandStatefulSet(s *appsv1.StatefulSet, where string) {
	ns := s.Namespace
	if ns == "" {
		ns = "default"
	}
	for i := 0; i < replicas(s.Spec.Replicas); i++ {
		p := &corev1.Pod{ObjectMeta: *s.Spec.Template.ObjectMeta.DeepCopy(), Spec: *s.Spec.Template.Spec.DeepCopy()}
		p.Namespace = ns
		p.Name = fmt.Sprintf("%s-%d", s.Name, i)
		for _, vct := range s.Spec.VolumeClaimTemplates {
			claim := fmt.Sprintf("%s-%s-%d", vct.Name, s.Name, i)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
			if !o.hasClaim(ns, claim) {
				c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim}, Spec: *vct.Spec.DeepCopy()}
				o.pvcs = append(o.pvcs, c)
			}
		}
		o.pods = append(o.pods, p)
	}
}

func (o *objects) hasClaim(ns, name string) bool {
	for _, c := range o.pvcs {
		if c.Namespace == ns && c.Name == name {
			return true
		}
	}
	return false
}
