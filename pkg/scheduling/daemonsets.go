package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// dsInfo is a DaemonSet's pod prepared for overhead computation.
type dsInfo struct {
	name        string
	req         Vec
	terms       []Requirements
	tolerations []corev1.Toleration
}

func (s *solver) prepareDaemonSets() {
	for _, ds := range s.snap.DaemonSets {
		if ds == nil {
			continue
		}
		pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		pod.Namespace = ds.Namespace
		terms, err := requiredTerms(pod)
		if err != nil {
			continue // a DaemonSet with a malformed selector schedules nowhere
		}
		s.daemonSets = append(s.daemonSets, &dsInfo{
			name:        ds.Namespace + "/" + ds.Name,
			req:         s.dims.MustFromList(PodRequests(pod)),
			terms:       terms,
			tolerations: pod.Spec.Tolerations,
		})
	}
	sort.Slice(s.daemonSets, func(i, j int) bool { return s.daemonSets[i].name < s.daemonSets[j].name })
}

// daemonSetOverhead sums the requests of the DaemonSets that would run on a node of the pool with these labels.
func (s *solver) daemonSetOverhead(p *poolInfo, typeLabels map[string]string) Vec {
	out := s.dims.Zero()
	for _, ds := range s.daemonSets {
		if untolerated(p.taints, ds.tolerations) != nil {
			continue
		}
		for _, term := range ds.terms {
			if dsTermMatches(p, term, typeLabels) {
				out.Add(ds.req)
				break
			}
		}
	}
	return out
}

func dsTermMatches(p *poolInfo, term Requirements, typeLabels map[string]string) bool {
	for k, r := range term {
		if v, ok := typeLabels[k]; ok {
			if !r.Has(v) {
				return false
			}
			continue
		}
		if pr, ok := p.reqs[k]; ok {
			if !pr.Intersect(r).HasValues() {
				return false
			}
			continue
		}
		if k == labelZone || k == labelCapacityType {
			continue // depends on the offering; count the DaemonSet to stay on the safe side
		}
		if !r.AllowAbsent {
			return false
		}
	}
	return true
}

// untolerated returns the first NoSchedule/NoExecute taint the tolerations do not cover.
func untolerated(taints []corev1.Taint, tolerations []corev1.Toleration) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for j := range tolerations {
			if ToleratesTaint(&tolerations[j], t) {
				ok = true
				break
			}
		}
		if !ok {
			return t
		}
	}
	return nil
}
