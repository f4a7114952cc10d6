package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// Checks of a move from Karpenter (docs/migrating-from-karpenter.md).
const (
	checkMigrationLease      = "migration-leader-lease"
	checkMigrationController = "migration-karpenter-controller"
	checkMigrationInstances  = "migration-instances"
)

// migrationLease reports who holds the leader Leases named d.LeaseName in any namespace: Karpenter holding
// the one in the controller's namespace keeps Dovetail waiting (they share it); one in another namespace keeps
// Dovetail waiting too, but Karpenter there does not wait for Dovetail.
func (d *Doctor) migrationLease(ctx context.Context, r *Report) {
	list := &coordinationv1.LeaseList{}
	if err := d.Kube.List(ctx, list, client.MatchingFields{"metadata.name": d.leaseName()}); err != nil {
		r.warn(checkMigrationLease, "allow list on leases (coordination.k8s.io) to whoever runs doctor", "cannot list the Leases named %s: %v", d.leaseName(), err)
		return
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Namespace < list.Items[j].Namespace })
	now := d.Clock.Now()
	var karpenter, fix, others []string
	for i := range list.Items {
		l := &list.Items[i]
		h := leaderlease.HoldOf(l)
		renewed := leaderlease.Renewed(l, now)
		switch {
		case h.Holder == "":
			others = append(others, fmt.Sprintf("%s is free", h.Key()))
		case !renewed:
			others = append(others, fmt.Sprintf("%s lapsed (holder %s, last renewed %s ago)", h.Key(), h.Holder, age(now, h.RenewTime)))
		case h.Kind == leaderlease.KindDovetail:
			others = append(others, fmt.Sprintf("Dovetail leads with %s (holder %s)", h.Key(), h.Holder))
		case l.Namespace == d.namespace():
			karpenter = append(karpenter, fmt.Sprintf("Karpenter holds %s (holder %s, renewed %s ago): Dovetail shares this lease and waits, neither provisioning nor disrupting, until it lapses",
				h.Key(), h.Holder, age(now, h.RenewTime)))
			fix = append(fix, "remove Karpenter from "+l.Namespace+" (helm uninstall, or scale its Deployment to 0): it releases the lease and Dovetail takes over")
		default:
			karpenter = append(karpenter, fmt.Sprintf("Karpenter holds %s (holder %s, renewed %s ago), in another namespace than Dovetail's %s: they do not share a lease, so Karpenter does not wait for Dovetail; Dovetail waits while it is renewed and stops if it is renewed while Dovetail leads",
				h.Key(), h.Holder, age(now, h.RenewTime), d.namespace()))
			fix = append(fix, "remove Karpenter from "+l.Namespace+", and install Dovetail and any later Karpenter in one namespace so that they share "+d.leaseName())
		}
	}
	switch {
	case len(karpenter) > 0:
		r.warn(checkMigrationLease, strings.Join(fix, "; "), "%s", strings.Join(append(karpenter, others...), "; "))
	case len(others) > 0:
		r.pass(checkMigrationLease, "no Karpenter holds a lease named %s: %s", d.leaseName(), strings.Join(others, "; "))
	default:
		r.pass(checkMigrationLease, "no Lease named %s in any namespace: no Karpenter leads", d.leaseName())
	}
}

func age(now, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return now.Sub(t).Round(time.Second)
}

// isKarpenterImage reports whether a container image is Karpenter's controller (not Dovetail's, whatever the
// release is called).
func isKarpenterImage(image string) bool {
	i := strings.ToLower(image)
	return strings.Contains(i, "karpenter") && !strings.Contains(i, "dovetail")
}

