package provisioning

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
)

// Values of the zone label of karpenter_scheduler_pending_pods_by_effective_zone_count besides zone names.
const (
	// ZoneFlexible is a pending pod that may go to more than one zone.
	ZoneFlexible = "flexible"
	// ZoneNone is a pending pod whose zone constraints leave no zone.
	ZoneNone = "none"
)

// ebsZoneLabel is the zone key the EBS CSI driver writes in volume node affinity and allowed topologies.
const ebsZoneLabel = "topology.ebs.csi.aws.com/zone"

// zoneSet is a set of zones; nil is "any zone".
type zoneSet map[string]bool

// pendingPodsByEffectiveZone counts the pending pods of a pass by the zone their own requirements (node selector
// and the first required node affinity term) and their volumes' zones leave them: the zone when one is left,
// ZoneFlexible when several are or nothing names a zone, ZoneNone when the two disagree.
func pendingPodsByEffectiveZone(in solver.Input) map[string]int {
	volumes := newVolumeZones(in)
	out := map[string]int{}
	for _, p := range in.Pods {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			continue
		}
		out[effectiveZone(p, volumes)]++
	}
	return out
}

// effectiveZone is one pod's label value (see pendingPodsByEffectiveZone).
func effectiveZone(p *corev1.Pod, volumes *volumeZones) string {
	allowed := podZoneRequirements(p)
	if allowed.never {
		return ZoneNone
	}
	named := allowed.in
	volumeZones := volumes.of(p)
	if named == nil {
		named = volumeZones
	}
	if named == nil {
		return ZoneFlexible
	}
	var left []string
	for zone := range named {
		if allowed.allows(zone) && (volumeZones == nil || volumeZones[zone]) {
			left = append(left, zone)
		}
	}
	switch len(left) {
	case 0:
		return ZoneNone
	case 1:
		return left[0]
	}
	return ZoneFlexible
}

// zoneRequirement is what a pod's own requirements say of its zone: the zones it may go to (nil: any), and the
// zones it may not.
type zoneRequirement struct {
	in    zoneSet
	notIn zoneSet
	// never is a requirement that no zone satisfies (DoesNotExist on the zone key, or In with no value).
	never bool
}

func (r zoneRequirement) allows(zone string) bool {
	return !r.never && (r.in == nil || r.in[zone]) && !r.notIn[zone]
}

// podZoneRequirements reads the zone key in the pod's node selector and the first term of its required node
// affinity.
func podZoneRequirements(p *corev1.Pod) zoneRequirement {
	var r zoneRequirement
	restrict := func(values []string) {
		next := zoneSet{}
		for _, v := range values {
			if r.in == nil || r.in[v] {
				next[v] = true
			}
		}
		r.in = next
	}
	for _, key := range []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone} {
		if v, ok := p.Spec.NodeSelector[key]; ok {
			restrict([]string{v})
		}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) > 0 {
			for _, req := range terms[0].MatchExpressions {
				if req.Key != corev1.LabelTopologyZone && req.Key != corev1.LabelFailureDomainBetaZone {
					continue
				}
				switch req.Operator {
				case corev1.NodeSelectorOpIn:
					restrict(req.Values)
				case corev1.NodeSelectorOpNotIn:
					if r.notIn == nil {
						r.notIn = zoneSet{}
					}
					for _, v := range req.Values {
						r.notIn[v] = true
					}
				case corev1.NodeSelectorOpDoesNotExist:
					r.never = true
				}
			}
		}
	}
	if r.in != nil && len(r.in) == 0 {
		r.never = true
	}
	return r
}

// volumeZones finds the zones the volumes of pending pods allow, from the pass's claims, volumes and classes.
type volumeZones struct {
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func newVolumeZones(in solver.Input) *volumeZones {
	v := &volumeZones{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{},
		classes: map[string]*storagev1.StorageClass{}}
	for _, c := range in.PersistentVolumeClaims {
		v.claims[c.Namespace+"/"+c.Name] = c
	}
	for _, pv := range in.PersistentVolumes {
		v.volumes[pv.Name] = pv
	}
	for _, sc := range in.StorageClasses {
		v.classes[sc.Name] = sc
	}
	return v
}

// of returns the zones every zonal volume of the pod allows (nil when none restricts the zone): a bound volume's
// node affinity, or an unbound claim's storage class's allowed topologies.
func (v *volumeZones) of(p *corev1.Pod) zoneSet {
	var out zoneSet
	for _, vol := range p.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		claim := v.claims[p.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName]
		if claim == nil {
			continue
		}
		var zones zoneSet
		if pv := v.volumes[claim.Spec.VolumeName]; claim.Spec.VolumeName != "" && pv != nil {
			zones = pvZones(pv)
		} else if claim.Spec.StorageClassName != nil {
			if sc := v.classes[*claim.Spec.StorageClassName]; sc != nil {
				zones = classZones(sc)
			}
		}
		if zones == nil {
			continue
		}
		if out == nil {
			out = zones
			continue
		}
		for z := range out {
			if !zones[z] {
				delete(out, z)
			}
		}
	}
	return out
}

func isZoneKey(key string) bool {
	return key == corev1.LabelTopologyZone || key == corev1.LabelFailureDomainBetaZone || key == ebsZoneLabel
}

// pvZones are the zones of a volume's node affinity terms (any of them); nil when no term names a zone.
func pvZones(pv *corev1.PersistentVolume) zoneSet {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var out zoneSet
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			if isZoneKey(req.Key) && req.Operator == corev1.NodeSelectorOpIn {
				if out == nil {
					out = zoneSet{}
				}
				for _, z := range req.Values {
					out[z] = true
				}
			}
		}
	}
	return out
}

// classZones are the zones of a storage class's allowed topologies; nil when they name none.
func classZones(sc *storagev1.StorageClass) zoneSet {
	var out zoneSet
	for _, term := range sc.AllowedTopologies {
		for _, req := range term.MatchLabelExpressions {
			if isZoneKey(req.Key) {
				if out == nil {
					out = zoneSet{}
				}
				for _, z := range req.Values {
					out[z] = true
				}
			}
		}
	}
	return out
}

// recordEffectiveZones sets karpenter_scheduler_pending_pods_by_effective_zone_count from the pass's pending pods,
// dropping the zones of the pass before.
func (c *Controller) recordEffectiveZones(in solver.Input) {
	g := c.deps.Metrics.SchedulerPendingPodsByEffectiveZone
	g.Reset()
	counts := pendingPodsByEffectiveZone(in)
	zones := make([]string, 0, len(counts))
	for z := range counts {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	for _, z := range zones {
		g.WithLabelValues(Name, z).Set(float64(counts[z]))
	}
}
