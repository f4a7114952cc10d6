package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// volumeUse is one persistent volume a pod attaches, by CSI driver (or provisioner) and a unique id.
type volumeUse struct {
	driver string
	id     string
}

type volumeIndex struct {
	pvcs map[string]*corev1.PersistentVolumeClaim
	pvs  map[string]*corev1.PersistentVolume
	scs  map[string]*storagev1.StorageClass
}

func newVolumeIndex(snap *Snapshot) *volumeIndex {
	v := &volumeIndex{pvcs: map[string]*corev1.PersistentVolumeClaim{}, pvs: map[string]*corev1.PersistentVolume{},
		scs: map[string]*storagev1.StorageClass{}}
	for _, c := range snap.PersistentVolumeClaims {
		if c != nil {
			v.pvcs[c.Namespace+"/"+c.Name] = c
		}
	}
	for _, p := range snap.PersistentVolumes {
		if p != nil {
			v.pvs[p.Name] = p
		}
	}
	for _, sc := range snap.StorageClasses {
		if sc != nil {
			v.scs[sc.Name] = sc
		}
	}
	return v
}

// podVolumes returns the node requirements the pod's volumes impose (bound volumes' node affinity, the storage
// class's allowed topologies for WaitForFirstConsumer claims), the volumes it attaches, and a reason when a
// volume makes the pod unschedulable.
func (s *solver) podVolumes(pod *corev1.Pod) (Requirements, []volumeUse, string) {
	reqs := Requirements{}
	var uses []volumeUse
	for _, vol := range pod.Spec.Volumes {
		claimName := ""
		var scName *string
		switch {
		case vol.PersistentVolumeClaim != nil:
			claimName = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil && vol.Ephemeral.VolumeClaimTemplate != nil:
			claimName = pod.Name + "-" + vol.Name
			scName = vol.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName
		default:
			continue
		}
		pvc := s.vol.pvcs[pod.Namespace+"/"+claimName]
		volumeName := ""
		if pvc != nil {
			volumeName = pvc.Spec.VolumeName
			scName = pvc.Spec.StorageClassName
		} else if vol.Ephemeral == nil {
			return nil, nil, fmt.Sprintf("persistentvolumeclaim %q not found", claimName)
		}
		if volumeName != "" {
			pv := s.vol.pvs[volumeName]
			if pv == nil {
				return nil, nil, fmt.Sprintf("persistentvolume %q of claim %q not found", volumeName, claimName)
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil && len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) > 0 {
				r, err := NewRequirements(pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions...)
				if err != nil {
					return nil, nil, fmt.Sprintf("persistentvolume %q node affinity: %v", pv.Name, err)
				}
				reqs = reqs.Intersect(r)
			}
			driver := "kubernetes.io/other"
			if pv.Spec.CSI != nil {
				driver = pv.Spec.CSI.Driver
			}
			uses = append(uses, volumeUse{driver: driver, id: "pv/" + pv.Name})
			continue
		}
		if scName == nil || *scName == "" {
			return nil, nil, fmt.Sprintf("persistentvolumeclaim %q is unbound and has no storage class", claimName)
		}
		sc := s.vol.scs[*scName]
		if sc == nil {
			return nil, nil, fmt.Sprintf("storageclass %q of claim %q not found", *scName, claimName)
		}
		if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			return nil, nil, fmt.Sprintf("persistentvolumeclaim %q is unbound with Immediate binding", claimName)
		}
		if len(sc.AllowedTopologies) > 0 {
			for _, e := range sc.AllowedTopologies[0].MatchLabelExpressions {
				reqs = reqs.Intersect(Requirements{e.Key: In(e.Key, e.Values...)})
			}
		}
		uses = append(uses, volumeUse{driver: sc.Provisioner, id: "pvc/" + pod.Namespace + "/" + claimName})
	}
	return reqs, uses, ""
}

// volumesFit reports whether the node's per-driver attach limits leave room for the class's new volumes.
func (s *solver) volumesFit(n *candidate, c *class) bool {
	if len(n.volLimits) == 0 || len(c.volumes) == 0 {
		return true
	}
	extra := map[string]int{}
	for _, u := range c.volumes {
		if !n.volumes[u.id] {
			extra[u.driver]++
		}
	}
	for d, k := range extra {
		if lim, ok := n.volLimits[d]; ok && n.volCount[d]+k > lim {
			return false
		}
	}
	return true
}

// typeTakesVolumes reports whether a new node of type t takes the volumes n attaches plus those c adds (c may be
// nil), under the type's per-driver attach limits (InstanceType.VolumeLimits).
func typeTakesVolumes(t *itInfo, n *candidate, c *class) bool {
	if t.it == nil || len(t.it.VolumeLimits) == 0 {
		return true
	}
	var extra map[string]int
	if c != nil && len(c.volumes) > 0 {
		extra = map[string]int{}
		for _, u := range c.volumes {
			if !n.volumes[u.id] {
				extra[u.driver]++
			}
		}
	}
	for d, lim := range t.it.VolumeLimits {
		if n.volCount[d]+extra[d] > lim {
			return false
		}
	}
	return true
}