// migrationController reports a Karpenter controller still installed: a Deployment named karpenter or running
// a Karpenter image, or pods running one.
func (d *Doctor) migrationController(ctx context.Context, r *Report) {
	var deps appsv1.DeploymentList
	if err := d.Kube.List(ctx, &deps); err != nil {
		r.warn(checkMigrationController, "allow list on deployments to whoever runs doctor", "cannot list Deployments: %v", err)
		return
	}
	var found, fix []string
	seen := map[string]bool{} // namespace/name-prefix of the Deployments found, to leave out their pods
	for _, dep := range deps.Items {
		images := containerImages(dep.Spec.Template.Spec)
		karpImage := ""
		for _, i := range images {
			if isKarpenterImage(i) {
				karpImage = i
			}
		}
		dovetail := false
		for _, i := range images {
			if strings.Contains(strings.ToLower(i), "dovetail") {
				dovetail = true
			}
		}
		if karpImage == "" && (dep.Name != "karpenter" || dovetail) {
			continue
		}
		replicas := int32(1)
		if dep.Spec.Replicas != nil {
			replicas = *dep.Spec.Replicas
		}
		seen[dep.Namespace+"/"+dep.Name+"-"] = true
		if replicas == 0 {
			found = append(found, fmt.Sprintf("Deployment %s/%s is scaled to 0 (image %s)", dep.Namespace, dep.Name, strings.Join(images, ", ")))
			continue
		}
		found = append(found, fmt.Sprintf("Deployment %s/%s runs %d replicas (image %s, %d ready)", dep.Namespace, dep.Name, replicas, strings.Join(images, ", "), dep.Status.ReadyReplicas))
		fix = append(fix, fmt.Sprintf("helm uninstall karpenter -n %s (or kubectl scale deployment %s -n %s --replicas=0)", dep.Namespace, dep.Name, dep.Namespace))
	}
	var pods corev1.PodList
	if err := d.Kube.List(ctx, &pods); err != nil {
		r.warn(checkMigrationController, "allow list on pods to whoever runs doctor", "cannot list pods: %v", err)
		return
	}
	var loose []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		owned := false
		for prefix := range seen {
			if strings.HasPrefix(p.Namespace+"/"+p.Name, prefix) {
				owned = true
			}
		}
		if owned {
			continue
		}
		for _, i := range containerImages(p.Spec) {
			if isKarpenterImage(i) {
				loose = append(loose, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, i))
				break
			}
		}
	}
	sort.Strings(loose)
	if len(loose) > 0 {
		found = append(found, fmt.Sprintf("%d pods run a Karpenter image: %s", len(loose), strings.Join(loose, ", ")))
		fix = append(fix, "remove what runs those pods")
	}
	switch {
	case len(fix) > 0:
		r.warn(checkMigrationController, strings.Join(fix, "; "), "Karpenter is still installed: %s; while it holds the leader lease Dovetail waits", strings.Join(found, "; "))
	case len(found) > 0:
		r.pass(checkMigrationController, "no Karpenter controller runs: %s", strings.Join(found, "; "))
	default:
		r.pass(checkMigrationController, "no Karpenter Deployment or pod in the cluster")
	}
}

func containerImages(spec corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

// migrationInstances reports the instances Karpenter launched for this cluster (its name tag and
// karpenter.sh/nodepool, without this cluster's UID tag): those a NodeClaim here names are adopted when the
// controller starts; the others are left alone.
func (d *Doctor) migrationInstances(r *Report, st *clusterState, launched []ec2types.Instance) {
	if len(launched) == 0 {
		r.pass(checkMigrationInstances, "no instance tagged %s and %s lacks the %s tag: nothing launched by Karpenter is left to adopt",
			d.Cluster.ClusterTag(), awsv1.TagNodePool, tags.ClusterUID)
		return
	}
	claimed := map[string]string{} // instance id -> NodeClaim
	for _, nc := range st.claims {
		if id := instanceID(nc.Status.ProviderID); id != "" {
			claimed[id] = nc.Name
		}
	}
	var adopt, alone []string
	for _, i := range launched {
		id := aws.ToString(i.InstanceId)
		if nc, ok := claimed[id]; ok {
			adopt = append(adopt, fmt.Sprintf("%s (NodeClaim %s)", id, nc))
		} else {
			alone = append(alone, id)
		}
	}
	sort.Strings(adopt)
	sort.Strings(alone)
	var msgs, fix []string
	if len(adopt) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d instances launched by Karpenter are not adopted yet: they are adopted when the controller starts: %s", len(adopt), strings.Join(adopt, ", ")))
		fix = append(fix, "start Dovetail (once Karpenter's lease lapses) and run doctor again: it tags them "+tags.ClusterUID)
	}
	if len(alone) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d instances launched by Karpenter, no NodeClaim here: left alone: %s", len(alone), strings.Join(alone, ", ")))
		fix = append(fix, "terminate them if nothing uses them (aws ec2 terminate-instances --instance-ids ...)")
	}
	r.warn(checkMigrationInstances, strings.Join(fix, "; "), "%s", strings.Join(msgs, "; "))
}

// instanceID is the instance id of an AWS provider ID (aws:///us-west-2a/i-0123), empty for anything else.
func instanceID(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

func (d *Doctor) leaseName() string {
	if d.LeaseName != "" {
		return d.LeaseName
	}
	return leaderlease.DefaultName
}

func (d *Doctor) namespace() string {
	if d.Namespace != "" {
		return d.Namespace
	}
	return "kube-system"
}
